"""Password and token hashes: what the configuration stores instead of secrets.

Passwords use scrypt (memory-hard, stdlib) with a random salt:
``scrypt:<log2 n>:<r>:<p>:<salt>:<hash>`` (base64). Bearer tokens are long random strings,
so a SHA-256 digest is enough and keeps lookups cheap: ``sha256:<hex>``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SCRYPT_LOG2_N = 14
SCRYPT_R = 8
SCRYPT_P = 1
_KEY_BYTES = 32


class BadHash(ValueError):
    """A configured hash is not in a format this module writes."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def _scrypt(password: str, salt: bytes, log2_n: int, r: int, p: int) -> bytes:
    n = 1 << log2_n
    return hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, maxmem=2 * 128 * n * r * p, dklen=_KEY_BYTES
    )


def hash_password(password: str, *, log2_n: int = SCRYPT_LOG2_N) -> str:
    salt = secrets.token_bytes(16)
    key = _scrypt(password, salt, log2_n, SCRYPT_R, SCRYPT_P)
    return f"scrypt:{log2_n}:{SCRYPT_R}:{SCRYPT_P}:{_b64(salt)}:{_b64(key)}"


def check_password_hash(encoded: str) -> None:
    """Raise :class:`BadHash` unless ``encoded`` is a password hash (for configuration checks)."""
    _parse_password_hash(encoded)


def _parse_password_hash(encoded: str) -> tuple[bytes, int, int, int, bytes]:
    parts = encoded.split(":")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise BadHash("expected scrypt:<log2 n>:<r>:<p>:<salt>:<hash> (see `armada auth hash-password`)")
    try:
        log2_n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, key = _unb64(parts[4]), _unb64(parts[5])
    except ValueError as exc:
        raise BadHash(f"malformed scrypt hash: {exc}") from exc
    if not (1 <= log2_n <= 20 and 1 <= r <= 32 and 1 <= p <= 16 and salt and key):
        raise BadHash("scrypt parameters out of range")
    return salt, log2_n, r, p, key


def verify_password(password: str, encoded: str) -> bool:
    """Whether ``password`` matches ``encoded`` (constant-time comparison)."""
    salt, log2_n, r, p, key = _parse_password_hash(encoded)
    return hmac.compare_digest(_scrypt(password, salt, log2_n, r, p), key)


def hash_token(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def check_token_hash(encoded: str) -> None:
    prefix, _, digest = encoded.partition(":")
    if prefix != "sha256" or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise BadHash("expected sha256:<64 hex digits> (see `armada auth hash-token`)")


def new_token() -> str:
    """A fresh random bearer token (256 bits)."""
    return secrets.token_urlsafe(32)
