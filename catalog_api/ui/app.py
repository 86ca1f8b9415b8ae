"""The UI's WSGI application: pages rendered from Jinja2 templates (autoescaped), its own static
files, the viewer of each request, CSRF checks and the security headers of every answer.

It is an application of its own, which the shell mounts at ``/ui`` inside the API's WSGI stack (so
requests get ids, metrics and the access log): the API's routes answer JSON and read credentials
from each request's ``Authorization`` header, the UI's answer HTML and read a session cookie.
"""

from __future__ import annotations

import datetime as dt
import logging
from urllib.parse import urlencode

from flask import Flask, Response, current_app, g, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response as WerkzeugResponse

from catalog_api.ui import routes
from catalog_api.ui.charts import duration
from catalog_api.ui.feed import CHANGE_TYPES
from catalog_api.ui.services import Services
from catalog_api.ui.session import SESSION_COOKIE, Sessions, check_csrf, csrf_token, send_csrf
from registry.errors import BadRequest, StreamcatError, Unauthorized

log = logging.getLogger(__name__)

#: Nothing from another origin, no inline script, no framing.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: Endpoints answered to anyone: signing in and out, and the static files.
OPEN = frozenset({"static", "ui.sign_in", "ui.sign_in_form", "ui.sign_out"})


def when(ms: int | None) -> str:
    """An epoch-millisecond time as ISO 8601 UTC (``datetime`` of a ``<time>``)."""
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _viewer(sessions: Sessions) -> WerkzeugResponse | None:
    if "\x00" in request.path or any("\x00" in v for v in request.args.values()):
        raise BadRequest("NUL character in the request path or query")
    if request.method == "POST":
        check_csrf()  # the sign-in form too: nobody signs a browser in from another site
    if request.endpoint in OPEN:
        return None
    if not sessions.required:
        g.viewer = sessions.anonymous()
        return None
    cookie = request.cookies.get(SESSION_COOKIE)
    viewer = sessions.resume(cookie) if cookie else None
    if viewer is None:
        if request.method != "GET":
            raise Unauthorized("sign in first: your session has ended")
        target = request.script_root + (request.full_path if request.query_string else request.path)
        return redirect(url_for("ui.sign_in_form") + "?" + urlencode({"next": target}))
    g.viewer = viewer
    return None


def _headers(response: WerkzeugResponse) -> WerkzeugResponse:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "same-origin"
    if request.endpoint != "static":
        response.headers["Cache-Control"] = "no-store"
    return send_csrf(response)


def _error_page(status: int, title: str, message: str) -> Response:
    sessions = current_app.extensions["streamcat.ui"][1]
    body = render_template("error.html", status=status, title=title, message=message, viewer=g.get("viewer"),
                           sessions=sessions)
    return Response(body, status=status, mimetype="text/html")


def create_ui(services: Services, sessions: Sessions) -> Flask:
    """The UI over ``services``, with viewers from ``sessions``."""
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.extensions["streamcat.ui"] = (services, sessions)
    app.jinja_env.autoescape = True
    app.jinja_env.filters["when"] = when
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.jinja_env.globals["duration"] = duration
    app.jinja_env.globals["change_types"] = CHANGE_TYPES
    app.before_request(lambda: _viewer(sessions))
    app.after_request(_headers)
    app.register_blueprint(routes.bp)

    @app.errorhandler(StreamcatError)
    def _domain(error: StreamcatError) -> Response:
        return _error_page(error.status, error.code, error.message)

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException) -> Response:
        return _error_page(error.code or 500, error.name, error.description or "")

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        log.exception("unhandled error in the UI", exc_info=error)
        return _error_page(500, "Internal error", "the server log has the details")

    return app
