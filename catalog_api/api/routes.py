"""Mounting the catalog's blueprints on the application."""

from __future__ import annotations

from flask import Flask

from catalog_api.api import commits, scopes, streams, tables, transactions


def register(app: Flask) -> None:
    """Mount the catalog at ``/v1/scopes`` (and its commits of several tables at ``/v1/commits``)."""
    app.register_blueprint(scopes.bp, url_prefix="/v1/scopes")
    app.register_blueprint(streams.bp, url_prefix="/v1/scopes/<scope>/streams")
    app.register_blueprint(commits.bp, url_prefix="/v1/scopes/<scope>/streams/<stream>")
    app.register_blueprint(tables.bp, url_prefix="/v1/scopes/<scope>/tables")
    app.register_blueprint(transactions.bp, url_prefix="/v1/commits")
