"""Database plumbing shared by the SQL stores: engines (URL normalization, SQLite pragmas),
write transactions that lock early and are run again when PostgreSQL rolls them back for a
deadlock or a serialization failure, which errors mean the database is not there for now,
and the declarative base every table is declared on (one database, one Alembic history)."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import psycopg
from sqlalchemy import JSON, Engine, Integer, MetaData, create_engine, event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Session

log = logging.getLogger(__name__)

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Ids handed to clients come from these tables' keys; AUTOINCREMENT keeps SQLite from
# reusing the key of a deleted row, as PostgreSQL sequences never do.
NEVER_REUSED = {"sqlite_autoincrement": True}


class Base(DeclarativeBase):
    """Declarative base of every table (registry and catalog), with the constraint naming convention."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, int: Integer}


#: Execution option that marks a connection as one that will write.
WRITE = "streamcat_write"


def normalize_url(url: str) -> str:
    """Use psycopg 3 for plain ``postgresql://`` URLs (SQLAlchemy would pick psycopg2)."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; on SQLite, WAL mode and writers that take the lock up front."""
    url = normalize_url(url)
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself, so writers can say IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A deferred transaction that later writes can fail with "database is locked"
        # when another writer got there first; IMMEDIATE queues writers at BEGIN instead.
        # BEGIN IMMEDIATE waits for the lock up to the busy timeout, and no longer: a request
        # must not queue behind another writer for more than that.
        mode = "IMMEDIATE" if conn.get_execution_options().get(WRITE) else "DEFERRED"
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def writer(engine: Engine) -> Engine:
    """The same engine, with connections marked as writers."""
    return engine.execution_options(**{WRITE: True})


#: PostgreSQL's serialization failure and deadlock: the server rolled the whole transaction back.
ROLLED_BACK_SQLSTATES = frozenset({"40001", "40P01"})
#: How many times a write transaction is run before such a rollback reaches the caller.
ATTEMPTS = 4
#: Upper bound of the first pause between attempts, in seconds (doubled after each attempt).
BACKOFF = 0.02

R = TypeVar("R")
P = ParamSpec("P")


def rolled_back(error: BaseException) -> bool:
    """Whether ``error`` is PostgreSQL rolling a whole transaction back (deadlock, serialization
    failure): nothing of it was written, and running it again may well succeed."""
    return isinstance(error, OperationalError) and getattr(error.orig, "sqlstate", None) in ROLLED_BACK_SQLSTATES


#: PostgreSQL shutting down, crashed or still starting up, and out of connection slots: the request did not
#: reach a working database (connection exceptions, class 08, are matched by their class).
UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` is the database being out of reach (PostgreSQL stopped, restarting, the connection
    lost): the same request may succeed once it is back, and the pool reconnects by itself (pre-ping).

    A write whose connection was lost may or may not have been committed; a client that sends it again
    must make the repeat harmless (a commit's writer id and sequence do).
    """
    if not isinstance(error, DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    sqlstate = getattr(error.orig, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate.startswith("08") or sqlstate in UNAVAILABLE_SQLSTATES
    # psycopg's own failures carry no SQLSTATE: no server answered (refused, reset, timed out).
    return isinstance(error.orig, psycopg.OperationalError | psycopg.InterfaceError)


class Transactions:
    """Sessions on one engine: read transactions, and write transactions that lock early.

    Given a ``session``, every transaction is that session's own (which its owner
    commits): how work of several stores joins one database transaction.
    """

    def __init__(self, engine: Engine, session: Session | None = None) -> None:
        self.engine = engine
        self._writer = writer(engine)
        self.session = session

    @contextmanager
    def _open(self, engine: Engine) -> Iterator[Session]:
        if self.session is not None:
            yield self.session
            return
        with Session(engine, expire_on_commit=False) as session, session.begin():
            yield session

    def read(self) -> Any:
        """A context manager: a session in a transaction that will only read."""
        return self._open(self.engine)

    def write(self) -> Any:
        """A context manager: a session in a transaction that writes (committed at exit)."""
        return self._open(self._writer)

    def retrying(self, work: Callable[[], R]) -> R:
        """``work()``, called again (up to ATTEMPTS in all, after short random pauses) while PostgreSQL
        rolls its transaction back for a deadlock or a serialization failure.

        ``work`` must be one write transaction of these Transactions that reads what it decides on
        inside the transaction, so that running it again is running it anew. Inside a caller's
        session it runs once: the caller's transaction is the one to run again. SQLite's "database
        is locked" is not retried: the busy timeout has already been waited (docs/decisions.md).
        """
        if self.session is not None:
            return work()
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return work()
            except OperationalError as error:
                if attempt == ATTEMPTS or not rolled_back(error):
                    raise
                log.info("transaction rolled back (%s); attempt %d of %d", error.orig, attempt + 1, ATTEMPTS)
                # Random pauses, so that the two sides of a deadlock do not meet again in step.
                time.sleep(random.uniform(0, BACKOFF * 2 ** (attempt - 1)))
        raise AssertionError("unreachable")


class _Transactional(Protocol):
    _tx: Transactions


S = TypeVar("S", bound=_Transactional)


def retried(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Marks a store method that is one write transaction of ``self._tx``: it is run again when
    PostgreSQL rolls that transaction back (:meth:`Transactions.retrying`)."""

    @functools.wraps(method)
    def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return store._tx.retrying(lambda: method(store, *args, **kwargs))

    return run


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds, as history timestamps are kept."""
    return int(time.time() * 1000)


def lock_name(session: Session, *parts: str) -> None:
    """Serialize, until this transaction ends, every transaction that locks the same name (PostgreSQL:
    a transaction-level advisory lock on a hash of it). Unique constraints cannot keep two kinds of rows
    from taking one name (a table and a view of a scope); this lock can. SQLite needs none: its write
    transactions already run one at a time (BEGIN IMMEDIATE)."""
    if session.get_bind().dialect.name == "postgresql":
        key = "\x1f".join(parts)
        session.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(key, 0))))
