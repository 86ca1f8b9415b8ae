"""Secrets as the database keeps them: argon2 hashes of passwords, SHA-256 of API tokens.

Only hashes are stored. A password is something a person chose, so it gets a salted, slow,
memory-hard hash (argon2id, argon2-cffi's defaults: RFC 9106's low-memory profile). An API token
is 256 random bits the server made, so no guessing can find it and a fast SHA-256 is the standard
way to store it: a request then costs one indexed lookup, not an argon2 run.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cachetools import TTLCache

#: Every API token starts with this, so that secret scanners and people can tell what it is.
TOKEN_PREFIX = "sct_"
#: Random bytes in a token (256 bits), before base64url.
TOKEN_BYTES = 32

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    """The argon2id hash (with its salt and parameters) to store for ``password``."""
    return _hasher.hash(password)


def new_token() -> str:
    """A fresh API token: the prefix and 256 random bits, base64url."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of ``token``: what the database stores and looks tokens up by."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def is_api_token(credential: str) -> bool:
    """Whether a bearer credential has the form of this server's API tokens (not a JWT)."""
    return credential.startswith(TOKEN_PREFIX)


class PasswordChecker:
    """Verifies passwords against stored argon2 hashes, remembering recent successes.

    An argon2 verification costs tens of milliseconds and 64 MiB on purpose; a client sending
    HTTP Basic on every request would pay that every time. So a successful verification is
    remembered in this process's memory for ``ttl`` seconds, keyed by an HMAC (with a key made at
    start and never stored) of the stored hash and the password: the password itself is not kept,
    and a changed password or a re-created user has a new stored hash, so old entries no longer
    match. Failures are never remembered, so each wrong guess costs the full argon2 run.
    """

    def __init__(self, ttl: float = 300, size: int = 4096) -> None:
        self._key = secrets.token_bytes(32)
        self._known: TTLCache[bytes, bool] = TTLCache(maxsize=size, ttl=ttl)
        self._lock = threading.Lock()
        # Checked when the user does not exist, so that the answer takes as long either way and
        # does not tell which user names exist.
        self._decoy = hash_password(secrets.token_urlsafe(16))

    def _entry(self, stored: str, password: str) -> bytes:
        return hmac.digest(self._key, stored.encode() + b"\0" + password.encode("utf-8"), "sha256")

    def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches the stored hash (None: no such user, always False)."""
        if stored is None:
            self._verify(self._decoy, password)
            return False
        entry = self._entry(stored, password)
        with self._lock:
            if self._known.get(entry):
                return True
        if not self._verify(stored, password):
            return False
        with self._lock:
            self._known[entry] = True
        return True

    @staticmethod
    def _verify(stored: str, password: str) -> bool:
        try:
            return _hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False
