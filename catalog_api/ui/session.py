"""Who is looking: the UI's session cookie, and the CSRF token of every form that changes something.

The application shell decides who a sign-in names and whether a session cookie still names them
(:class:`Sessions`, with the API's principals, grants and audit log); this module keeps the cookies.
A CSRF token is a random value kept in its own cookie (HttpOnly, SameSite=Strict) and repeated in
each form; a POST whose form does not repeat it is refused with 403, never redirected.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Protocol

from flask import Request, g, request
from werkzeug.wrappers import Response

from registry.errors import Forbidden
from registry.permissions import Access

#: The cookie that holds the session (what :meth:`Sessions.sign_in` returned).
SESSION_COOKIE = "streamcat_ui_session"
#: The cookie that holds the CSRF token.
CSRF_COOKIE = "streamcat_ui_csrf"
#: The form field that repeats it.
CSRF_FIELD = "csrf_token"
#: How long a session cookie is kept by the browser, in seconds (the shell decides how long it holds).
SESSION_SECONDS = 12 * 3600


class SignInRefused(Exception):
    """The user name and password, or the token, name nobody (the message says so, without saying which)."""


class Viewer(Access, Protocol):
    """The principal of a page: a user, a token, or anonymous when the server asks nobody."""

    @property
    def name(self) -> str:
        """What the page calls them."""
        ...


class Sessions(Protocol):
    """Sign-in and sessions over the API's principals (the shell implements it)."""

    @property
    def required(self) -> bool:
        """Whether people must sign in (STREAMCAT_AUTH names a method)."""
        ...

    @property
    def accepts_jwt(self) -> bool:
        """Whether the token field also takes an identity provider's JWT (STREAMCAT_AUTH names oidc)."""
        ...

    def anonymous(self) -> Viewer:
        """The viewer when nobody must sign in."""
        ...

    def sign_in(self, user: str, password: str, token: str) -> tuple[Viewer, str]:
        """The viewer a user and password, or a token (an API token, or a JWT when ``accepts_jwt``), name,
        and the session cookie's value;
        SignInRefused if they name nobody."""
        ...

    def resume(self, cookie: str) -> Viewer | None:
        """The viewer a session cookie still names (None: expired, revoked, changed password, forged)."""
        ...

    def audit(self, viewer: str, action: str, resource: str, outcome: int, method: str, path: str) -> None:
        """Write the audit line of an action taken through the UI."""
        ...


def _cookie_path(req: Request) -> str:
    return (req.script_root or "") + "/"


def set_cookie(response: Response, name: str, value: str, max_age: int | None = None) -> None:
    """Set one of the UI's cookies: HttpOnly, SameSite=Strict, Secure over HTTPS, for the UI's path."""
    response.set_cookie(
        name, value, max_age=max_age, path=_cookie_path(request), httponly=True, samesite="Strict",
        secure=request.is_secure,
    )


def clear_cookie(response: Response, name: str) -> None:
    """Forget one of the UI's cookies."""
    response.delete_cookie(name, path=_cookie_path(request), httponly=True, samesite="Strict", secure=request.is_secure)


def csrf_token() -> str:
    """The CSRF token of this browser (made now, and sent with the answer, when it has none)."""
    token = request.cookies.get(CSRF_COOKIE) or g.get("new_csrf")
    if not token:
        token = g.new_csrf = secrets.token_urlsafe(32)
    return token


def send_csrf(response: Response) -> Response:
    """Send the CSRF cookie made while answering, if one was."""
    made = g.get("new_csrf")
    if made:
        set_cookie(response, CSRF_COOKIE, made)
    return response


def check_csrf() -> None:
    """Forbidden (403) unless the form repeats the browser's CSRF token."""
    kept = request.cookies.get(CSRF_COOKIE, "")
    sent = request.form.get(CSRF_FIELD, "")
    if not kept or not sent or not hmac.compare_digest(kept.encode(), sent.encode()):
        raise Forbidden("the form's CSRF token is missing or wrong: reload the page and send it again")
