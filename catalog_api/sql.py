"""The catalog store on SQLAlchemy, on the same database (and, for group work, in the same
transactions) as the registry's store.

Write transactions lock rows in one order, scope, stream, table, group, versions (the registry's
store takes the last two), so that no two of them wait for each other in a circle; each is run
again when PostgreSQL rolls it back all the same (registry.db.retried). docs/decisions.md has the
order and what each operation locks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from sqlalchemy import Engine, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from catalog_api.cuts import check_after, check_cut, check_retained, first_visible
from catalog_api.errors import CommitConflict, ReaderNotFound, ScopeNotFound, StreamNotFound, TableNotFound
from catalog_api.groups import SchemaGroups
from catalog_api.model import (
    COMPACTION,
    OVERWRITE,
    Change,
    Chunk,
    Commit,
    CommitOptions,
    Reader,
    Scope,
    Snapshot,
    Stream,
    StreamConfig,
    Table,
    TableCommit,
    TableEntry,
    WriterCommit,
)
from catalog_api.orm import ChunkRow, CommitRow, PartitionSpecRow, ReaderRow, ScopeRow, StreamRow, TableRow
from catalog_api.partitioning.spec import UNPARTITIONED, PartitionSpec
from catalog_api.store import (
    CatalogStore,
    CheckCommit,
    CheckDelete,
    ClearScope,
    DecideExpiry,
    Page,
    Placement,
    RegisterGroup,
    TableRecord,
    TableSpec,
    UpdateTable,
    ViewTable,
)
from catalog_api.views.orm import ViewRow
from registry.db import Transactions, lock_name, now_ms, retried
from registry.errors import AlreadyExists, BadRequest, Conflict
from registry.pagination import decode_token

#: The registry's groups working inside a catalog transaction's session.
GroupsIn = Callable[[Session], SchemaGroups]
#: PostgreSQL advisory lock that stream creations take before checking their location (any
#: fixed 64-bit number; this one spells "sc-locat").
LOCATIONS_LOCK = 0x73632D6C6F636174
#: Paths per IN (...) list when looking up or marking the chunks a commit removes.
_BATCH = 1000


def _scope(row: ScopeRow) -> Scope:
    return Scope(row.name, row.comment, dict(row.properties), row.created_at)


def _stream(row: StreamRow, scope: str) -> Stream:
    return Stream(
        scope=scope,
        name=row.name,
        location=row.location,
        config=StreamConfig(row.segments, row.retention_ms, row.retention_bytes),
        sealed=row.sealed,
        truncated_at=row.truncated_at,
        last_commit=row.last_commit,
        created_at=row.created_at,
        managed=row.managed,
        retained_from=row.retained_from,
    )


def _by_writer(session: Session, stream: StreamRow, writer_id: str, writer_sequence: int) -> CommitRow | None:
    """The commit of ``stream`` that a writer made with this sequence number, if any (at most one: unique)."""
    return session.scalars(
        select(CommitRow).where(
            CommitRow.stream_id == stream.id,
            CommitRow.writer_id == writer_id,
            CommitRow.writer_sequence == writer_sequence,
        )
    ).one_or_none()


def _commit(row: CommitRow, chunk_count: int, duplicate: bool = False) -> Commit:
    return Commit(
        number=row.number,
        overwrite=row.overwrite,
        writer_id=row.writer_id,
        writer_sequence=row.writer_sequence,
        event_count=row.event_count,
        bytes=row.bytes,
        chunk_count=chunk_count,
        created_at=row.created_at,
        properties=dict(row.properties),
        duplicate=duplicate,
        kind=row.kind,
        read_cut=row.read_cut,
        base_cut=row.base_cut,
    )


def _chunk(row: ChunkRow) -> Chunk:
    return Chunk(
        path=row.path,
        kind=row.kind,
        segment=row.segment,
        event_count=row.event_count,
        bytes=row.bytes,
        encoding_ids=tuple(row.encoding_ids),
        min_event_time=row.min_event_time,
        max_event_time=row.max_event_time,
        stats=dict(row.stats),
        commit=row.commit_number,
        sequence=row.sequence,
        removed_at=row.removed_at,
        partition=None if row.partition is None else dict(row.partition),
    )


def _reader(row: ReaderRow) -> Reader:
    return Reader(row.name, row.offset, row.updated_at)


#: A chunk's place in a snapshot: (sequence, commit, position in its commit).
_CHUNK_ORDER = (ChunkRow.sequence, ChunkRow.commit_number, ChunkRow.id)


def _record(stream: StreamRow, table: TableRow, scope: str, specs: Sequence[PartitionSpec]) -> TableRecord:
    return TableRecord(
        stream=_stream(stream, scope),
        format=table.format,
        comment=table.comment,
        properties=dict(table.properties),
        version=table.version,
        spec_id=table.spec_id,
        last_partition_field_id=table.last_partition_field_id,
        partition_specs=(UNPARTITIONED, *specs),
    )


def _partition_specs(session: Session, stream_ids: Iterable[int]) -> dict[int, list[PartitionSpec]]:
    """The stored partition specs of the tables of ``stream_ids``, by stream id, each list by spec id."""
    ids = list(stream_ids)
    found: dict[int, list[PartitionSpec]] = {i: [] for i in ids}
    for i in range(0, len(ids), _BATCH):
        rows = session.scalars(
            select(PartitionSpecRow)
            .where(PartitionSpecRow.stream_id.in_(ids[i : i + _BATCH]))
            .order_by(PartitionSpecRow.stream_id, PartitionSpecRow.spec_id)
        )
        for row in rows:
            found[row.stream_id].append(PartitionSpec.from_json({"specId": row.spec_id, "fields": row.fields}))
    return found


def _table_record(session: Session, stream: StreamRow, table: TableRow, scope: str) -> TableRecord:
    return _record(stream, table, scope, _partition_specs(session, [stream.id])[stream.id])


def _add_spec(session: Session, stream_id: int, spec: PartitionSpec) -> None:
    """Store ``spec`` as a spec of the table of ``stream_id``, unless it is the unpartitioned one."""
    if spec.spec_id != UNPARTITIONED.spec_id:
        fields = spec.to_json()["fields"]
        session.add(PartitionSpecRow(stream_id=stream_id, spec_id=spec.spec_id, fields=fields, created_at=now_ms()))


class SqlCatalogStore(CatalogStore):
    """CatalogStore on one engine. ``groups_in`` gives the registry's groups bound to a session,
    so that group work joins the catalog's transactions."""

    def __init__(self, engine: Engine, groups_in: GroupsIn) -> None:
        self.engine = engine
        self._groups_in = groups_in
        self._tx = Transactions(engine)
        self._read, self._write = self._tx.read, self._tx.write

    # -- lookups ------------------------------------------------------------------------------

    @staticmethod
    def _scope_row(session: Session, name: str, *, lock: bool = False, share: bool = False) -> ScopeRow:
        """The scope's row; ``lock``: locked for update; ``share``: locked against its deletion only
        (FOR KEY SHARE, which creations of streams in it take, and which do not exclude each other)."""
        query = select(ScopeRow).where(ScopeRow.name == name)
        if lock or share:
            query = query.with_for_update(read=share, key_share=share)
        row = session.scalars(query).one_or_none()
        if row is None:
            raise ScopeNotFound(f"scope {name!r} not found")
        return row

    def _stream_row(self, session: Session, scope: str, name: str, *, lock: bool = False) -> StreamRow:
        scope_row = self._scope_row(session, scope)
        query = select(StreamRow).where(StreamRow.scope_id == scope_row.id, StreamRow.name == name)
        row = session.scalars(query.with_for_update() if lock else query).one_or_none()
        if row is None:
            raise StreamNotFound(f"stream {name!r} not found in scope {scope!r}")
        return row

    def _table_parts(
        self, session: Session, scope: str, name: str, *, lock: bool = False
    ) -> tuple[StreamRow, TableRow]:
        try:
            stream = self._stream_row(session, scope, name, lock=lock)
        except StreamNotFound:
            raise TableNotFound(f"table {name!r} not found in scope {scope!r}") from None
        query = select(TableRow).where(TableRow.stream_id == stream.id)
        table = session.scalars(query.with_for_update() if lock else query).one_or_none()
        if table is None:
            raise TableNotFound(f"{scope}.{name} is a stream, not a table")
        return stream, table

    def _view(
        self, session: Session, scope: str, stream: StreamRow, table: TableRow, view: ViewTable,
        specs: Sequence[PartitionSpec] | None = None,
    ) -> Table:
        record = _table_record(session, stream, table, scope) if specs is None else _record(stream, table, scope, specs)
        return view(record, self._groups_in(session))

    # -- scopes --------------------------------------------------------------------------------

    @retried
    def create_scope(self, scope: Scope) -> Scope:
        try:
            with self._write() as session:
                row = ScopeRow(
                    name=scope.name, comment=scope.comment, properties=dict(scope.properties), created_at=now_ms()
                )
                session.add(row)
                session.flush()
                return _scope(row)
        except IntegrityError:
            raise AlreadyExists(f"scope {scope.name!r} already exists") from None

    def get_scope(self, name: str) -> Scope:
        with self._read() as session:
            return _scope(self._scope_row(session, name))

    def count_tables(self) -> int:
        with self._read() as session:
            return session.scalar(select(func.count()).select_from(TableRow)) or 0

    def recent_commits(self, limit: int) -> list[tuple[str, str, Commit]]:
        with self._read() as session:
            rows = session.execute(
                select(ScopeRow.name, StreamRow.name, CommitRow)
                .join(StreamRow, StreamRow.id == CommitRow.stream_id)
                .join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
                .order_by(CommitRow.id.desc())
                .limit(limit)
            ).all()
            return [(scope, stream, _commit(commit, 0)) for scope, stream, commit in rows]

    def list_scopes(self, token: str | None, limit: int) -> Page:
        after = decode_token(token)
        with self._read() as session:
            rows = session.scalars(select(ScopeRow).where(ScopeRow.id > after).order_by(ScopeRow.id).limit(limit)).all()
        return Page([_scope(r) for r in rows], str(rows[-1].id if rows else after))

    @retried
    def update_scope(self, name: str, change: Callable[[Scope], Scope]) -> Scope:
        with self._write() as session:
            row = self._scope_row(session, name, lock=True)
            new = change(_scope(row))
            row.comment, row.properties = new.comment, dict(new.properties)
            return _scope(row)

    @retried
    def delete_scope(self, name: str, clear: ClearScope) -> list[Stream]:
        with self._write() as session:
            row = self._scope_row(session, name, lock=True)
            # Its streams before its groups (which ``clear`` locks and deletes), as every writer of a
            # table locks them: the cascade below would otherwise take them last, while an ALTER TABLE
            # holding one waits for its group. A stream that went meanwhile is skipped.
            streams = session.scalars(
                select(StreamRow).where(StreamRow.scope_id == row.id).order_by(StreamRow.id).with_for_update()
            )
            gone = [_stream(s, name) for s in streams]
            clear(gone, self._groups_in(session))
            session.delete(row)
            return gone

    # -- streams ---------------------------------------------------------------------------------

    @staticmethod
    def _check_location(session: Session, scope_row: ScopeRow, name: str, placement: Placement) -> None:
        """Run the placement's check against every live stream, serialized with other creations
        (a taken name is AlreadyExists first: the name, not the location it would get, is the news).

        Containment is a prefix relation, which no unique constraint can express, so the check
        reads all locations. Two creations must not both pass it before either inserts: on
        SQLite the write transaction already holds the database's one write lock (BEGIN
        IMMEDIATE); on PostgreSQL (READ COMMITTED) a transaction-scoped advisory lock makes
        creations take turns, and the SELECT after it sees every creation committed before it.
        The lock involves only creations: commits, reads and deletes never wait for it, and it is
        released at commit or rollback. (SERIALIZABLE would do too, at the price of retries.)
        """
        if session.get_bind().dialect.name == "postgresql":
            session.execute(select(func.pg_advisory_xact_lock(LOCATIONS_LOCK)))
        taken = select(StreamRow.id).where(StreamRow.scope_id == scope_row.id, StreamRow.name == name)
        if session.scalar(taken) is not None:
            raise AlreadyExists(f"stream {name!r} already exists in scope {scope_row.name!r}")
        live = session.execute(
            select(ScopeRow.name, StreamRow.name, StreamRow.location).join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
        ).all()
        placement.check([(f"{each_scope}.{each}", location) for each_scope, each, location in live])

    def _insert_stream(
        self, session: Session, scope: str, name: str, config: StreamConfig, placement: Placement
    ) -> StreamRow:
        # Locked against deletion: a scope deleted meanwhile is ScopeNotFound here, not a foreign
        # key violation at the insert.
        scope_row = self._scope_row(session, scope, share=True)
        self._check_location(session, scope_row, name, placement)
        row = StreamRow(
            scope_id=scope_row.id,
            name=name,
            location=placement.location,
            managed=placement.managed,
            segments=config.segments,
            retention_ms=config.retention_ms,
            retention_bytes=config.retention_bytes,
            sealed=False,
            truncated_at=0,
            last_commit=0,
            created_at=now_ms(),
        )
        try:
            with session.begin_nested():
                session.add(row)
        except IntegrityError:
            raise AlreadyExists(f"stream {name!r} already exists in scope {scope!r}") from None
        return row

    @retried
    def create_stream(self, scope: str, name: str, config: StreamConfig, placement: Placement) -> Stream:
        with self._write() as session:
            return _stream(self._insert_stream(session, scope, name, config, placement), scope)

    def get_stream(self, scope: str, name: str) -> Stream:
        with self._read() as session:
            return _stream(self._stream_row(session, scope, name), scope)

    def list_streams(self, scope: str, token: str | None, limit: int) -> Page:
        after = decode_token(token)
        with self._read() as session:
            scope_row = self._scope_row(session, scope)
            rows = session.scalars(
                select(StreamRow)
                .where(StreamRow.scope_id == scope_row.id, StreamRow.id > after)
                .order_by(StreamRow.id)
                .limit(limit)
            ).all()
        return Page([_stream(r, scope) for r in rows], str(rows[-1].id if rows else after))

    @retried
    def update_stream(self, scope: str, name: str, change: Callable[[Stream], Stream]) -> Stream:
        with self._write() as session:
            row = self._stream_row(session, scope, name, lock=True)
            new = change(_stream(row, scope))
            row.sealed, row.truncated_at = new.sealed, new.truncated_at
            return _stream(row, scope)

    @retried
    def delete_stream(self, scope: str, name: str, check: CheckDelete) -> Stream:
        with self._write() as session:
            row = self._stream_row(session, scope, name, lock=True)
            gone = _stream(row, scope)
            check(gone, session.get(TableRow, row.id) is not None)
            session.delete(row)
            return gone

    # -- tables ----------------------------------------------------------------------------------

    @retried
    def create_table(
        self,
        scope: str,
        name: str,
        config: StreamConfig,
        placement: Placement,
        spec: TableSpec,
        register: RegisterGroup,
        view: ViewTable,
    ) -> Table:
        with self._write() as session:
            # Tables and views share a scope's name space: the view store takes the same lock.
            lock_name(session, "relation", scope, name)
            if session.scalar(select(ViewRow.id).join(ScopeRow, ScopeRow.id == ViewRow.scope_id)
                              .where(ScopeRow.name == scope, ViewRow.name == name)) is not None:
                raise AlreadyExists(f"{scope}.{name} is a view; tables and views share one name space")
            stream = self._insert_stream(session, scope, name, config, placement)
            register(self._groups_in(session))
            table = TableRow(
                stream_id=stream.id,
                format=spec.format,
                comment=spec.comment,
                properties=dict(spec.properties),
                version=1,
                updated_at=now_ms(),
                spec_id=spec.partitioning.spec_id,
                last_partition_field_id=spec.partitioning.highest_field_id(),
            )
            session.add(table)
            session.flush()
            _add_spec(session, stream.id, spec.partitioning)
            session.flush()
            return self._view(session, scope, stream, table, view)

    def get_table(self, scope: str, name: str, view: ViewTable) -> Table:
        with self._read() as session:
            return self._view(session, scope, *self._table_parts(session, scope, name), view)

    def list_table_entries(self, scope: str, token: str | None, limit: int) -> Page:
        after = decode_token(token)
        with self._read() as session:
            scope_row = self._scope_row(session, scope)
            rows = session.execute(
                select(StreamRow.id, StreamRow.name, StreamRow.last_commit, TableRow.format, TableRow.properties)
                .join(TableRow, TableRow.stream_id == StreamRow.id)
                .where(StreamRow.scope_id == scope_row.id, StreamRow.id > after)
                .order_by(StreamRow.id)
                .limit(limit)
            ).all()
        entries = [TableEntry(name, fmt, last, dict(properties)) for _id, name, last, fmt, properties in rows]
        return Page(entries, str(rows[-1][0] if rows else after))

    def list_tables(self, scope: str, token: str | None, limit: int, view: ViewTable) -> Page:
        after = decode_token(token)
        with self._read() as session:
            scope_row = self._scope_row(session, scope)
            rows = session.execute(
                select(StreamRow, TableRow)
                .join(TableRow, TableRow.stream_id == StreamRow.id)
                .where(StreamRow.scope_id == scope_row.id, StreamRow.id > after)
                .order_by(StreamRow.id)
                .limit(limit)
            ).all()
            specs = _partition_specs(session, (s.id for s, _t in rows))
            tables = [self._view(session, scope, s, t, view, specs[s.id]) for s, t in rows]
        return Page(tables, str(rows[-1][0].id if rows else after))

    @retried
    def alter_table(self, scope: str, name: str, update: UpdateTable, view: ViewTable) -> Table:
        with self._write() as session:
            stream, table = self._table_parts(session, scope, name, lock=True)
            record = _table_record(session, stream, table, scope)
            change = update(record, self._groups_in(session))
            table.comment = change.comment
            table.properties = dict(change.properties)
            if change.partitioning is not None:
                if change.partitioning.spec_id not in {s.spec_id for s in record.partition_specs}:
                    _add_spec(session, stream.id, change.partitioning)
                table.spec_id = change.partitioning.spec_id
                table.last_partition_field_id = change.partitioning.highest_field_id(table.last_partition_field_id)
            table.version += 1
            table.updated_at = now_ms()
            session.flush()
            return self._view(session, scope, stream, table, view)

    @retried
    def drop_table(self, scope: str, name: str, unregister: RegisterGroup) -> Stream:
        with self._write() as session:
            stream, _table = self._table_parts(session, scope, name, lock=True)
            gone = _stream(stream, scope)
            unregister(self._groups_in(session))
            session.delete(stream)
            return gone

    # -- commits ---------------------------------------------------------------------------------

    @staticmethod
    def _live_chunks(session: Session, row: StreamRow, paths: Sequence[str]) -> list[ChunkRow]:
        """The stream's live chunks (not removed, not truncated) among ``paths``; CommitConflict
        naming one that is not."""
        found: dict[str, ChunkRow] = {}
        for i in range(0, len(paths), _BATCH):
            batch = list(paths[i : i + _BATCH])
            found.update(
                (c.path, c)
                for c in session.scalars(
                    select(ChunkRow).where(
                        ChunkRow.stream_id == row.id,
                        ChunkRow.path.in_(batch),
                        ChunkRow.removed_at.is_(None),
                        ChunkRow.commit_number > row.truncated_at,
                    )
                )
            )
        missing = [p for p in paths if p not in found]
        if missing:
            raise CommitConflict(
                f"chunk {missing[0]!r} is not a live chunk of the stream ({len(missing)} of the {len(paths)} "
                "removed chunks are not): it was removed or truncated since it was read, or never committed; "
                "read the stream again and retry"
            )
        return [found[p] for p in paths]

    @retried
    def commit(
        self, scope: str, stream: str, chunks: Sequence[Chunk], options: CommitOptions, check: CheckCommit
    ) -> Commit:
        with self._write() as session:
            row = self._stream_row(session, scope, stream, lock=True)
            seen = self._seen(session, row, options)
            if seen is not None:
                return seen
            created_at = self._next_time(session, row)
            return self._commit_in(session, scope, row, chunks, options, check, created_at)

    @retried
    def commit_tables(self, parts: Sequence[TableCommit], checks: Sequence[CheckCommit]) -> list[Commit]:
        with self._write() as session:
            # Streams are locked in one order (scope, then name), so that two such commits never wait in a circle.
            order = sorted(range(len(parts)), key=lambda i: (parts[i].scope, parts[i].stream))
            rows = {i: self._stream_row(session, parts[i].scope, parts[i].stream, lock=True) for i in order}
            seen = [self._seen(session, rows[i], parts[i].options) for i in range(len(parts))]
            if all(s is not None for s in seen):
                return [s for s in seen if s is not None]
            made = [f"{parts[i].scope}.{parts[i].stream}" for i, s in enumerate(seen) if s is not None]
            if made:
                raise Conflict(
                    f"the commit of {made[0]} with this writer id and sequence was made by another request than "
                    "the rest of this one: give each commit of several tables its own writer sequence"
                )
            # One time for all: the tables' commits are one event.
            created_at = max(self._next_time(session, rows[i]) for i in order)
            return [self._commit_in(session, p.scope, rows[i], p.chunks, p.options, checks[i], created_at)
                    for i, p in enumerate(parts)]

    @staticmethod
    def _seen(session: Session, row: StreamRow, options: CommitOptions) -> Commit | None:
        """The commit the locked stream ``row`` already holds of the options' (writer id, sequence), as a
        duplicate; None when it holds none (or the options name no writer)."""
        writer_id, writer_sequence = options.writer_id, options.writer_sequence
        if writer_id is None or writer_sequence is None:
            return None
        seen = _by_writer(session, row, writer_id, writer_sequence)
        if seen is None:
            return None
        count = session.scalar(select(func.count()).where(ChunkRow.commit_id == seen.id)) or 0
        return _commit(seen, count, duplicate=True)

    @staticmethod
    def _next_time(session: Session, row: StreamRow) -> int:
        """The time of the locked stream's next commit: now, but strictly after its newest commit's (TIMESTAMP AS
        OF and change feeds order commits by it, whatever the clock does)."""
        previous = session.scalar(
            select(CommitRow.created_at).where(CommitRow.stream_id == row.id, CommitRow.number == row.last_commit)
        )
        return now_ms() if previous is None else max(now_ms(), previous + 1)

    def _commit_in(self, session: Session, scope: str, row: StreamRow, chunks: Sequence[Chunk],
                   options: CommitOptions, check: CheckCommit, created_at: int) -> Commit:
        """Add ``chunks`` as the next commit of the locked stream ``row`` at ``created_at``, in ``session``."""
        stream = row.name
        table = session.get(TableRow, row.id)
        record = None if table is None else _table_record(session, row, table, scope)
        check(_stream(row, scope), record, self._groups_in(session))
        removed = self._live_chunks(session, row, options.removes)
        if options.kind == COMPACTION:
            later = [c.path for c in removed if c.sequence > (options.base_cut or 0)]
            if later:
                raise BadRequest(
                    f"a compaction with base cut {options.base_cut} cannot remove chunk {later[0]!r}, "
                    "whose changes sort after that cut"
                )
        number = row.last_commit + 1
        commit = CommitRow(
            stream_id=row.id,
            number=number,
            overwrite=options.kind == OVERWRITE,
            kind=options.kind,
            read_cut=options.read_cut,
            base_cut=options.base_cut,
            writer_id=options.writer_id,
            writer_sequence=options.writer_sequence,
            event_count=sum(c.event_count for c in chunks),
            bytes=sum(c.bytes for c in chunks),
            properties=dict(options.properties),
            created_at=created_at,
        )
        session.add(commit)
        session.flush()
        if options.kind == OVERWRITE:
            session.execute(
                update(ChunkRow)
                .where(ChunkRow.stream_id == row.id, ChunkRow.removed_at.is_(None))
                .values(removed_at=number)
            )
        ids = [c.id for c in removed]
        for i in range(0, len(ids), _BATCH):
            session.execute(update(ChunkRow).where(ChunkRow.id.in_(ids[i : i + _BATCH])).values(removed_at=number))
        sequence = options.base_cut if options.kind == COMPACTION and options.base_cut is not None else number
        session.add_all(
            ChunkRow(
                stream_id=row.id,
                commit_id=commit.id,
                commit_number=number,
                path=c.path,
                kind=c.kind,
                segment=c.segment,
                event_count=c.event_count,
                bytes=c.bytes,
                encoding_ids=list(c.encoding_ids),
                min_event_time=c.min_event_time,
                max_event_time=c.max_event_time,
                stats=c.stats,
                sequence=sequence,
                removed_at=None,
                partition=c.partition,
            )
            for c in chunks
        )
        row.last_commit = number
        try:
            session.flush()
        except IntegrityError:
            raise Conflict(f"a chunk of this commit is already committed to {scope}.{stream}") from None
        return _commit(commit, len(chunks))

    def find_commit(self, scope: str, stream: str, writer_id: str, writer_sequence: int) -> WriterCommit | None:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            found = _by_writer(session, row, writer_id, writer_sequence)
            if found is None:
                return None
            query = select(ChunkRow.path).where(ChunkRow.commit_id == found.id).order_by(ChunkRow.id)
            paths = tuple(session.scalars(query))
            return WriterCommit(_commit(found, len(paths)), paths)

    def commits(self, scope: str, stream: str, after: int, limit: int) -> list[Commit]:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            counts = (
                select(ChunkRow.commit_id, func.count().label("n"))
                .where(ChunkRow.stream_id == row.id)
                .group_by(ChunkRow.commit_id)
                .subquery()
            )
            rows = session.execute(
                select(CommitRow, counts.c.n)
                .outerjoin(counts, counts.c.commit_id == CommitRow.id)
                .where(CommitRow.stream_id == row.id, CommitRow.number > after)
                .order_by(CommitRow.number)
                .limit(limit)
            ).all()
            return [_commit(c, n or 0) for c, n in rows]

    def snapshot(self, scope: str, stream: str, cut: int | None, as_of_time: int | None, after: int | None) -> Snapshot:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            current = _stream(row, scope)
            if as_of_time is not None:
                found = session.scalar(
                    select(func.max(CommitRow.number)).where(
                        CommitRow.stream_id == row.id, CommitRow.created_at <= as_of_time
                    )
                )
                if found is None:
                    raise BadRequest(f"stream {scope}.{stream} has no commit at or before {as_of_time}")
                cut = found
            cut = check_cut(current, row.last_commit if cut is None else cut)
            if after is not None:
                # A streaming read: what the commits after its position added, compactions aside
                # (they change no row), whether or not a later commit removed it.
                check_after(current, after)
                first = first_visible(current, after, None)
                query = (
                    select(ChunkRow)
                    .join(CommitRow, CommitRow.id == ChunkRow.commit_id)
                    .where(
                        ChunkRow.stream_id == row.id,
                        ChunkRow.commit_number >= first,
                        ChunkRow.commit_number <= cut,
                        CommitRow.kind != COMPACTION,
                    )
                )
            else:
                check_retained(current, cut)
                query = select(ChunkRow).where(
                    ChunkRow.stream_id == row.id,
                    ChunkRow.commit_number > row.truncated_at,
                    ChunkRow.commit_number <= cut,
                    or_(ChunkRow.removed_at.is_(None), ChunkRow.removed_at > cut),
                )
            chunks = session.scalars(query.order_by(*_CHUNK_ORDER)).all()
            return Snapshot(cut, [_chunk(c) for c in chunks])

    def changes(self, scope: str, stream: str, after: int, to: int | None) -> list[Change]:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            current = _stream(row, scope)
            to = check_cut(current, row.last_commit if to is None else to)
            check_retained(current, after)
            if after > to:
                raise BadRequest(f"a change feed runs forward: after {after} is past to {to}")
            first = max(after, row.truncated_at)
            commits = session.scalars(
                select(CommitRow)
                .where(
                    CommitRow.stream_id == row.id,
                    CommitRow.number > first,
                    CommitRow.number <= to,
                    CommitRow.kind != COMPACTION,
                )
                .order_by(CommitRow.number)
            ).all()
            if not commits:
                return []
            touched = session.scalars(
                select(ChunkRow)
                .where(
                    ChunkRow.stream_id == row.id,
                    ChunkRow.commit_number > row.truncated_at,
                    or_(
                        and_(ChunkRow.commit_number > first, ChunkRow.commit_number <= to),
                        and_(ChunkRow.removed_at > first, ChunkRow.removed_at <= to),
                    ),
                )
                .order_by(*_CHUNK_ORDER)
            ).all()
            added: dict[int, list[Chunk]] = {}
            removed: dict[int, list[Chunk]] = {}
            for c in touched:
                if first < c.commit_number <= to:
                    added.setdefault(c.commit_number, []).append(_chunk(c))
                if c.removed_at is not None and first < c.removed_at <= to:
                    removed.setdefault(c.removed_at, []).append(_chunk(c))
            return [
                Change(c.number, c.kind, c.created_at, c.read_cut, added.get(c.number, []), removed.get(c.number, []))
                for c in commits
            ]

    def chunk_paths(self, scope: str, stream: str) -> set[str]:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            # Every cut from the oldest a reader or the retention keeps is readable; a chunk removed
            # at or before that floor is visible at none of them (nor is a truncated one).
            oldest_reader = session.scalar(select(func.min(ReaderRow.offset)).where(ReaderRow.stream_id == row.id))
            floor = row.retained_from if oldest_reader is None else min(row.retained_from, oldest_reader)
            return set(
                session.scalars(
                    select(ChunkRow.path).where(
                        ChunkRow.stream_id == row.id,
                        ChunkRow.commit_number > row.truncated_at,
                        or_(ChunkRow.removed_at.is_(None), ChunkRow.removed_at > floor),
                    )
                )
            )

    # -- retention and readers ------------------------------------------------------------------

    @retried
    def expire(self, scope: str, stream: str, older_than: int | None, decide: DecideExpiry) -> Stream:
        with self._write() as session:
            row = self._stream_row(session, scope, stream, lock=True)
            newest_older = None
            if older_than is not None:
                newest_older = session.scalar(
                    select(func.max(CommitRow.number)).where(
                        CommitRow.stream_id == row.id, CommitRow.created_at < older_than
                    )
                ) or 0
            oldest_reader = session.scalar(select(func.min(ReaderRow.offset)).where(ReaderRow.stream_id == row.id))
            row.retained_from = decide(_stream(row, scope), newest_older, oldest_reader)
            return _stream(row, scope)

    @retried
    def set_reader(self, scope: str, stream: str, name: str, offset: int, check: Callable[[Stream], None]) -> Reader:
        with self._write() as session:
            row = self._stream_row(session, scope, stream, lock=True)
            check(_stream(row, scope))
            reader = session.scalars(
                select(ReaderRow).where(ReaderRow.stream_id == row.id, ReaderRow.name == name)
            ).one_or_none()
            if reader is None:
                reader = ReaderRow(stream_id=row.id, name=name, offset=offset, updated_at=now_ms())
                session.add(reader)
            else:
                reader.offset, reader.updated_at = offset, now_ms()
            session.flush()
            return _reader(reader)

    def readers(self, scope: str, stream: str) -> list[Reader]:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            rows = session.scalars(select(ReaderRow).where(ReaderRow.stream_id == row.id).order_by(ReaderRow.name))
            return [_reader(r) for r in rows]

    def get_reader(self, scope: str, stream: str, name: str) -> Reader:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            return _reader(self._reader_row(session, row, scope, name))

    @retried
    def delete_reader(self, scope: str, stream: str, name: str) -> None:
        with self._write() as session:
            row = self._stream_row(session, scope, stream, lock=True)
            session.delete(self._reader_row(session, row, scope, name))

    @staticmethod
    def _reader_row(session: Session, row: StreamRow, scope: str, name: str) -> ReaderRow:
        found = session.scalars(
            select(ReaderRow).where(ReaderRow.stream_id == row.id, ReaderRow.name == name)
        ).one_or_none()
        if found is None:
            raise ReaderNotFound(f"no reader {name!r} of stream {scope}.{row.name}")
        return found
