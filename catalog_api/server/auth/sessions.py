"""The web UI's sign-in and sessions (catalog_api.ui.session.Sessions), over the API's principals.

A sign-in is checked as the API checks the same credentials (``Authenticator``: a user's password,
an API token). The session cookie then names the principal without holding the credential and
without a key of the server's own, so that any worker or replica can read it:

* a user's: ``u.<name>.<issued>.<mac>``, the mac an HMAC-SHA256 of name and issue time keyed by
  the user's stored password hash: it holds for ``SESSION_SECONDS`` and no longer once the
  password changes or the user is removed;
* a token's: ``t.<sha256 of the token>``, what the database looks tokens up by: it holds while the
  token does (expiry and revocation as for the API).

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

    def anonymous(self) -> Principal:
        """Everyone, when the server asks nobody who they are."""
        return ANONYMOUS

    def sign_in(self, user: str, password: str, token: str) -> tuple[Principal, str]:
        """The principal and session cookie of a user and password, or of an API token."""
        token = token.strip()
        if token:
            if not is_api_token(token):
                raise SignInRefused("that is not an API token of this server (they start with sct_)")
            header = f"Bearer {token}"
        else:
            header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        try:
            principal = self.authenticator.authenticate(header)
        except Unauthenticated as e:
            raise SignInRefused(e.message) from None
        if principal.kind == "token":
            return principal, f"t.{token_hash(token)}"
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
