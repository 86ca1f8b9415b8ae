"""The catalog store on SQLAlchemy, sharing the registry's engine and transactions."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from catalog_api.errors import ScopeNotEmpty, ScopeNotFound, StreamNotFound, StreamSealed, TableNotFound
from catalog_api.model import Chunk, Commit, Scope, Snapshot, Stream, StreamConfig, Table
from catalog_api.orm import ChunkRow, CommitRow, ScopeRow, StreamRow, TableRow
from catalog_api.store import CatalogStore, Page, RegisterSchema, TableSpec, UpdateTable
from registry.db import Transactions, now_ms
from registry.errors import AlreadyExists, BadRequest, Conflict, WriteConflict
from registry.ids import GroupName, Namespace, SchemaId, TypeName, Version
from registry.model import VersionInfo
from registry.pagination import decode_token
from registry.store.orm import EncodingRow, GroupRow
from registry.store.sql import SqlRegistryStore


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
    )


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
    )


class SqlCatalogStore(CatalogStore):
    """CatalogStore on the registry's engine; group work joins the same transactions."""

    def __init__(self, engine: Engine, registry: SqlRegistryStore) -> None:
        self.engine = engine
        self.registry = registry
        tx = Transactions(engine)
        self._read, self._write = tx.read, tx.write

    # -- lookups ------------------------------------------------------------------------------

    @staticmethod
    def _scope_row(session: Session, name: str, *, lock: bool = False) -> ScopeRow:
        query = select(ScopeRow).where(ScopeRow.name == name)
        row = session.scalars(query.with_for_update() if lock else query).one_or_none()
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
        table = session.get(TableRow, stream.id)
        if table is None:
            raise TableNotFound(f"{scope}.{name} is a stream, not a table")
        return stream, table

    def _table(self, session: Session, scope: str, stream: StreamRow, table: TableRow) -> Table:
        group = self.registry.bound(session).get_group(Namespace(scope), GroupName(stream.name))
        return Table(
            scope=scope,
            name=stream.name,
            stream=_stream(stream, scope),
            format=table.format,
            type_name=table.type_name,
            schema=dict(table.schema),
            schema_version=VersionInfo(
                TypeName(table.type_name), Version(table.schema_version), SchemaId(table.schema_id)
            ),
            compatibility=group.compatibility,
            comment=table.comment,
            properties=dict(table.properties),
            version=table.version,
        )

    # -- scopes --------------------------------------------------------------------------------

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

    def list_scopes(self, token: str | None, limit: int) -> Page:
        after = decode_token(token)
        with self._read() as session:
            rows = session.scalars(select(ScopeRow).where(ScopeRow.id > after).order_by(ScopeRow.id).limit(limit)).all()
        return Page([_scope(r) for r in rows], str(rows[-1].id if rows else after))

    def alter_scope(
        self, name: str, set_properties: dict[str, str], remove: Sequence[str], comment: str | None
    ) -> Scope:
        with self._write() as session:
            row = self._scope_row(session, name, lock=True)
            properties = {k: v for k, v in row.properties.items() if k not in remove}
            properties.update(set_properties)
            row.properties = properties
            if comment is not None:
                row.comment = comment
            return _scope(row)

    def delete_scope(self, name: str, cascade: bool) -> list[Stream]:
        with self._write() as session:
            row = self._scope_row(session, name, lock=True)
            streams = session.scalars(select(StreamRow).where(StreamRow.scope_id == row.id)).all()
            groups = session.scalars(select(GroupRow).where(GroupRow.namespace == name)).all()
            if (streams or groups) and not cascade:
                raise ScopeNotEmpty(
                    f"scope {name!r} holds {len(streams)} streams and {len(groups)} groups; delete with cascade"
                )
            gone = [_stream(s, name) for s in streams]
            for group in groups:
                session.delete(group)
            session.delete(row)
            return gone

    # -- streams ---------------------------------------------------------------------------------

    def _insert_stream(self, session: Session, scope: str, name: str, config: StreamConfig, location: str) -> StreamRow:
        scope_row = self._scope_row(session, scope)
        row = StreamRow(
            scope_id=scope_row.id,
            name=name,
            location=location,
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

    def create_stream(self, scope: str, name: str, config: StreamConfig, location: str) -> Stream:
        with self._write() as session:
            return _stream(self._insert_stream(session, scope, name, config, location), scope)

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

    def seal_stream(self, scope: str, name: str) -> Stream:
        with self._write() as session:
            row = self._stream_row(session, scope, name, lock=True)
            row.sealed = True
            return _stream(row, scope)

    def truncate_stream(self, scope: str, name: str, cut: int) -> Stream:
        with self._write() as session:
            row = self._stream_row(session, scope, name, lock=True)
            if not row.truncated_at <= cut <= row.last_commit:
                raise BadRequest(
                    f"stream cut {cut} must lie between the current truncation {row.truncated_at} "
                    f"and the latest commit {row.last_commit}"
                )
            row.truncated_at = cut
            return _stream(row, scope)

    def delete_stream(self, scope: str, name: str) -> Stream:
        with self._write() as session:
            row = self._stream_row(session, scope, name, lock=True)
            if session.get(TableRow, row.id) is not None:
                raise Conflict(f"stream {scope}.{name} backs a table; drop the table instead")
            gone = _stream(row, scope)
            session.delete(row)
            return gone

    # -- tables ----------------------------------------------------------------------------------

    def create_table(
        self, scope: str, name: str, config: StreamConfig, location: str, spec: TableSpec, register: RegisterSchema
    ) -> Table:
        with self._write() as session:
            stream = self._insert_stream(session, scope, name, config, location)
            version = register(self.registry.bound(session))
            table = TableRow(
                stream_id=stream.id,
                format=spec.format,
                type_name=version.type,
                schema=spec.schema,
                schema_id=version.id,
                schema_version=version.version,
                comment=spec.comment,
                properties=dict(spec.properties),
                version=1,
                updated_at=now_ms(),
            )
            session.add(table)
            session.flush()
            return self._table(session, scope, stream, table)

    def get_table(self, scope: str, name: str) -> Table:
        with self._read() as session:
            return self._table(session, scope, *self._table_parts(session, scope, name))

    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
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
            tables = [self._table(session, scope, s, t) for s, t in rows]
        return Page(tables, str(rows[-1][0].id if rows else after))

    def alter_table(self, scope: str, name: str, expected_version: int | None, update: UpdateTable) -> Table:
        with self._write() as session:
            stream, table = self._table_parts(session, scope, name, lock=True)
            if expected_version is not None and expected_version != table.version:
                raise WriteConflict(
                    f"table {scope}.{name} is at version {table.version}, not {expected_version}; reload and retry"
                )
            current = self._table(session, scope, stream, table)
            change = update(current, self.registry.bound(session))
            table.schema = change.schema
            if change.schema_version is not None:
                table.schema_id = change.schema_version.id
                table.schema_version = change.schema_version.version
                table.type_name = change.schema_version.type
            table.comment = change.comment
            table.properties = dict(change.properties)
            table.version += 1
            table.updated_at = now_ms()
            session.flush()
            return self._table(session, scope, stream, table)

    def drop_table(self, scope: str, name: str) -> Stream:
        with self._write() as session:
            stream, _table = self._table_parts(session, scope, name, lock=True)
            gone = _stream(stream, scope)
            self.registry.bound(session).delete_group(Namespace(scope), GroupName(name))
            session.delete(stream)
            return gone

    # -- commits ---------------------------------------------------------------------------------

    def commit(
        self,
        scope: str,
        stream: str,
        chunks: Sequence[Chunk],
        *,
        overwrite: bool,
        writer_id: str | None,
        writer_sequence: int | None,
        properties: dict[str, str],
    ) -> Commit:
        with self._write() as session:
            row = self._stream_row(session, scope, stream, lock=True)
            if writer_id is not None and writer_sequence is not None:
                seen = session.scalars(
                    select(CommitRow).where(
                        CommitRow.stream_id == row.id,
                        CommitRow.writer_id == writer_id,
                        CommitRow.writer_sequence == writer_sequence,
                    )
                ).one_or_none()
                if seen is not None:
                    count = session.scalar(select(func.count()).where(ChunkRow.commit_id == seen.id)) or 0
                    return _commit(seen, count, duplicate=True)
            if row.sealed:
                raise StreamSealed(f"stream {scope}.{stream} is sealed")
            self._check_chunks(session, row, chunks)
            commit = CommitRow(
                stream_id=row.id,
                number=row.last_commit + 1,
                overwrite=overwrite,
                writer_id=writer_id,
                writer_sequence=writer_sequence,
                event_count=sum(c.event_count for c in chunks),
                bytes=sum(c.bytes for c in chunks),
                properties=dict(properties),
                created_at=now_ms(),
            )
            session.add(commit)
            session.flush()
            session.add_all(
                ChunkRow(
                    stream_id=row.id,
                    commit_id=commit.id,
                    commit_number=commit.number,
                    path=c.path,
                    kind=c.kind,
                    segment=c.segment,
                    event_count=c.event_count,
                    bytes=c.bytes,
                    encoding_ids=list(c.encoding_ids),
                    min_event_time=c.min_event_time,
                    max_event_time=c.max_event_time,
                    stats=c.stats,
                )
                for c in chunks
            )
            row.last_commit = commit.number
            try:
                session.flush()
            except IntegrityError:
                raise Conflict(f"a chunk of this commit is already committed to {scope}.{stream}") from None
            return _commit(commit, len(chunks))

    def _check_chunks(self, session: Session, stream: StreamRow, chunks: Sequence[Chunk]) -> None:
        paths = [c.path for c in chunks]
        if len(set(paths)) != len(paths):
            raise BadRequest("a commit lists the same chunk path twice")
        for c in chunks:
            if not 0 <= c.segment < stream.segments:
                raise BadRequest(f"chunk {c.path}: segment {c.segment} is not one of the stream's {stream.segments}")
        wanted = {e for c in chunks for e in c.encoding_ids}
        table = session.get(TableRow, stream.id)
        if wanted and table is not None:
            group = session.scalars(
                select(GroupRow)
                .join(ScopeRow, ScopeRow.name == GroupRow.namespace)
                .where(ScopeRow.id == stream.scope_id, GroupRow.name == stream.name)
            ).one()
            known = set(
                session.scalars(
                    select(EncodingRow.id).where(EncodingRow.group_id == group.id, EncodingRow.id.in_(wanted))
                )
            )
            if wanted - known:
                raise BadRequest(f"encoding ids {sorted(wanted - known)} are not encodings of group {stream.name!r}")

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
            if as_of_time is not None:
                found = session.scalar(
                    select(func.max(CommitRow.number)).where(
                        CommitRow.stream_id == row.id, CommitRow.created_at <= as_of_time
                    )
                )
                if found is None:
                    raise BadRequest(f"stream {scope}.{stream} has no commit at or before {as_of_time}")
                cut = found
            if cut is None:
                cut = row.last_commit
            if not 0 <= cut <= row.last_commit:
                raise BadRequest(f"stream cut {cut} is not between 0 and the latest commit {row.last_commit}")
            if after is not None:
                first = after + 1
            else:
                # An overwrite commit replaces all that came before it.
                base = session.scalar(
                    select(func.max(CommitRow.number)).where(
                        CommitRow.stream_id == row.id, CommitRow.overwrite.is_(True), CommitRow.number <= cut
                    )
                )
                first = base or 1
            first = max(first, row.truncated_at + 1)
            chunks = session.scalars(
                select(ChunkRow)
                .where(ChunkRow.stream_id == row.id, ChunkRow.commit_number >= first, ChunkRow.commit_number <= cut)
                .order_by(ChunkRow.commit_number, ChunkRow.id)
            ).all()
            return Snapshot(cut, [_chunk(c) for c in chunks])

    def chunk_paths(self, scope: str, stream: str) -> set[str]:
        with self._read() as session:
            row = self._stream_row(session, scope, stream)
            return set(
                session.scalars(
                    select(ChunkRow.path).where(ChunkRow.stream_id == row.id, ChunkRow.commit_number > row.truncated_at)
                )
            )
