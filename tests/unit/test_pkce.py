"""Lookout's sign-in sends the S256 challenge of its PKCE verifier (RFC 7636)."""

from __future__ import annotations

from armada.auth.relying_party import Pkce


def test_challenge_is_rfc_7636s_example() -> None:
    pkce = Pkce.of("dBjftJeZ4CVP-mJ92IR7UcSlmjw2U6D3V5jBThaqwqo")  # RFC 7636, appendix B
    assert pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_every_sign_in_has_its_own_verifier() -> None:
    first, second = Pkce.new(), Pkce.new()
    assert first.verifier != second.verifier and len(first.verifier) >= 43  # RFC 7636: 43..128
