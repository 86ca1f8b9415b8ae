"""Alembic environment: runs revisions against the configured database."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

import catalog_api.orm  # noqa: F401  (registers the catalog tables on the shared metadata)
import registry.confluent.orm
import registry.store.orm  # noqa: F401  (the registry's tables are part of the metadata)
from registry.db import Base, make_engine

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the revisions on a live connection (given by the caller, or made from the URL)."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run `streamcat db upgrade`")
run_migrations_online()
