"""Who is calling: the ``Authorization`` header, read by the enabled methods.

``basic`` enables the principals kept in the database: users, with HTTP Basic
(``Authorization: Basic base64(name:password)``), and API tokens, with
``Authorization: Bearer sct_...``. ``oidc`` enables ``Authorization: Bearer <JWT>``. Credentials
that are present but wrong are refused, never taken as anonymous.
"""

from __future__ import annotations

import base64
import binascii

from catalog_api.server.auth.credentials import PasswordChecker, is_api_token, token_hash
from catalog_api.server.auth.errors import Unauthenticated
from catalog_api.server.auth.oidc import OidcVerifier
from catalog_api.server.auth.principals import ANONYMOUS, Principal
from catalog_api.server.auth.store import PrincipalStore
from catalog_api.server.config import Settings
from registry.db import now_ms

REALM = "streamcat"


class Authenticator:
    """Authenticates requests by the methods STREAMCAT_AUTH enables (none: everyone is ANONYMOUS)."""

    def __init__(self, settings: Settings, store: PrincipalStore) -> None:
        self.methods = frozenset(settings.auth) - {"none"}
        self.store = store
        self.passwords = PasswordChecker()
        self.oidc = (
            OidcVerifier(settings.oidc_issuer, settings.oidc_audience, settings.oidc_jwks, settings.oidc_claim)
            if "oidc" in self.methods
            else None
        )

    @property
    def enabled(self) -> bool:
        """Whether requests must carry credentials."""
        return bool(self.methods)

    def challenges(self, error: str | None = None) -> list[str]:
        """The ``WWW-Authenticate`` challenges of the enabled methods (RFC 7617, RFC 6750)."""
        found = []
        if "basic" in self.methods:
            found.append(f'Basic realm="{REALM}", charset="UTF-8"')
        bearer = f'Bearer realm="{REALM}"' + (f', error="{error}"' if error else "")
        if self.methods:
            found.append(bearer)
        return found

    def _refuse(self, message: str, error: str | None = "invalid_token") -> Unauthenticated:
        return Unauthenticated(message, self.challenges(error))

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal the ``Authorization`` header names; Unauthenticated if it names nobody."""
        if not self.methods:
            return ANONYMOUS
        if not authorization:
            raise self._refuse("this server needs credentials (see WWW-Authenticate)", error=None)
        scheme, _, credential = authorization.strip().partition(" ")
        scheme = scheme.lower()
        credential = credential.strip()
        if scheme == "basic" and "basic" in self.methods:
            return self._basic(credential)
        if scheme == "bearer" and credential:
            if is_api_token(credential) and "basic" in self.methods:
                return self._token(credential)
            if self.oidc is not None and not is_api_token(credential):
                try:
                    principal = self.oidc.principal(credential)
                except Unauthenticated as e:
                    raise self._refuse(e.message) from None
                # Grants stored for an OIDC subject apply beside those its token carries.
                stored = self.store.grants_of(principal.name)
                return Principal(principal.name, "oidc", principal.role, principal.grants + stored)
            raise self._refuse("this kind of bearer token is not accepted here")
        raise self._refuse(f"the {scheme or 'empty'} authorization scheme is not accepted here", error=None)

    def _basic(self, credential: str) -> Principal:
        try:
            decoded = base64.b64decode(credential, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise self._refuse("malformed Basic credentials", error=None) from None
        name, colon, password = decoded.partition(":")
        if not colon:
            raise self._refuse("malformed Basic credentials", error=None)
        stored = self.store.user(name)
        if not self.passwords.verify(stored.password_hash if stored else None, password) or stored is None:
            raise self._refuse("wrong user name or password", error=None)
        return Principal(stored.name, "user", stored.role, self.store.grants_of(stored.name))

    def _token(self, token: str) -> Principal:
        principal = self.store.token(token_hash(token), now_ms())
        if principal is None:
            raise self._refuse("unknown, revoked or expired API token")
        return principal
