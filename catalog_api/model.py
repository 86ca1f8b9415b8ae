"""The catalog's domain objects (their JSON shapes are the wire models of catalog_api.api.models)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry.model import Compatibility, VersionInfo

#: Chunk kinds: event files written by producers, Parquet files written by Spark.
CHUNK_KINDS = ("events", "columnar")
#: Table formats, as Spark's USING clause names them, and the registry format of each.
TABLE_FORMATS = {"avro": "Avro", "protobuf": "Protobuf", "json": "Json"}


@dataclass(frozen=True)
class Scope:
    """A scope: a Spark database and the registry namespace of the same name."""

    name: str
    comment: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    created_at: int = 0


@dataclass(frozen=True)
class StreamConfig:
    """How a stream is laid out and how long its data is kept."""

    segments: int = 1
    retention_ms: int | None = None
    retention_bytes: int | None = None


@dataclass(frozen=True)
class Stream:
    """A stream: the commits of chunk files under one location."""

    scope: str
    name: str
    location: str
    config: StreamConfig
    sealed: bool
    truncated_at: int
    last_commit: int
    created_at: int
    #: whether the server gave the location (and so may purge it); see catalog_api/locations.py
    managed: bool = False


@dataclass(frozen=True)
class Table:
    """A table: a stream plus its schema group, with the Spark schema of the latest version."""

    scope: str
    name: str
    stream: Stream
    format: str
    type_name: str
    schema: dict[str, Any]
    schema_version: VersionInfo
    compatibility: Compatibility
    comment: str
    properties: dict[str, str]
    version: int


@dataclass(frozen=True)
class Chunk:
    """A chunk file: where it is (relative to the stream), what it holds, its statistics."""

    path: str
    kind: str
    segment: int = 0
    event_count: int = 0
    bytes: int = 0
    encoding_ids: tuple[int, ...] = ()
    min_event_time: int | None = None
    max_event_time: int | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    commit: int = 0


@dataclass(frozen=True)
class Commit:
    """One commit of a stream, and whether this request repeated an earlier one."""

    number: int
    overwrite: bool
    writer_id: str | None
    writer_sequence: int | None
    event_count: int
    bytes: int
    chunk_count: int
    created_at: int
    properties: dict[str, str] = field(default_factory=dict)
    duplicate: bool = False


@dataclass(frozen=True)
class Snapshot:
    """The chunks visible at a stream cut (or added after a position, for streaming reads)."""

    cut: int
    chunks: list[Chunk]
