"""Database schema state: where a database stands against the Alembic revisions, and moving it
(one migrating process at a time)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, func, select

import catalog_api.orm  # noqa: F401  (the catalog's tables are part of the models checked)
import registry.confluent.orm
import registry.store.orm  # noqa: F401  (the registry's tables are part of the metadata)
from catalog_api.materialized import orm as materialized_orm  # noqa: F401  (and materialized_tables)
from catalog_api.views import orm as views_orm  # noqa: F401  (and the views table)
from migrations import alembic_config
from registry.db import Base, make_engine
from registry.errors import StreamcatError


class SchemaBehind(StreamcatError):
    """The database has not been migrated to the revisions this code needs."""

    status = 503
    code = "DatabaseNotMigrated"


@cache
def head_revisions(database_url: str) -> frozenset[str]:
    """The newest revisions in ``migrations/`` (read once: readiness probes ask often)."""
    return frozenset(ScriptDirectory.from_config(alembic_config(database_url)).get_heads())


def current_revisions_of(conn: Connection) -> set[str]:
    """The revisions the database behind ``conn`` is at (empty for a fresh database)."""
    return set(MigrationContext.configure(conn).get_current_heads())


def current_revisions(engine: Engine) -> set[str]:
    """The revisions the database is at (empty for a fresh database)."""
    with engine.connect() as conn:
        return current_revisions_of(conn)


def require_current(database_url: str) -> None:
    """Raise SchemaBehind, saying what to run, unless the database is at head."""
    engine = make_engine(database_url)
    try:
        current = current_revisions(engine)
    finally:
        engine.dispose()
    heads = head_revisions(database_url)
    if current != heads:
        at = ", ".join(sorted(current)) or "no revision (empty database)"
        raise SchemaBehind(
            f"the database is at {at} but this server needs {', '.join(sorted(heads))}; "
            "run `streamcat db upgrade` (or start with `streamcat serve --migrate`)"
        )


#: PostgreSQL advisory lock held while migrating (any fixed 64-bit number; this one spells "sc-migra").
MIGRATION_LOCK = 0x73632D6D69677261


@contextmanager
def migrating(database_url: str) -> Iterator[None]:
    """Hold the database's migration lock while the block runs, waiting for it as long as another
    process holds it.

    Replicas started together with ``serve --migrate`` (or ``db upgrade`` run by each) would
    otherwise all read "no revision" and all create the same tables; in turns, the first migrates
    and the others find the database at head. On PostgreSQL a session-level advisory lock, on a
    connection of its own (Alembic's runs on another), released when the block ends or the process
    dies. SQLite databases are one host's files, migrated by one process: no lock is taken.
    """
    engine = make_engine(database_url)
    try:
        if engine.dialect.name != "postgresql":
            yield
            return
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(select(func.pg_advisory_lock(MIGRATION_LOCK)))
            try:
                yield
            finally:
                conn.execute(select(func.pg_advisory_unlock(MIGRATION_LOCK)))
    finally:
        engine.dispose()


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply revisions up to ``revision``, holding the migration lock."""
    with migrating(database_url):
        command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    """Revert revisions down to ``revision`` (``base`` empties the database), holding the migration lock."""
    with migrating(database_url):
        command.downgrade(alembic_config(database_url), revision)


def model_drift(database_url: str) -> list[str]:
    """Differences between the ORM models and the migrated database (empty: none)."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return [str(diff) for diff in compare_metadata(context, Base.metadata)]
    finally:
        engine.dispose()
