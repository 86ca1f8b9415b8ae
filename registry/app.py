"""The application factory: one Flask WSGI app serving the registry and the catalog."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from registry.config import Settings
from registry.errors import BadRequest, StreamcatError
from registry.extension import Streamcat

log = logging.getLogger(__name__)


def _error(status: int, code: str, message: str, extra: dict[str, Any] | None = None) -> Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message, **(extra or {})}}
    response = jsonify(body)
    response.status_code = status
    return response


def _register_error_handlers(app: Flask) -> None:
    @app.errorhandler(StreamcatError)
    def _domain(error: StreamcatError) -> Response:
        response = jsonify(error.to_json())
        response.status_code = error.status
        return response

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException) -> Response:
        code = (error.name or "Error").replace(" ", "")
        status = error.code or 500
        if status == 413:
            limit = app.config.get("MAX_CONTENT_LENGTH")
            return _error(413, "PayloadTooLarge", f"the request body exceeds the limit of {limit} bytes")
        return _error(status, code, error.description or code)

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        log.exception("unhandled error", exc_info=error)
        return _error(500, "InternalError", "internal error; the server log has the details")


def _refuse_nul() -> None:
    # PostgreSQL cannot store NUL characters; refuse them wherever a name can come from.
    if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, v in request.args.items(multi=True)):
        raise BadRequest("NUL character in the request path or query")


def create_app(config: Settings | Mapping[str, Any] | None = None) -> Flask:
    """A configured application. ``config`` is Settings, overrides of them, or None (environment)."""
    settings = Settings.coerce(config)
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    Streamcat.init_app(app, settings)

    from catalog_api.api import register as register_catalog
    from registry import observability
    from registry.api import groups, meta, schemas

    app.before_request(_refuse_nul)
    observability.init_app(app, settings.access_log)
    app.register_blueprint(meta.bp)
    app.register_blueprint(groups.bp, url_prefix="/v1/groups")
    app.register_blueprint(groups.bp, url_prefix="/v1/namespace/<namespace>/groups", name="ns_groups")
    app.register_blueprint(schemas.bp, url_prefix="/v1/schemas")
    app.register_blueprint(schemas.bp, url_prefix="/v1/namespace/<namespace>/schemas", name="ns_schemas")
    register_catalog(app)
    _register_error_handlers(app)
    return app
