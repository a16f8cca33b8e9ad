"""A locally generated OIDC signing key for tests: a JWKS file, and tokens it signs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from armada.auth.settings import OidcSettings

ISSUER = "https://issuer.test"
AUDIENCE = "armada"


class SigningKey:
    """An RSA key pair with a key id; ``jwks()`` publishes the public half."""

    def __init__(self, kid: str = "test-key") -> None:
        self.kid = kid
        self._private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self._private.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()))
        return path

    def token(self, subject: str, groups: list[str] | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": subject,
            "iat": now,
            "exp": now + 300,
            "groups": groups or [],
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, self._private, algorithm="RS256", headers={"kid": self.kid})


def oidc_settings(jwks_file: Path, **overrides: Any) -> OidcSettings:
    return OidcSettings(issuer=ISSUER, audience=AUDIENCE, jwks_file=str(jwks_file), **overrides)
