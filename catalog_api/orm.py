"""Catalog tables: scopes, streams, table metadata, commits and their chunks; and who may use them
(principals and grants).

They are declared on the shared declarative base (one database, one Alembic history).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from registry.db import NEVER_REUSED, Base


class ScopeRow(Base):
    """A scope: a Spark database, and the registry namespace of the same name."""

    __tablename__ = "scopes"
    __table_args__ = (NEVER_REUSED,)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    comment: Mapped[str] = mapped_column(Text, default="")
    properties: Mapped[dict[str, Any]]
    created_at: Mapped[int] = mapped_column(BigInteger)


class StreamRow(Base):
    """A stream: an ordered list of commits of chunk files under one location."""

    __tablename__ = "streams"
    __table_args__ = (UniqueConstraint("scope_id", "name"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    scope_id: Mapped[int] = mapped_column(ForeignKey("scopes.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    location: Mapped[str] = mapped_column(Text)
    #: the server gave the location (``<warehouse>/<scope>/<stream>``): purge may delete its files;
    #: false for an explicit location, whose files are never purged (catalog_api/locations.py)
    managed: Mapped[bool] = mapped_column(Boolean)
    segments: Mapped[int]
    retention_ms: Mapped[int | None] = mapped_column(BigInteger)
    retention_bytes: Mapped[int | None] = mapped_column(BigInteger)
    sealed: Mapped[bool] = mapped_column(Boolean, default=False)
    #: commits up to this number are cut off (truncation); 0 = nothing cut
    truncated_at: Mapped[int] = mapped_column(default=0)
    #: the newest commit number (0 = none yet); commits are numbered from 1
    last_commit: Mapped[int] = mapped_column(default=0)
    #: the oldest cut that may still be read (0 = all); expire moves it forward
    retained_from: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[int] = mapped_column(BigInteger)


class TableRow(Base):
    """A table: the view of a stream plus its schema group, as Spark sees it.

    The table's schema is not here: it is the latest version of its group (one source of truth).
    """

    __tablename__ = "tables"

    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id", ondelete="CASCADE"), primary_key=True)
    format: Mapped[str] = mapped_column(String(32))
    comment: Mapped[str] = mapped_column(Text, default="")
    properties: Mapped[dict[str, Any]]
    #: bumped by every change of the table's metadata, for optimistic concurrency
    version: Mapped[int]
    updated_at: Mapped[int] = mapped_column(BigInteger)
    #: the current partition spec (0: unpartitioned, which has no row in ``partition_specs``)
    spec_id: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    #: the highest partition field id any of the table's specs used (partition fields count from 1000)
    last_partition_field_id: Mapped[int] = mapped_column(default=999, server_default=text("999"))


class PartitionSpecRow(Base):
    """One partition spec of a table (docs/partitioning.md): its fields as JSON (``PartitionSpec.to_json``'s
    ``fields``). Specs are only ever added: old chunks keep naming theirs."""

    __tablename__ = "partition_specs"

    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id", ondelete="CASCADE"), primary_key=True)
    spec_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    fields: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[int] = mapped_column(BigInteger)


class CommitRow(Base):
    """One atomic commit of chunks to a stream."""

    __tablename__ = "commits"
    __table_args__ = (
        UniqueConstraint("stream_id", "number"),
        UniqueConstraint("stream_id", "writer_id", "writer_sequence"),
        CheckConstraint("kind IN ('append', 'overwrite', 'row-level', 'compaction')", name="kind"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id", ondelete="CASCADE"))
    number: Mapped[int]
    #: true exactly when ``kind`` is overwrite (kept for the clients that read it)
    overwrite: Mapped[bool] = mapped_column(Boolean, default=False)
    #: append, overwrite, row-level or compaction (docs/changelog-tables.md)
    kind: Mapped[str] = mapped_column(String(16))
    #: the cut a row-level commit read; the base cut of a compaction
    read_cut: Mapped[int | None]
    base_cut: Mapped[int | None]
    writer_id: Mapped[str | None] = mapped_column(String(255))
    writer_sequence: Mapped[int | None] = mapped_column(BigInteger)
    event_count: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    properties: Mapped[dict[str, Any]]
    created_at: Mapped[int] = mapped_column(BigInteger)


class ChunkRow(Base):
    """A chunk file made visible by a commit. Paths are relative to the stream's location."""

    __tablename__ = "chunks"
    __table_args__ = (
        UniqueConstraint("stream_id", "path"),
        Index("ix_chunks_stream_commit", "stream_id", "commit_number"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id", ondelete="CASCADE"))
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id", ondelete="CASCADE"), index=True)
    commit_number: Mapped[int]
    path: Mapped[str] = mapped_column(String(1024))
    kind: Mapped[str] = mapped_column(String(16))
    segment: Mapped[int]
    event_count: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    encoding_ids: Mapped[list[Any]] = mapped_column(JSON)
    min_event_time: Mapped[int | None] = mapped_column(BigInteger)
    max_event_time: Mapped[int | None] = mapped_column(BigInteger)
    stats: Mapped[dict[str, Any]]
    #: where the chunk's changes sort: its commit's number, or a compaction's base cut
    sequence: Mapped[int]
    #: the number of the commit that removed the chunk; NULL while it is live
    removed_at: Mapped[int | None]
    #: ``{"specId": n, "values": [...]}``: the partition of a partitioned table the chunk's rows are all in;
    #: NULL: unpartitioned (spec 0)
    partition: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))


class ReaderRow(Base):
    """A registered reader of a stream and the cut up to which it has read: expiry keeps it."""

    __tablename__ = "readers"
    __table_args__ = (UniqueConstraint("stream_id", "name"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    offset: Mapped[int]
    updated_at: Mapped[int] = mapped_column(BigInteger)


# -- access control ----------------------------------------------------------------------------------
# Principals and grants are here, beside the rows they guard, so that migrations and backups see them
# with the rest of the catalog (catalog_api/server/auth reads and writes them).


class PrincipalRow(Base):
    """A user (HTTP Basic) or an API token (Bearer): a principal whose credentials the database checks.

    OIDC subjects are not stored: their tokens carry who they are; grants may name them all the same.
    """

    __tablename__ = "principals"
    __table_args__ = (
        CheckConstraint("kind IN ('user', 'token')", name="kind"),
        CheckConstraint("role IS NULL OR role IN ('reader', 'writer', 'admin')", name="role"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    #: unique across users and tokens: a grant names either by it
    name: Mapped[str] = mapped_column(String(255), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    #: the permission everywhere (reader, writer, admin); NULL: only what grants give
    role: Mapped[str | None] = mapped_column(String(16))
    #: a user's argon2 password hash, or the SHA-256 (hex) of a token: never the secret itself
    secret_hash: Mapped[str] = mapped_column(String(255), unique=True)
    #: epoch ms after which a token no longer authenticates; NULL: never
    expires_at: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[int] = mapped_column(BigInteger)


class GrantRow(Base):
    """A permission given to one principal on one resource (``*``, ``namespace:NS``, ``group:NS/GROUP``).

    The principal is named rather than referenced, because OIDC subjects (``oidc:<sub>``) have no
    row; removing a user or token removes the grants naming it in the same transaction.
    """

    __tablename__ = "grants"
    __table_args__ = (
        UniqueConstraint("principal", "permission", "resource"),
        CheckConstraint("permission IN ('read', 'write', 'admin')", name="permission"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    principal: Mapped[str] = mapped_column(String(255), index=True)
    permission: Mapped[str] = mapped_column(String(16))
    resource: Mapped[str] = mapped_column(String(600))
    created_at: Mapped[int] = mapped_column(BigInteger)
