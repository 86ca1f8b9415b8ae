"""OpenID Connect: bearer JWTs signed by an identity provider, checked against its published keys.

A token is accepted when its signature verifies with a key of the JWKS (chosen by ``kid``), with
that key's own algorithm (never ``none``, never an HMAC algorithm: a published key is public, and
HS256 "signed" with it would be forgeable by anyone), and its ``iss``, ``aud``, ``exp`` (and
``nbf``, when present) are right, allowing :data:`LEEWAY` seconds of clock skew. Its ``sub`` is
the principal (``oidc:<sub>``); its roles and grants come from one claim (see
principals.rights_from_claim).
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

from catalog_api.server.auth.errors import AuthUnavailable, Unauthenticated
from catalog_api.server.auth.principals import Principal, rights_from_claim
from catalog_api.server.config import ConfigError

log = logging.getLogger(__name__)

#: Seconds of clock difference tolerated on ``exp``, ``nbf`` and ``iat``.
LEEWAY = 30
#: Seconds the keys fetched from an https JWKS URL are kept before they are fetched again (an
#: unknown ``kid`` fetches them at once, which is how a rotated key is picked up).
JWKS_LIFESPAN = 300
#: Algorithm families a key may be used with: asymmetric signatures only.
_ASYMMETRIC = ("RS", "PS", "ES", "EdDSA")


def _usable(key: PyJWK) -> bool:
    return (
        key.key_type != "oct"
        and key.algorithm_name.startswith(_ASYMMETRIC)
        and key.public_key_use in (None, "sig")
    )


class _KeyFile:
    """A JWKS file, read again when it changes (how keys are rotated without a restart)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._stamp = self._stat()
            self._keys = self._read()
        except (OSError, ValueError, jwt.PyJWTError) as e:
            raise ConfigError(f"STREAMCAT_OIDC_JWKS ({path}) cannot be used: {e}") from None

    def _stat(self) -> tuple[int, int]:
        stat = self.path.stat()
        return stat.st_mtime_ns, stat.st_size

    def _read(self) -> list[PyJWK]:
        keys = [k for k in PyJWKSet.from_dict(json.loads(self.path.read_text())) if _usable(k)]
        if not keys:
            raise ValueError("it holds no asymmetric signing key (RSA, EC or OKP)")
        return keys

    def keys(self) -> list[PyJWK]:
        """The usable keys of the file as it is now (as it was, if it no longer reads)."""
        with self._lock:
            try:
                stamp = self._stat()
                if stamp != self._stamp:
                    self._keys = self._read()
                    self._stamp = stamp
            except (OSError, ValueError, jwt.PyJWTError) as e:
                # Half-written during a rotation, or broken: keep the keys it had.
                log.error("cannot read the OIDC keys from %s, keeping the previous ones: %s", self.path, e)
            return self._keys


class OidcVerifier:
    """Turns a bearer JWT into a principal, or raises Unauthenticated saying why not."""

    def __init__(self, issuer: str, audience: str, jwks: str, claim: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.claim = claim
        self._client: PyJWKClient | None = None
        self._file: _KeyFile | None = None
        if jwks.startswith("https://"):
            self._client = PyJWKClient(jwks, cache_keys=True, lifespan=JWKS_LIFESPAN, timeout=10)
        else:
            self._file = _KeyFile(jwks)  # a file that does not load is an error at start-up

    def _key(self, token: str) -> PyJWK:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthenticated("the bearer token is not a JWT") from None
        kid = header.get("kid")
        if self._client is not None:
            try:
                key = self._client.get_signing_key(kid) if kid else self._only(self._client.get_signing_keys())
            except jwt.PyJWKClientConnectionError as e:
                log.warning("cannot fetch the OIDC keys: %s", e)
                raise AuthUnavailable("the identity provider's keys cannot be fetched; retry later") from None
            except jwt.PyJWKClientError:
                raise Unauthenticated("the token's signing key is not among the identity provider's keys") from None
        else:
            assert self._file is not None
            keys = self._file.keys()
            found = [k for k in keys if k.key_id == kid] if kid else [self._only(keys)]
            if not found:
                raise Unauthenticated("the token's signing key is not among the identity provider's keys")
            key = found[0]
        if not _usable(key):
            raise Unauthenticated("the token's key is not an asymmetric signing key")
        return key

    @staticmethod
    def _only(keys: list[PyJWK]) -> PyJWK:
        usable = [k for k in keys if _usable(k)]
        if len(usable) != 1:
            raise Unauthenticated("the token names no key (kid) and the identity provider has several")
        return usable[0]

    def claims(self, token: str) -> dict[str, Any]:
        """The verified claims of ``token``; Unauthenticated if any check fails."""
        key = self._key(token)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                # The key's algorithm only: a token naming another (none, HS256) is refused.
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise Unauthenticated("the token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise Unauthenticated("the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise Unauthenticated("the token is from another issuer") from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated("the token's signature does not verify") from None
        except jwt.PyJWTError as e:
            raise Unauthenticated(f"the token is not acceptable: {e}") from None
        return claims

    def principal(self, token: str) -> Principal:
        """The principal ``oidc:<sub>`` of ``token``, with the role and grants its claim gives."""
        claims = self.claims(token)
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise Unauthenticated("the token's sub is not a non-empty string")
        name = f"oidc:{subject}"
        role, grants, ignored = rights_from_claim(name, _claim(claims, self.claim))
        if ignored:
            log.warning("ignored entries of the %s claim of %s: %s", self.claim, name, ", ".join(ignored))
        return Principal(name, "oidc", role, grants)


def _claim(claims: dict[str, Any], path: str) -> object:
    # A dotted path reaches into nested objects (realm_access.roles), as some providers nest them.
    value: object = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
