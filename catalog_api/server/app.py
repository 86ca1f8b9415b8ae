"""The application factory: one Flask WSGI app serving the registry and the catalog."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, jsonify, request
from sqlalchemy.exc import DBAPIError, OperationalError
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from catalog_api.api import routes as catalog_routes
from catalog_api.iceberg import api as iceberg_api
from catalog_api.materialized import api as materialized_api
from catalog_api.server import answers, meta, observability
from catalog_api.server.auth import api as admin_api
from catalog_api.server.auth import guard
from catalog_api.server.auth.authenticate import Authenticator
from catalog_api.server.auth.sessions import UiSessions
from catalog_api.server.config import Settings
from catalog_api.server.extensions import Streamcat
from catalog_api.ui.app import create_ui
from catalog_api.ui.services import Services
from catalog_api.views import api as views_api
from registry.api import routes as registry_routes
from registry.confluent import routes as confluent_routes
from registry.db import rolled_back, unavailable
from registry.errors import BadRequest, StreamcatError

log = logging.getLogger(__name__)


def _error(status: int, code: str, message: str, extra: dict[str, Any] | None = None) -> Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message, **(extra or {})}}
    response = jsonify(body)
    response.status_code = status
    return response


def _busy(error: DBAPIError) -> bool:
    # PostgreSQL rolled the whole transaction back, or SQLite's write lock outlasted the busy timeout.
    return rolled_back(error) or (isinstance(error, OperationalError) and "database is locked" in str(error.orig))


def _retry_later(code: str, message: str) -> Response:
    response = _error(503, code, message)
    response.headers["Retry-After"] = "1"
    return response


def _register_error_handlers(app: Flask) -> None:
    @app.errorhandler(StreamcatError)
    def _domain(error: StreamcatError) -> Response:
        response = jsonify(error.to_json())
        response.status_code = error.status
        # Some errors answer with headers too: a 401's WWW-Authenticate challenges.
        response.headers.extend(getattr(error, "headers", ()))
        return response

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException) -> Response:
        code = (error.name or "Error").replace(" ", "")
        status = error.code or 500
        if status == 413:
            limit = app.config.get("MAX_CONTENT_LENGTH")
            return _error(413, "PayloadTooLarge", f"the request body exceeds the limit of {limit} bytes")
        return _error(status, code, error.description or code)

    @app.errorhandler(DBAPIError)
    def _database_error(error: DBAPIError) -> Response:
        # SQLite's write lock held past the busy timeout, PostgreSQL's serialization failures
        # and deadlocks: nothing was written, and the same request may succeed if sent again.
        if _busy(error):
            log.warning("database busy: %s", error.orig)
            return _retry_later("DatabaseBusy", "the database is busy; retry the request")
        # PostgreSQL stopped or restarting: the pool reconnects once it is back (pre-ping), no restart needed.
        if unavailable(error):
            log.warning("database unavailable: %s", error.orig)
            return _retry_later("DatabaseUnavailable", "the database cannot be reached right now; retry the request")
        return _unexpected(error)

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        log.exception("unhandled error", exc_info=error)
        return _error(500, "InternalError", "internal error; the server log has the details")


def _refuse_nul() -> None:
    # PostgreSQL cannot store NUL characters; refuse them wherever a name can come from.
    req = request._get_current_object()  # type: ignore[attr-defined]  # once, not a proxy lookup per use
    if "\x00" in req.path or any("\x00" in k or "\x00" in v for k, v in req.args.items(multi=True)):
        raise BadRequest("NUL character in the request path or query")


def _mount_ui(app: Flask, ext: Streamcat) -> None:
    """The web UI at ``/ui`` (catalog_api/ui, docs/ui.md): an application of its own over the same
    services and principals, inside the request-id and metrics layers (wrapped after this)."""
    sessions = UiSessions(Authenticator(ext.settings, ext.principals), ext.principals)
    ui = create_ui(Services(ext.registry, ext.catalog, ext.views, ext.materialized), sessions)
    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/ui": ui})  # type: ignore[method-assign]
    app.extensions["streamcat.ui"] = ui


def create_app(config: Settings | Mapping[str, Any] | None = None) -> Flask:
    """A configured application. ``config`` is Settings, overrides of them, or None (environment)."""
    settings = Settings.coerce(config)
    # No static files: every route is an API route, and declares who may call it.
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    ext = Streamcat.init_app(app, settings)

    app.before_request(_refuse_nul)
    _mount_ui(app, ext)
    answers.init_app(app)  # inside the observability wrapper: its answers are counted and logged too
    observability.init_app(app, settings.access_log)
    guard.init_app(app, settings, ext.principals)  # after the request id, before any view
    app.register_blueprint(meta.bp)
    app.register_blueprint(admin_api.bp, url_prefix="/v1/admin")
    registry_routes.register(app)
    catalog_routes.register(app)
    views_api.register(app)
    materialized_api.register(app)
    iceberg_api.register(app)  # the Iceberg REST catalog at /iceberg/v1 (docs/iceberg.md)
    confluent_routes.register(app)
    _register_error_handlers(app)
    return app
