"""Alembic environment: runs revisions against the configured database."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

import catalog_api.orm  # noqa: F401  (registers the catalog tables on the shared metadata)
import registry.confluent.orm
import registry.store.orm  # noqa: F401  (the registry's tables are part of the metadata)
from catalog_api.materialized import orm as materialized_orm  # noqa: F401  (and materialized_tables)
from catalog_api.views import orm as views_orm  # noqa: F401  (and the views table)
from registry.db import Base, make_engine

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite and not connection.in_transaction():
        # Batch mode changes a SQLite table by copying it into a new one and dropping the old one,
        # and with foreign keys on, that DROP deletes every row that references the old table (the
        # cascades of commits, chunks, readers...). Off while migrating (outside a transaction, the
        # only place SQLite takes the pragma), and checked before the migration commits.
        connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=sqlite,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
            if broken:
                raise RuntimeError(f"the migration leaves {len(broken)} rows without their parent, such as {broken[0]}")


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
