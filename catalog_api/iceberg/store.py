"""The rows an Iceberg view of a table is derived from: the stream's commits and every chunk it ever had,
read in one transaction, so that they agree with each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from catalog_api.errors import TableNotFound
from catalog_api.model import DELETES, Chunk
from catalog_api.orm import ChunkRow, CommitRow, ScopeRow, StreamRow


@dataclass(frozen=True)
class CommitFacts:
    """What the Iceberg view needs of one commit."""

    number: int
    kind: str
    created_at: int


@dataclass(frozen=True)
class StreamFacts:
    """A table's stream as of one read: its commits (oldest first) and chunks (in commit order), the
    cuts hidden by truncation and expiry, and its newest commit."""

    commits: tuple[CommitFacts, ...]
    chunks: tuple[Chunk, ...]
    truncated_at: int
    retained_from: int
    last_commit: int


class SqlIcebergStore:
    """Reads of the catalog's own rows (the Iceberg view stores nothing of its own)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @staticmethod
    def _stream(session: Session, scope: str, name: str) -> StreamRow:
        row = session.scalars(
            select(StreamRow).join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
            .where(ScopeRow.name == scope, StreamRow.name == name)
        ).one_or_none()
        if row is None:
            raise TableNotFound(f"table {name!r} not found in scope {scope!r}")
        return row

    def facts(self, scope: str, name: str) -> StreamFacts:
        """The commits and chunks of the stream ``scope.name`` (TableNotFound if there is none)."""
        with Session(self._engine) as session, session.begin():
            stream = self._stream(session, scope, name)
            commits = session.execute(
                select(CommitRow.number, CommitRow.kind, CommitRow.created_at)
                .where(CommitRow.stream_id == stream.id).order_by(CommitRow.number)
            ).all()
            chunks = session.execute(
                select(ChunkRow.path, ChunkRow.kind, ChunkRow.commit_number, ChunkRow.removed_at, ChunkRow.sequence,
                       ChunkRow.event_count, ChunkRow.bytes, ChunkRow.partition, ChunkRow.encoding_ids)
                .where(ChunkRow.stream_id == stream.id).order_by(ChunkRow.commit_number, ChunkRow.id)
            ).all()
            # Statistics of position deletes only: their file_path bounds say they are Iceberg's too.
            stats: dict[str, dict[str, Any]] = dict(session.execute(
                select(ChunkRow.path, ChunkRow.stats).where(ChunkRow.stream_id == stream.id, ChunkRow.kind == DELETES)
            ).all())
            return StreamFacts(
                commits=tuple(CommitFacts(n, k, t) for n, k, t in commits),
                chunks=tuple(
                    Chunk(path=p, kind=k, commit=c, removed_at=r, sequence=s, event_count=e, bytes=b,
                          partition=None if part is None else dict(part), stats=dict(stats.get(p) or {}),
                          encoding_ids=tuple(int(i) for i in encodings or ()))
                    for p, k, c, r, s, e, b, part, encodings in chunks
                ),
                truncated_at=stream.truncated_at,
                retained_from=stream.retained_from,
                last_commit=stream.last_commit,
            )
