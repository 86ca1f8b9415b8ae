"""Immutable answers, answered again without going through Flask.

What a schema id or an encoding id of a group stands for never changes while the group lives;
the registry's views keep the JSON of such answers in the registry's answer cache
(``registry.api.context.immutable_answer``). Once the application has answered a GET of one
(200), this layer, placed between the request-id and metrics wrapper (observability) and Flask,
answers the same request (same path and query string) again from memory. It does what the
application would do for it:

- it authenticates the caller (``Authorization``) with the guard's authenticator and holds the
  caller to the permission the route declared, on the resource the path names, as the guard
  checked them when the application answered: every request is checked, none is trusted for
  having been answered before;
- it sends the status, headers and body the application sent (the request id, metrics and the
  access log are the observability wrapper's, around this layer, as for every request);
- it answers only while the registry still holds the very answer it replays: deleting the group,
  or a version for good, forgets it at once in this process (and the cache's time to live bounds
  how long other processes may keep it), and this layer then hands the request to the
  application.

Everything else goes to the application as before: other requests, callers who fail to
authenticate or lack the permission (the application answers 401 or 403 and writes the audit
line), and any failure on the way (the application meets it again and answers as always).
A GET of a read-only route writes no audit line when it succeeds, so answering it here leaves
the audit log as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import Flask

from catalog_api.server.auth.guard import CHECKED
from registry.api.context import IMMUTABLE_ANSWER
from registry.api.operations import Serialized
from registry.permissions import Permission, Resource

if TYPE_CHECKING:
    from catalog_api.server.auth.guard import Guard
    from registry.service import AnswerCache

#: Environ key: the route and path of a request this layer answered (for the metrics and access log).
ANSWERED = "streamcat.answered"
#: How many requests, and how many bytes of answers, this layer remembers per process (beyond
#: either it starts afresh).
MAX_REMEMBERED = 8192
MAX_REMEMBERED_BYTES = 64 * 1024 * 1024

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class _Remembered:
    """One request answered by the application, and what is needed to answer it again."""

    key: tuple[object, ...]  # of the answer in the registry's answer cache
    answer: Serialized  # the object the cache held: while it still does, the answer stands
    permission: Permission
    resource: Resource
    route: str
    path: str
    status: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


class ImmutableAnswers:
    """The WSGI layer described in the module's documentation, around ``app`` (Flask's wsgi_app)."""

    def __init__(
        self, app: WsgiApp, flask_app: Flask, size: int = MAX_REMEMBERED, budget_bytes: int = MAX_REMEMBERED_BYTES
    ) -> None:
        self.app = app
        self.flask_app = flask_app
        self.size = size
        self.budget_bytes = budget_bytes
        self._remembered: dict[tuple[str, str, str], _Remembered] = {}
        self._bytes = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "GET":
            return self.app(environ, start_response)
        where = (environ.get("SCRIPT_NAME", ""), environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
        known = self._remembered.get(where)
        if known is not None and self._may_answer(where, known, environ):
            environ[ANSWERED] = (known.route, known.path)
            start_response(known.status, list(known.headers))
            return [known.body]
        return self._remembering(where, environ, start_response)

    def _answers(self) -> AnswerCache:
        answers: AnswerCache = self.flask_app.extensions["streamcat"].registry.answers
        return answers

    def _guard(self) -> Guard:
        guard: Guard = self.flask_app.extensions["streamcat.auth"]
        return guard

    def _may_answer(self, where: tuple[str, str, str], known: _Remembered, environ: dict[str, Any]) -> bool:
        if self._answers().get(known.key) is not known.answer:
            # Forgotten (the group was deleted) or expired: the application looks again.
            self._remembered.pop(where, None)
            return False
        try:
            principal = self._guard().authenticator.authenticate(environ.get("HTTP_AUTHORIZATION"))
        except Exception:
            return False  # refused or failed: the application answers (401 and its audit line) as always
        return principal.allows(known.permission, known.resource)

    def _remembering(
        self, where: tuple[str, str, str], environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        sent: list[tuple[str, tuple[tuple[str, str], ...], str, str]] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            # Flask's request (which matched the route) is in the environ until the request ends.
            made = environ.get("werkzeug.request")
            if made is not None and made.url_rule is not None and status.startswith("200 "):
                # A copy, before the wrappers outside add their headers (the request id).
                sent.append((status, tuple(headers), made.url_rule.rule, made.path))
            return start_response(status, headers, exc_info)

        body = self.app(environ, start)
        answered = environ.get(IMMUTABLE_ANSWER)
        checked = environ.get(CHECKED)
        if answered is None or checked is None or not sent:
            return body
        try:
            content = b"".join(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        key, answer = answered
        permission, resource = checked
        if content == answer.body:
            content = answer.body  # one copy of the bytes, shared with the registry's cache
        if len(self._remembered) >= self.size or self._bytes + len(content) > self.budget_bytes:
            self._remembered.clear()
            self._bytes = 0
        self._bytes += len(content)
        status, headers, route, path = sent[0]
        self._remembered[where] = _Remembered(key, answer, permission, resource, route, path, status, headers, content)
        return [content]


def init_app(app: Flask) -> ImmutableAnswers:
    """Put the layer around ``app``'s WSGI callable (before the observability wrapper goes around it)."""
    layer = ImmutableAnswers(app.wsgi_app, app)
    app.wsgi_app = layer  # type: ignore[method-assign]
    return layer
