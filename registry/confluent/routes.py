"""Mounting the Confluent API on the application, over the registry the application runs."""

from __future__ import annotations

from flask import Flask

from registry.confluent.api import SERVICE_KEY, SubjectConverter, bp
from registry.confluent.dek import api as dek_api
from registry.confluent.dek.service import DekService
from registry.confluent.dek.store import SqlDekStore
from registry.confluent.service import ConfluentService
from registry.confluent.store import SqlConfluentStore
from registry.confluent.table_rules import ConfluentTableRules


def register(app: Flask) -> None:
    """Serve the Confluent Schema Registry API at the server's root, on the same database and
    registry service as the Pravega API (so ids, schemas and policies are shared)."""
    streamcat = app.extensions["streamcat"]
    app.extensions[SERVICE_KEY] = ConfluentService(streamcat.registry, SqlConfluentStore(streamcat.engine))
    # A table's CHECK constraints are mirrored as CEL rules of its schema version (docs/data-contracts.md).
    streamcat.catalog.rules = ConfluentTableRules(app.extensions[SERVICE_KEY])
    # the DEK registry's routes are on the same blueprint (registry/confluent/dek/api.py)
    app.extensions[dek_api.SERVICE_KEY] = DekService(SqlDekStore(streamcat.engine))
    app.url_map.converters["subject"] = SubjectConverter
    app.register_blueprint(bp)
