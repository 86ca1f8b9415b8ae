"""Mounting the registry's blueprints on the application."""

from __future__ import annotations

from flask import Flask

from registry.api import groups, schemas


def register(app: Flask) -> None:
    """Mount the registry at ``/v1/groups`` and ``/v1/schemas``, and again under
    ``/v1/namespace/<namespace>/`` (Pravega's redirect filter for namespaces, as routes)."""
    app.register_blueprint(groups.bp, url_prefix="/v1/groups")
    app.register_blueprint(groups.bp, url_prefix="/v1/namespace/<namespace>/groups", name="ns_groups")
    app.register_blueprint(schemas.bp, url_prefix="/v1/schemas")
    app.register_blueprint(schemas.bp, url_prefix="/v1/namespace/<namespace>/schemas", name="ns_schemas")
