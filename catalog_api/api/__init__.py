"""REST blueprints of the catalog, and the hook that mounts them on the app."""

from __future__ import annotations

from flask import Flask, current_app

from catalog_api.service import CatalogService


def catalog_service() -> CatalogService:
    """The CatalogService of the running application."""
    service: CatalogService = current_app.extensions["streamcat"].catalog
    return service


def register(app: Flask) -> None:
    """Mount the catalog's blueprints and describe them in the OpenAPI document."""
    from catalog_api.api import commits, openapi, scopes, streams, tables

    openapi.describe()
    app.register_blueprint(scopes.bp, url_prefix="/v1/scopes")
    app.register_blueprint(streams.bp, url_prefix="/v1/scopes/<scope>/streams")
    app.register_blueprint(commits.bp, url_prefix="/v1/scopes/<scope>/streams/<stream>")
    app.register_blueprint(tables.bp, url_prefix="/v1/scopes/<scope>/tables")
