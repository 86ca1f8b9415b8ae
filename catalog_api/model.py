"""The catalog's domain objects (their JSON shapes are the wire models of catalog_api.api.models)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog_api.constraints import CheckConstraint
from catalog_api.locations import safe_relative
from catalog_api.partitioning.spec import UNPARTITIONED, PartitionSpec
from registry.errors import BadRequest
from registry.model import Compatibility, VersionInfo

#: Chunk kinds: event files written by producers, Parquet files written by Spark, and position
#: deletes (Parquet files of (path, pos) naming rows of other chunks; docs/changelog-tables.md).
EVENTS, COLUMNAR, DELETES = "events", "columnar", "deletes"
CHUNK_KINDS = (EVENTS, COLUMNAR, DELETES)
#: Iceberg's reserved field ids of a position delete file's ``file_path`` and ``pos``, which position-deletes
#: chunks carry too (catalog_api.streams.row_kinds), so that Iceberg readers apply them as they are.
ICEBERG_FILE_PATH_ID, ICEBERG_POS_ID = 2147483546, 2147483545
#: Commit kinds (docs/changelog-tables.md, "Commits").
APPEND, OVERWRITE, ROW_LEVEL, COMPACTION = "append", "overwrite", "row-level", "compaction"
COMMIT_KINDS = (APPEND, OVERWRITE, ROW_LEVEL, COMPACTION)
#: Table properties of changing tables (the same names as catalog_api.streams.row_kinds, which the
#: server does not import: it pulls in pyarrow).
PRIMARY_KEY_PROPERTY = "primary-key"
SEQUENCE_FIELD_PROPERTY = "sequence.field"
MERGE_ENGINE_PROPERTY = "merge-engine"
MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
#: The folder under a stream's location that holds its Iceberg metadata (catalog_api/iceberg/): no chunk
#: lists its files, and garbage collection leaves them alone.
METADATA_FOLDER = "metadata"
#: The registry group property that mirrors a table's primary key.
GROUP_PRIMARY_KEY = "streamcat.primary-key"


def primary_key(properties: dict[str, str]) -> tuple[str, ...]:
    """The key columns a table's properties declare (empty: an append table)."""
    raw = properties.get(PRIMARY_KEY_PROPERTY, "")
    return tuple(part.strip() for part in raw.split(",") if part.strip())
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
    #: the oldest cut that may still be read (0: all); moved forward by expire
    retained_from: int = 0


@dataclass(frozen=True)
class TableEntry:
    """A table as a listing of names shows it: what its own rows say, without its schema (which
    its group holds)."""

    name: str
    format: str
    last_commit: int
    properties: dict[str, str]


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
    #: the key columns of a primary-key table (its 'primary-key' property); empty for append tables
    primary_key: tuple[str, ...] = ()
    #: the current partition spec (docs/partitioning.md); spec 0, without fields: unpartitioned
    partition_spec: PartitionSpec = UNPARTITIONED
    #: every spec the table has had, by id, spec 0 first (older chunks keep naming theirs)
    partition_specs: tuple[PartitionSpec, ...] = (UNPARTITIONED,)
    #: the CHECK constraints in force (docs/data-contracts.md): declared ones, then CEL rules translated
    checks: tuple[CheckConstraint, ...] = ()
    #: the rule set of the schema version (Confluent's JSON; None: none)
    rule_set: Mapping[str, Any] | None = None


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
    #: where the chunk's changes sort (docs/changelog-tables.md, "Order of changes"): the number of
    #: the commit that added it, or a compaction's base cut; the server sets it (0 in a request)
    sequence: int = 0
    #: the commit that removed the chunk (an overwrite, a compaction, a row-level commit); None: live
    removed_at: int | None = None
    #: ``{"specId": n, "values": [...]}``: the partition of the table's spec n that every row of the chunk
    #: is in (docs/partitioning.md); None: unpartitioned
    partition: dict[str, Any] | None = None


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
    kind: str = APPEND
    #: the cut a row-level commit's scan read (an overwrite may record one too)
    read_cut: int | None = None
    #: the cut a compaction's output holds the state of
    base_cut: int | None = None


@dataclass(frozen=True)
class CommitOptions:
    """What a commit request says besides its chunks (docs/changelog-tables.md, "Commits"), and the rules of
    how those fit together and with the chunks (:meth:`check`). The one list of a commit's fields: the wire
    model ``CommitRequest`` converts to and from it, and ``CatalogService.commit`` and
    ``CatalogClient.commit`` take it."""

    #: replace all that came before (a commit kind of its own: ``kind`` is then overwrite)
    overwrite: bool = False
    #: append, overwrite, row-level or compaction; empty: overwrite when ``overwrite`` is set, else append
    kind: str = ""
    #: with ``writer_sequence``: a second commit of the same pair is acknowledged and does nothing
    writer_id: str | None = None
    writer_sequence: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    #: the cut a row-level commit's scan read (an overwrite may record one too)
    read_cut: int | None = None
    #: the cut a compaction's output holds the state of
    base_cut: int | None = None
    #: compare-and-set: refuse the commit unless the stream's newest commit is this one
    expected_last_commit: int | None = None
    #: paths of live chunks the commit removes (row-level and compaction commits)
    removes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", OVERWRITE if self.overwrite else APPEND)
        object.__setattr__(self, "removes", tuple(self.removes))
        object.__setattr__(self, "properties", dict(self.properties or {}))

    def check(self, chunks: Sequence[Chunk]) -> None:
        """Refuse (BadRequest naming what does not fit) options that do not fit together or with ``chunks``."""
        kind, removes = self.kind, self.removes
        if kind not in COMMIT_KINDS:
            raise BadRequest(f"unknown commit kind {kind!r}; expected one of {', '.join(COMMIT_KINDS)}")
        if self.overwrite and kind != OVERWRITE:
            raise BadRequest(f"overwrite is a commit kind of its own; a {kind} commit cannot overwrite")
        if not chunks and not (kind == OVERWRITE or (kind in (ROW_LEVEL, COMPACTION) and removes)):
            raise BadRequest(
                "a commit needs at least one chunk (or overwrite, to empty the stream; or, for a row-level commit "
                "or a compaction, chunks to remove)"
            )
        if (self.writer_id is None) != (self.writer_sequence is None):
            raise BadRequest("writerId and writerSequence go together")
        paths = [c.path for c in chunks]
        outside = [p for p in (*paths, *removes) if not safe_relative(p)]
        if outside:
            raise BadRequest(f"chunk path {outside[0]!r} must be relative to the stream's location, without '..'")
        if len(set(paths)) != len(paths):
            raise BadRequest("a commit lists the same chunk path twice")
        if removes and kind not in (ROW_LEVEL, COMPACTION):
            raise BadRequest(f"only row-level commits and compactions remove chunks by name, not a {kind} commit")
        if len(set(removes)) != len(removes):
            raise BadRequest("a commit removes the same chunk path twice")
        both = set(paths) & set(removes)
        if both:
            raise BadRequest(f"a commit both adds and removes chunk {sorted(both)[0]!r}")
        if kind == ROW_LEVEL and self.read_cut is None:
            raise BadRequest("a row-level commit records the cut its scan read: readCut is missing")
        if self.read_cut is not None and kind not in (ROW_LEVEL, OVERWRITE):
            raise BadRequest(f"readCut belongs to row-level commits (and overwrites), not to a {kind} commit")
        if kind == COMPACTION and self.base_cut is None:
            raise BadRequest("a compaction holds the state at a cut: baseCut is missing")
        if self.base_cut is not None and kind != COMPACTION:
            raise BadRequest(f"baseCut belongs to compactions, not to a {kind} commit")
        for name, value in (("readCut", self.read_cut), ("baseCut", self.base_cut),
                            ("expectedLastCommit", self.expected_last_commit)):
            if value is not None and value < 0:
                raise BadRequest(f"{name} cannot be negative")


@dataclass(frozen=True)
class TableCommit:
    """One table's part of a commit of several tables (``CatalogService.commit_tables``): its chunks and
    options, as a commit of that table alone would have them."""

    scope: str
    stream: str
    chunks: Sequence[Chunk]
    options: CommitOptions


@dataclass(frozen=True)
class WriterCommit:
    """The commit a writer made with one sequence, and the paths of the chunks it added: what a writer whose
    answer was lost asks for, to tell whether its commit was made and which of its files are the table's."""

    commit: Commit
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    """One non-compaction commit as a change feed reads it: the chunks it added and removed."""

    number: int
    kind: str
    created_at: int
    read_cut: int | None
    added: list[Chunk]
    removed: list[Chunk]


@dataclass(frozen=True)
class Reader:
    """A registered reader of a stream (a streaming query, a change-feed consumer): the cut up to
    which it has committed its reading. Expiry keeps that cut and everything after it."""

    name: str
    offset: int
    updated_at: int


@dataclass(frozen=True)
class Snapshot:
    """The chunks visible at a stream cut (or added after a position, for streaming reads)."""

    cut: int
    chunks: list[Chunk]


@dataclass(frozen=True)
class Plan:
    """A planned scan: the chunks at a cut that may hold a row passing the filters, and what was skipped."""

    cut: int
    chunks: list[Chunk]
    chunks_skipped: int = 0
    bytes_skipped: int = 0


@dataclass(frozen=True)
class PartitionSummary:
    """One partition of a spec and what the live chunks in it hold."""

    values: tuple[Any, ...]
    chunk_count: int
    event_count: int
    bytes: int


@dataclass(frozen=True)
class Partitions:
    """The partitions of a table's current spec (its sources under their current names) that its live
    chunks are in, sorted by values."""

    spec: PartitionSpec
    partitions: list[PartitionSummary]
