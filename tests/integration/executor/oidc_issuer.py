"""A minimal OpenID Connect issuer for kubeconfig ``auth-provider: oidc`` tests: discovery
and the refresh-token grant, issuing JWTs whose ``exp`` the test chooses."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp.web

Web = aiohttp.web


def id_token(subject: str, expires_at: float) -> str:
    """An (unsigned) JWT: kubeconfig clients read only its ``exp``; the API server checks it."""

    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'exp': int(expires_at)})}.sig"


@dataclass
class Issuer:
    url: str = ""
    #: Lifetime of the tokens it issues.
    token_seconds: float = 3600.0
    #: Every refresh grant: (client id from Basic auth, refresh token presented).
    grants: list[tuple[str, str]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)

    async def discovery(self, _: Web.Request) -> Web.Response:
        return Web.json_response({"issuer": self.url, "token_endpoint": f"{self.url}/token"})

    async def token(self, request: Web.Request) -> Web.Response:
        form = await request.post()
        basic = request.headers.get("Authorization", "").removeprefix("Basic ")
        client_id = base64.b64decode(basic).decode().split(":")[0] if basic else str(form.get("client_id"))
        if form.get("grant_type") != "refresh_token":
            return Web.json_response({"error": "unsupported_grant_type"}, status=400)
        self.grants.append((client_id, str(form.get("refresh_token"))))
        n = len(self.grants)
        self.issued.append(id_token(f"user-{n}", time.time() + self.token_seconds))
        return Web.json_response({"id_token": self.issued[-1], "refresh_token": f"refresh-{n}"})


@asynccontextmanager
async def oidc_issuer() -> AsyncIterator[Issuer]:
    issuer = Issuer()
    app = Web.Application()
    app.router.add_get("/.well-known/openid-configuration", issuer.discovery)
    app.router.add_post("/token", issuer.token)
    runner = Web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = Web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    issuer.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield issuer
    finally:
        await runner.cleanup()
