"""Lookout as an OpenID Connect relying party: the authorization code flow with PKCE.

The issuer's endpoints come from its discovery document (read once). The browser is sent
to the authorization endpoint with a one-time ``state``, ``nonce`` and PKCE challenge
(S256); the code it brings back is exchanged, server to server, for tokens. The ID token
is verified exactly as a bearer token is (:class:`~armada.auth.oidc.OidcVerifier`, with
the Lookout client id as audience) and must carry the nonce, so a code or token minted
for another login cannot be slipped in. Only the ID token's claims make the identity: the
access token is never used by the server.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any, NamedTuple
from urllib.parse import urlencode

import httpx
import msgspec

from armada.auth.identity import Identity
from armada.auth.oidc import InvalidToken, OidcVerifier
from armada.auth.settings import LookoutSignIn, OidcSettings

#: Seconds one call to the issuer may take.
PROVIDER_TIMEOUT = 10.0


class SignInFailed(Exception):
    """The issuer refused, or answered with something that does not verify; logged, not shown."""


class Endpoints(msgspec.Struct, frozen=True):
    authorization_endpoint: str
    token_endpoint: str
    end_session_endpoint: str = ""


class Tokens(NamedTuple):
    identity: Identity
    id_token: str
    refresh_token: str
    #: When the tokens expire (seconds since the epoch): a request after this refreshes them.
    expires_at: float


class Pkce(NamedTuple):
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        return cls.of(secrets.token_urlsafe(48))

    @classmethod
    def of(cls, verifier: str) -> Pkce:
        """The S256 challenge of ``verifier`` (RFC 7636, section 4.2)."""
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


class RelyingParty:
    def __init__(self, oidc: OidcSettings, sign_in: LookoutSignIn, *, local_names: frozenset[str]) -> None:
        self.settings = sign_in
        self._issuer = oidc.issuer.rstrip("/")
        id_tokens = msgspec.structs.replace(oidc, audience=sign_in.client_id)
        self._verifier = OidcVerifier(id_tokens, local_names=local_names)
        self._endpoints: Endpoints | None = None

    async def endpoints(self) -> Endpoints:
        if self._endpoints is None:
            url = f"{self._issuer}/.well-known/openid-configuration"
            try:
                async with httpx.AsyncClient(timeout=PROVIDER_TIMEOUT) as http:
                    response = await http.get(url)
                response.raise_for_status()
                self._endpoints = msgspec.json.decode(response.content, type=Endpoints)
            except (httpx.HTTPError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise SignInFailed(f"discovery at {url}: {exc}") from exc
        return self._endpoints

    async def authorization_url(self, redirect_uri: str, state: str, nonce: str, pkce: Pkce) -> str:
        query = {
            "response_type": "code",
            "client_id": self.settings.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.settings.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": pkce.challenge,
            "code_challenge_method": "S256",
        }
        return f"{(await self.endpoints()).authorization_endpoint}?{urlencode(query)}"

    async def exchange(self, code: str, redirect_uri: str, verifier: str, nonce: str) -> Tokens:
        """The tokens for an authorization ``code`` (its PKCE ``verifier``, its login's ``nonce``)."""
        grant = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        return await self._tokens({**grant, "code_verifier": verifier}, nonce=nonce, previous=None)

    async def refresh(self, tokens: Tokens) -> Tokens:
        """New tokens for a session's refresh token (an ID token is optional in the answer)."""
        if not tokens.refresh_token:
            raise SignInFailed("no refresh token: the issuer must be asked for offline_access")
        grant = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        return await self._tokens(grant, nonce=None, previous=tokens)

    async def end_session_url(self, id_token: str, after: str) -> str:
        """Where the browser ends its session at the issuer too (empty: the issuer has no such endpoint)."""
        endpoint = (await self.endpoints()).end_session_endpoint
        if not endpoint:
            return ""
        query = {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": after,
            "client_id": self.settings.client_id,
        }
        return f"{endpoint}?{urlencode(query)}"

    async def _tokens(self, grant: dict[str, str], *, nonce: str | None, previous: Tokens | None) -> Tokens:
        endpoint = (await self.endpoints()).token_endpoint
        form = {**grant, "client_id": self.settings.client_id}
        secret = self.settings.client_secret
        auth = httpx.BasicAuth(self.settings.client_id, secret) if secret else httpx.USE_CLIENT_DEFAULT
        try:
            async with httpx.AsyncClient(timeout=PROVIDER_TIMEOUT) as http:
                response = await http.post(endpoint, data=form, auth=auth)
            response.raise_for_status()
            answer: dict[str, Any] = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SignInFailed(f"token endpoint: {exc}") from exc
        new_id_token = answer.get("id_token")
        if isinstance(new_id_token, str) and new_id_token:
            identity, id_token, expiry = await self._verified(new_id_token, nonce)
        elif previous is not None:  # a refresh may answer without an ID token: the user is unchanged
            identity, id_token, expiry = previous.identity, previous.id_token, previous.expires_at
        else:
            raise SignInFailed("the token endpoint sent no ID token")
        lifetime = answer.get("expires_in")
        if isinstance(lifetime, int | float):
            expiry = time.time() + float(lifetime)
        refresh_token = answer.get("refresh_token") or (previous.refresh_token if previous else "")
        return Tokens(identity, id_token, str(refresh_token), expiry)

    async def _verified(self, id_token: str, nonce: str | None) -> tuple[Identity, str, float]:
        try:
            claims = await self._verifier.claims(id_token)
            identity = self._verifier.identity(claims)
        except InvalidToken as exc:
            raise SignInFailed("the ID token does not verify") from exc
        if nonce is not None and not secrets.compare_digest(str(claims.get("nonce", "")), nonce):
            raise SignInFailed("the ID token's nonce is not this sign-in's")
        return identity, id_token, float(claims["exp"])
