"""Lookout's sign-in sends the S256 challenge of its PKCE verifier (RFC 7636), checked
against Authlib's (a provider-side implementation)."""

from __future__ import annotations

from authlib.oauth2.rfc7636 import create_s256_code_challenge

from armada.auth.relying_party import Pkce


def test_challenge_is_the_s256_of_the_verifier() -> None:
    pkce = Pkce.new()
    assert pkce.challenge == create_s256_code_challenge(pkce.verifier)


def test_every_sign_in_has_its_own_verifier() -> None:
    first, second = Pkce.new(), Pkce.new()
    assert first.verifier != second.verifier and 43 <= len(first.verifier) <= 128  # RFC 7636, 4.1
