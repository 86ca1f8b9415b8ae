"""The catalog's domain objects and their JSON shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry.errors import BadRequest
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

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "scopeName": self.name,
            "comment": self.comment,
            "properties": dict(self.properties),
            "createdAt": self.created_at,
        }


@dataclass(frozen=True)
class StreamConfig:
    """How a stream is laid out and how long its data is kept."""

    segments: int = 1
    retention_ms: int | None = None
    retention_bytes: int | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any] | None) -> StreamConfig:
        """From ``{"scalingPolicy": {"minSegments": n}, "retentionPolicy": {...}}`` (Pravega's shape)."""
        body = body or {}
        scaling = body.get("scalingPolicy") or {}
        retention = body.get("retentionPolicy") or {}
        return cls(
            segments=int(scaling.get("minSegments", 1)),
            retention_ms=retention.get("retentionTimeMillis"),
            retention_bytes=retention.get("retentionSizeBytes"),
        )

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        retention: dict[str, Any] = {}
        if self.retention_ms is not None:
            retention["retentionTimeMillis"] = self.retention_ms
        if self.retention_bytes is not None:
            retention["retentionSizeBytes"] = self.retention_bytes
        return {
            "scalingPolicy": {"type": "FIXED_NUM_SEGMENTS", "minSegments": self.segments},
            "retentionPolicy": retention,
        }


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

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "scopeName": self.scope,
            "streamName": self.name,
            "location": self.location,
            **self.config.to_json(),
            "streamState": "SEALED" if self.sealed else "ACTIVE",
            "truncatedAt": self.truncated_at,
            "lastCommit": self.last_commit,
            "createdAt": self.created_at,
        }


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

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "scopeName": self.scope,
            "tableName": self.name,
            "version": self.version,
            "format": self.format,
            "group": self.name,
            "typeName": self.type_name,
            "schema": self.schema,
            "schemaVersion": self.schema_version.to_json(),
            "compatibility": self.compatibility.to_json(),
            "comment": self.comment,
            "properties": dict(self.properties),
            "stream": self.stream.to_json(),
        }


def _optional_int(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    return None if value is None else int(value)


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

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Chunk:
        """From the REST shape (already validated against the OpenAPI component)."""
        path = body["path"]
        parts = path.split("/")
        if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts) or ":" in parts[0]:
            raise BadRequest(f"chunk path {path!r} must be relative to the stream's location, without '..'")
        return cls(
            path=path,
            kind=body["kind"],
            segment=int(body.get("segment") or 0),
            event_count=int(body["eventCount"]),
            bytes=int(body["bytes"]),
            encoding_ids=tuple(body.get("encodingIds") or ()),
            min_event_time=_optional_int(body, "minEventTime"),
            max_event_time=_optional_int(body, "maxEventTime"),
            stats=dict(body.get("stats") or {}),
            commit=int(body.get("commit") or 0),
        )

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "path": self.path,
            "kind": self.kind,
            "segment": self.segment,
            "eventCount": self.event_count,
            "bytes": self.bytes,
            "encodingIds": list(self.encoding_ids),
            "minEventTime": self.min_event_time,
            "maxEventTime": self.max_event_time,
            "stats": self.stats,
            "commit": self.commit,
        }


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

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "number": self.number,
            "overwrite": self.overwrite,
            "writerId": self.writer_id,
            "writerSequence": self.writer_sequence,
            "eventCount": self.event_count,
            "bytes": self.bytes,
            "chunkCount": self.chunk_count,
            "timestamp": self.created_at,
            "properties": dict(self.properties),
            "duplicate": self.duplicate,
        }


@dataclass(frozen=True)
class Snapshot:
    """The chunks visible at a stream cut (or added after a position, for streaming reads)."""

    cut: int
    chunks: list[Chunk]

    def to_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {"streamCut": self.cut, "chunks": [c.to_json() for c in self.chunks]}
