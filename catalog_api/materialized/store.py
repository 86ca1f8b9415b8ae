"""Materialized tables on SQLAlchemy, in the catalog's database: one row per table, keyed by its stream.

Every change of a row (alter, suspend, a lease taken or renewed, a refresh recorded) is one write
transaction that locks the row and decides on what it read there: two refreshers asking for the
lease at once are serialized by that lock, and the one that comes second sees the first one's lease.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, TypeVar

from sqlalchemy import Engine, and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from catalog_api.errors import ScopeNotFound, TableNotFound
from catalog_api.materialized.errors import MaterializedTableNotFound
from catalog_api.materialized.model import Definition, RefreshState, SourceTable
from catalog_api.materialized.orm import MaterializedTableRow
from catalog_api.model import COMPACTION
from catalog_api.orm import CommitRow, ScopeRow, StreamRow
from catalog_api.store import Page
from registry.db import Transactions, now_ms, retried
from registry.errors import AlreadyExists
from registry.pagination import decode_token


@dataclass(frozen=True)
class Record:
    """A stored materialized table: what the row holds, with its scope and name."""

    scope: str
    name: str
    definition: Definition
    state: RefreshState
    version: int
    created_at: int
    updated_at: int


#: Conditions (or scalar subqueries) asked in one statement (SQLite allows 2,000 columns and 32,766 parameters).
_BATCH = 400


@dataclass(frozen=True)
class Progress:
    """What the catalog says of some materialized tables' sources and refresh commits, read in a
    constant number of queries (one more per 400 sources or tables) however many tables there are."""

    #: each source's newest commit number by (scope, table); a dropped source is absent
    latest: dict[tuple[str, str], int] = field(default_factory=dict)
    #: when the oldest non-compaction commit past a cut was made, by (scope, table, cut); absent: none
    pending: dict[tuple[str, str, int], int] = field(default_factory=dict)
    #: the properties of each table's last refresh commit, by (scope, name); absent: no such commit
    refresh_properties: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


_T = TypeVar("_T")


def _batches(items: Sequence[_T]) -> list[Sequence[_T]]:
    iterator = iter(items)
    return list(iter(lambda: tuple(islice(iterator, _BATCH)), ()))


#: Given the stored record and the time, the record to store (or an error, which changes nothing).
Change = Callable[[Record, int], Record]


def _record(row: MaterializedTableRow, scope: str, name: str) -> Record:
    definition = Definition(
        query_text=row.query_text,
        sources=tuple(SourceTable(str(s["scope"]), str(s["table"])) for s in row.sources),
        freshness_ms=row.freshness_ms,
        refresh_mode=row.refresh_mode,  # type: ignore[arg-type]  # only REFRESH_MODES are stored
        current_catalog=row.current_catalog,
        current_namespace=tuple(row.current_namespace),
        options={str(k): str(v) for k, v in (row.options or {}).items()},
    )
    state = RefreshState(
        status=row.status,  # type: ignore[arg-type]  # only statuses are stored
        cuts={str(k): int(v) for k, v in row.cuts.items()},
        refresh_commit=row.refresh_commit,
        last_refresh_at=row.last_refresh_at,
        last_refresh_duration_ms=row.last_refresh_duration_ms,
        last_error=row.last_error,
        last_error_at=row.last_error_at,
        failures=row.failures,
        next_attempt_at=row.next_attempt_at,
        lease_holder=row.lease_holder,
        lease_expires_at=row.lease_expires_at,
        scheduled_at=row.scheduled_at,
    )
    return Record(scope, name, definition, state, row.version, row.created_at, row.updated_at)


def _fill(row: MaterializedTableRow, definition: Definition, state: RefreshState) -> None:
    row.query_text = definition.query_text
    row.current_catalog = definition.current_catalog
    row.current_namespace = list(definition.current_namespace)
    row.sources = [{"scope": s.scope, "table": s.table} for s in definition.sources]
    row.freshness_ms = definition.freshness_ms
    row.refresh_mode = definition.refresh_mode
    row.status = state.status
    row.cuts = dict(state.cuts)
    row.refresh_commit = state.refresh_commit
    row.last_refresh_at = state.last_refresh_at
    row.last_refresh_duration_ms = state.last_refresh_duration_ms
    row.last_error = state.last_error
    row.last_error_at = state.last_error_at
    row.failures = state.failures
    row.next_attempt_at = state.next_attempt_at
    row.lease_holder = state.lease_holder
    row.lease_expires_at = state.lease_expires_at
    row.options = dict(definition.options) or None
    row.scheduled_at = state.scheduled_at


class SqlMaterializedStore:
    """Materialized tables on one engine (the catalog's)."""

    def __init__(self, engine: Engine) -> None:
        self._tx = Transactions(engine)
        self._read, self._write = self._tx.read, self._tx.write

    @staticmethod
    def _stream_id(session: Session, scope: str, name: str) -> int:
        scope_id = session.scalars(select(ScopeRow.id).where(ScopeRow.name == scope)).one_or_none()
        if scope_id is None:
            raise ScopeNotFound(f"scope {scope!r} not found")
        found = session.scalars(
            select(StreamRow.id).where(StreamRow.scope_id == scope_id, StreamRow.name == name)
        ).one_or_none()
        if found is None:
            raise TableNotFound(f"table {name!r} not found in scope {scope!r}")
        return found

    def _row(self, session: Session, scope: str, name: str, *, lock: bool = False) -> MaterializedTableRow:
        stream_id = self._stream_id(session, scope, name)
        query = select(MaterializedTableRow).where(MaterializedTableRow.stream_id == stream_id)
        row = session.scalars(query.with_for_update() if lock else query).one_or_none()
        if row is None:
            raise MaterializedTableNotFound(f"{scope}.{name} is not a materialized table")
        return row

    @retried
    def insert(self, scope: str, name: str, definition: Definition) -> Record:
        """Make the (existing) table ``scope.name`` a materialized table with ``definition``, initializing."""
        try:
            with self._write() as session:
                now = now_ms()
                row = MaterializedTableRow(
                    stream_id=self._stream_id(session, scope, name), version=1, created_at=now, updated_at=now
                )
                _fill(row, definition, RefreshState(status="initializing"))
                session.add(row)
                session.flush()
                return _record(row, scope, name)
        except IntegrityError:
            raise AlreadyExists(f"{scope}.{name} is already a materialized table") from None

    def get(self, scope: str, name: str) -> Record:
        """The materialized table; MaterializedTableNotFound (TableNotFound, ScopeNotFound) if there is none."""
        with self._read() as session:
            return _record(self._row(session, scope, name), scope, name)

    def find(self, scope: str, name: str) -> Record | None:
        """The materialized table, or None when ``scope.name`` is not one (or does not exist)."""
        with self._read() as session:
            row = session.scalars(
                select(MaterializedTableRow)
                .join(StreamRow, StreamRow.id == MaterializedTableRow.stream_id)
                .join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
                .where(ScopeRow.name == scope, StreamRow.name == name)
            ).one_or_none()
            return None if row is None else _record(row, scope, name)

    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's materialized tables, in the order their streams were created."""
        after = decode_token(token)
        with self._read() as session:
            scope_id = session.scalars(select(ScopeRow.id).where(ScopeRow.name == scope)).one_or_none()
            if scope_id is None:
                raise ScopeNotFound(f"scope {scope!r} not found")
            rows = session.execute(
                select(MaterializedTableRow, StreamRow.name)
                .join(StreamRow, StreamRow.id == MaterializedTableRow.stream_id)
                .where(StreamRow.scope_id == scope_id, MaterializedTableRow.stream_id > after)
                .order_by(MaterializedTableRow.stream_id)
                .limit(limit)
            ).all()
            token_out = str(rows[-1][0].stream_id if rows else after)
            return Page([_record(r, scope, n) for r, n in rows], token_out)

    def all_tables(self) -> list[Record]:
        """Every materialized table of every scope (for /metrics)."""
        with self._read() as session:
            rows = session.execute(
                select(MaterializedTableRow, ScopeRow.name, StreamRow.name)
                .join(StreamRow, StreamRow.id == MaterializedTableRow.stream_id)
                .join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
                .order_by(MaterializedTableRow.stream_id)
            ).all()
            return [_record(r, s, n) for r, s, n in rows]

    def progress(self, records: Sequence[Record]) -> Progress:
        """Each source's newest commit and oldest pending commit past the cut each record consumed, and
        each record's refresh commit properties: one query for the streams, one per 400 pending cuts,
        one per 400 refresh commits."""
        sources = {(s.scope, s.table) for r in records for s in r.definition.sources}
        wanted = sources | {(r.scope, r.name) for r in records if r.state.refresh_commit > 0}
        if not wanted:
            return Progress()
        with self._read() as session:
            streams: dict[tuple[str, str], tuple[int, int]] = {}
            for names in _batches(sorted(wanted)):
                found = session.execute(
                    select(ScopeRow.name, StreamRow.name, StreamRow.id, StreamRow.last_commit)
                    .join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
                    .where(or_(*(and_(ScopeRow.name == s, StreamRow.name == t) for s, t in names)))
                ).all()
                streams.update({(s, t): (i, last) for s, t, i, last in found})
            latest = {k: streams[k][1] for k in sources if k in streams}
            cuts = sorted({
                (s.scope, s.table, r.state.cuts.get(s.key) or 0)
                for r in records for s in r.definition.sources
                if (s.scope, s.table) in streams and (r.state.cuts.get(s.key) or 0) < latest[(s.scope, s.table)]
            })
            pending: dict[tuple[str, str, int], int] = {}
            for past in _batches(cuts):
                # The first commit past the cut that changed rows (a compaction changes none).
                firsts = [
                    select(CommitRow.created_at)
                    .where(CommitRow.stream_id == streams[(s, t)][0], CommitRow.number > cut,
                           CommitRow.number <= latest[(s, t)], CommitRow.kind != COMPACTION)
                    .order_by(CommitRow.number).limit(1).scalar_subquery()
                    for s, t, cut in past
                ]
                values = session.execute(select(*firsts)).one()
                pending.update({k: v for k, v in zip(past, values, strict=True) if v is not None})
            refreshes = [
                (streams[(r.scope, r.name)][0], r.state.refresh_commit, (r.scope, r.name))
                for r in records if r.state.refresh_commit > 0 and (r.scope, r.name) in streams
            ]
            properties: dict[tuple[str, str], dict[str, Any]] = {}
            for commits in _batches(refreshes):
                by_commit = {(i, n): key for i, n, key in commits}
                rows = session.execute(
                    select(CommitRow.stream_id, CommitRow.number, CommitRow.properties)
                    .where(or_(*(and_(CommitRow.stream_id == i, CommitRow.number == n) for i, n, _k in commits)))
                ).all()
                properties.update({by_commit[(i, n)]: dict(p) for i, n, p in rows})
            return Progress(latest, pending, properties)

    @retried
    def update(self, scope: str, name: str, change: Change) -> Record:
        """Store what ``change`` makes of the locked record; the version goes up when the definition or
        the status changes (not for a lease renewed or a refresh recorded)."""
        with self._write() as session:
            row = self._row(session, scope, name, lock=True)
            before = _record(row, scope, name)
            now = now_ms()
            after = change(before, now)
            if after.definition != before.definition or after.state.status != before.state.status:
                after = replace(after, version=before.version + 1)
                row.version = after.version
            row.updated_at = now
            _fill(row, after.definition, after.state)
            session.flush()
            return replace(after, updated_at=now)
