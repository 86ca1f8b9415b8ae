"""The web UI's sign-in and sessions (catalog_api.ui.session.Sessions), over the API's principals.

A sign-in is checked as the API checks the same credentials (``Authenticator``: a user's password,
an API token, an OIDC JWT). The session cookie then names the principal without a key of the
server's own, so that any worker or replica can read it, and without holding the credential but for
a JWT's:

* a user's: ``u.<name>.<issued>.<mac>``, the mac an HMAC-SHA256 of name and issue time keyed by
  the user's stored password hash: it holds for ``SESSION_SECONDS`` and no longer once the
  password changes or the user is removed;
* a token's: ``t.<sha256 of the token>``, what the database looks tokens up by: it holds while the
  token does (expiry and revocation as for the API);
* an OIDC JWT's (with ``oidc`` enabled): ``o.<the JWT>``. A JWT is checked against the identity
  provider's keys, not the database, so the cookie keeps it and every page checks it again as the
  API does (signature, issuer, audience, expiry): the session ends when the JWT expires.

Each page then reads the principal's role and grants afresh, so a grant taken back shows at once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time

from catalog_api.server.auth import audit
from catalog_api.server.auth.authenticate import Authenticator
from catalog_api.server.auth.credentials import is_api_token, token_hash
from catalog_api.server.auth.errors import Unauthenticated
from catalog_api.server.auth.principals import ANONYMOUS, Principal
from catalog_api.server.auth.store import PrincipalStore
from catalog_api.ui.session import SESSION_SECONDS, SignInRefused
from registry.db import now_ms

#: The longest JWT a session keeps (a browser keeps cookies of up to 4,096 bytes, name included).
MAX_JWT_CHARS = 4000


def _mac(password_hash: str, name: str, issued: int) -> str:
    return hmac.new(password_hash.encode(), f"{name}|{issued}".encode(), hashlib.sha256).hexdigest()


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


class UiSessions:
    """Sign-in and sessions of the web UI for one application's authenticator and principals."""

    def __init__(self, authenticator: Authenticator, store: PrincipalStore) -> None:
        self.authenticator = authenticator
        self.store = store

    @property
    def required(self) -> bool:
        """Whether people must sign in (STREAMCAT_AUTH names a method)."""
        return self.authenticator.enabled

    @property
    def accepts_jwt(self) -> bool:
        """Whether the token may be an identity provider's JWT (``oidc`` is enabled)."""
        return self.authenticator.oidc is not None

    def anonymous(self) -> Principal:
        """Everyone, when the server asks nobody who they are."""
        return ANONYMOUS

    def sign_in(self, user: str, password: str, token: str) -> tuple[Principal, str]:
        """The principal and session cookie of a user and password, of an API token, or (with ``oidc``
        enabled) of an identity provider's JWT given as the token."""
        token = token.strip()
        if token:
            if not is_api_token(token) and not self.accepts_jwt:
                raise SignInRefused("that is not an API token of this server (they start with sct_)")
            if not is_api_token(token) and len(token) > MAX_JWT_CHARS:
                raise SignInRefused(f"the token is longer than the {MAX_JWT_CHARS:,} characters a session keeps")
            header = f"Bearer {token}"
        else:
            header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        try:
            principal = self.authenticator.authenticate(header)
        except Unauthenticated as e:
            raise SignInRefused(e.message) from None
        if principal.kind == "token":
            return principal, f"t.{token_hash(token)}"
        if principal.kind == "oidc":
            return principal, f"o.{token}"
        stored = self.store.user(principal.name)
        if stored is None:  # removed in between
            raise SignInRefused("wrong user name or password")
        issued = int(time.time())
        return principal, f"u.{_b64(stored.name)}.{issued}.{_mac(stored.password_hash, stored.name, issued)}"

    def resume(self, cookie: str) -> Principal | None:
        """The principal a session cookie still names, with its grants as they are now."""
        kind, _, rest = cookie.partition(".")
        if kind == "t" and len(rest) == 64:
            return self.store.token(rest, now_ms())
        if kind == "o" and self.accepts_jwt and rest and not is_api_token(rest):
            try:
                return self.authenticator.authenticate(f"Bearer {rest}")
            except Unauthenticated:  # expired, or the provider's keys no longer sign it
                return None
        if kind != "u":
            return None
        encoded, _, rest = rest.partition(".")
        issued_text, _, mac = rest.partition(".")
        try:
            name, issued = _unb64(encoded), int(issued_text)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return None
        if not 0 <= time.time() - issued <= SESSION_SECONDS:
            return None
        stored = self.store.user(name)
        if stored is None or not hmac.compare_digest(_mac(stored.password_hash, name, issued), mac):
            return None
        return Principal(stored.name, "user", stored.role, self.store.grants_of(stored.name))

    def audit(self, viewer: str, action: str, resource: str, outcome: int, method: str, path: str) -> None:
        """One line of the API's audit log."""
        audit.record(viewer, action, resource, outcome, method, path)
