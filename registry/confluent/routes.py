"""Mounting the Confluent API on the application, over the registry the application runs."""

from __future__ import annotations

from flask import Flask

from registry.confluent.service import ConfluentService
from registry.confluent.store import SqlConfluentStore
from registry.confluent.views import SERVICE_KEY, SubjectConverter, bp


def register(app: Flask) -> None:
    """Serve the Confluent Schema Registry API at the server's root, on the same database and
    registry service as the Pravega API (so ids, schemas and policies are shared)."""
    streamcat = app.extensions["streamcat"]
    app.extensions[SERVICE_KEY] = ConfluentService(streamcat.registry, SqlConfluentStore(streamcat.engine))
    app.url_map.converters["subject"] = SubjectConverter
    app.register_blueprint(bp)
