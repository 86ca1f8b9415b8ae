"""The errors of authentication and authorization, in the API's usual JSON shape.

401 and 403 themselves are ``registry.errors.Unauthorized`` and ``registry.errors.Forbidden``, where
the clients find them by code too; this module adds what only the server raises.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.errors import Conflict, NotFound, StreamcatError, Unauthorized


class Unauthenticated(Unauthorized):
    """Unauthorized (401) as the server raises it: no credentials, or credentials that identify
    nobody (wrong, expired, revoked), with the challenges of the enabled methods in ``headers``
    (``WWW-Authenticate``), which the application's error handler adds to the answer."""

    def __init__(self, message: str, challenges: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.headers = [("WWW-Authenticate", challenge) for challenge in challenges]


class AuthUnavailable(StreamcatError):
    """Credentials cannot be checked right now (the identity provider's keys cannot be fetched)."""

    status = 503
    code = "AuthUnavailable"


class PrincipalExists(Conflict):
    """A user or token of that name exists already (names are shared by users and tokens)."""

    code = "PrincipalExists"


class PrincipalNotFound(NotFound):
    """No user or token of that name."""

    code = "PrincipalNotFound"


class GrantNotFound(NotFound):
    """No such grant."""

    code = "GrantNotFound"
