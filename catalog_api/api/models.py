"""The catalog's wire models: every JSON body of ``/v1/scopes/...``, declared once.

As in ``registry.api.models``: views read and answer with them, the OpenAPI document is
generated from them, ``catalog_api.client`` builds and checks with them, and conversion to
and from the domain objects (``catalog_api.model``) is here. No Flask, werkzeug or SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from catalog_api import changes as domain_changes
from catalog_api import model as domain
from catalog_api.model import CHUNK_KINDS, COMMIT_KINDS
from catalog_api.partitioning.spec import PartitionSpec as Spec
from catalog_api.partitioning.spec import with_current_names
from catalog_api.schema.spark import parse_atomic
from registry.api.models import Compatibility, VersionInfo
from registry.api.wire import (
    MAX_INT64,
    Flag,
    FromQueryText,
    Int32,
    Int64,
    Name,
    NullMeansDefault,
    Query,
    StringMap,
    WholeNumber,
    Wire,
    omitted,
)
from registry.errors import BadRequest

if TYPE_CHECKING:
    ChunkKind = str
    CommitKind = str
else:
    ChunkKind = Literal[CHUNK_KINDS]
    CommitKind = Literal[COMMIT_KINDS]

#: Stream cuts, commit numbers and times in query strings (and truncation's cut) stay below this.
MAX_CUT = 2**62
Count = Annotated[int, Field(ge=0, le=MAX_INT64), WholeNumber]
Cut = Annotated[int, Field(ge=0, le=MAX_CUT), WholeNumber]
Positive = Annotated[int, Field(ge=1, le=MAX_INT64), WholeNumber]
#: The USING clause of CREATE TABLE, in either case.
TableFormat = Literal["avro", "protobuf", "json", "AVRO", "PROTOBUF", "JSON"]


# -- scopes ------------------------------------------------------------------------------------------


class CreateScopeRequest(Wire):
    """``POST /v1/scopes``."""

    scope_name: Name
    comment: Annotated[str, NullMeansDefault] = ""
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)

    def to_domain(self) -> domain.Scope:
        """The scope to create."""
        return domain.Scope(self.scope_name, self.comment, dict(self.properties))


class UpdateScopeRequest(Wire):
    """``PUT /v1/scopes/{scope}``: properties to set and to remove (removals first), a new comment."""

    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)
    remove_properties: Annotated[list[str], NullMeansDefault] = Field(default_factory=list)
    comment: str | None = None


class Scope(Wire):
    """A scope: a Spark database and the registry namespace of the same name."""

    scope_name: str
    comment: str
    properties: StringMap
    created_at: int

    @classmethod
    def of(cls, scope: domain.Scope) -> Scope:
        """The wire form of ``scope``."""
        return cls.model_construct(
            scope_name=scope.name, comment=scope.comment, properties=dict(scope.properties), created_at=scope.created_at
        )


class ScopeList(Wire):
    """A page of scopes and the token of the next page."""

    scopes: list[Scope]
    continuation_token: str


# -- streams -----------------------------------------------------------------------------------------


class ScalingPolicy(Wire):
    """How many segments a stream has (Pravega's shape; only fixed segment counts)."""

    type: Literal["FIXED_NUM_SEGMENTS"] = "FIXED_NUM_SEGMENTS"
    min_segments: Annotated[int, Field(ge=1, le=1024), WholeNumber] = 1


class RetentionPolicy(Wire):
    """How long, or up to what size, a stream keeps its data; unset members are left out."""

    retention_time_millis: Positive | None = omitted()
    retention_size_bytes: Positive | None = omitted()


class _StreamSettings(Wire):
    """What creating a stream or a table says about the stream."""

    scaling_policy: ScalingPolicy | None = None
    retention_policy: RetentionPolicy | None = None
    location: Annotated[str, Field(min_length=1, max_length=2048)] | None = None

    def stream_config(self) -> domain.StreamConfig:
        """The stream's layout and retention."""
        retention = self.retention_policy or RetentionPolicy()
        return domain.StreamConfig(
            segments=self.scaling_policy.min_segments if self.scaling_policy else 1,
            retention_ms=retention.retention_time_millis,
            retention_bytes=retention.retention_size_bytes,
        )


class CreateStreamRequest(_StreamSettings):
    """``POST /v1/scopes/{scope}/streams``."""

    stream_name: Name


class StreamStateRequest(Wire):
    """``PUT .../state``: only sealing is supported."""

    stream_state: Literal["SEALED"]


class TruncateRequest(Wire):
    """``POST .../truncate``: hide every commit up to and including this stream cut."""

    stream_cut: Cut


class Stream(Wire):
    """A stream: commits of chunk files under one location."""

    scope_name: str
    stream_name: str
    location: str
    scaling_policy: ScalingPolicy
    retention_policy: RetentionPolicy
    stream_state: Literal["ACTIVE", "SEALED"]
    truncated_at: int
    #: the oldest cut that may still be read (0: all); expire moves it forward
    retained_from: int
    last_commit: int
    created_at: int

    @classmethod
    def of(cls, stream: domain.Stream) -> Stream:
        """The wire form of ``stream``."""
        config = stream.config
        return cls.model_construct(
            scope_name=stream.scope,
            stream_name=stream.name,
            location=stream.location,
            scaling_policy=ScalingPolicy.model_construct(min_segments=config.segments),
            retention_policy=RetentionPolicy.model_construct(
                retention_time_millis=config.retention_ms, retention_size_bytes=config.retention_bytes
            ),
            stream_state="SEALED" if stream.sealed else "ACTIVE",
            truncated_at=stream.truncated_at,
            retained_from=stream.retained_from,
            last_commit=stream.last_commit,
            created_at=stream.created_at,
        )


class ExpireRequest(Wire):
    """``POST .../expire``: move the oldest readable cut forward. Cuts whose commit is older than
    ``olderThan`` (epoch ms) may go, the newest ``retainLast`` cuts stay, and so does every cut from
    the oldest registered reader's offset on; at least one of the two must be given."""

    model_config = ConfigDict(
        json_schema_extra={"anyOf": [{"required": ["olderThan"]}, {"required": ["retainLast"]}]}
    )

    older_than: Cut | None = None
    retain_last: Positive | None = None

    @model_validator(mode="after")
    def _some_limit(self) -> ExpireRequest:
        if self.older_than is None and self.retain_last is None:
            raise ValueError("say which cuts to expire: olderThan (epoch ms), retainLast (a count), or both")
        return self


class SetReaderRequest(Wire):
    """``PUT .../readers/{reader}``: the cut up to which the reader has read (a retained cut)."""

    offset: Cut


class Reader(Wire):
    """A registered reader of a stream and the cut up to which it has read; expiry keeps that cut."""

    reader_name: str
    offset: int
    updated_at: int

    @classmethod
    def of(cls, reader: domain.Reader) -> Reader:
        """The wire form of ``reader``."""
        return cls.model_construct(reader_name=reader.name, offset=reader.offset, updated_at=reader.updated_at)


class ReaderList(Wire):
    """A stream's registered readers, by name."""

    readers: list[Reader]


class StreamList(Wire):
    """A page of streams and the token of the next page."""

    streams: list[Stream]
    continuation_token: str


# -- tables ------------------------------------------------------------------------------------------


def _known_name(value: Any) -> Any:
    """``value``, checked first if it names a type: as a step before the union, so that an error about
    the name is reported at the member, not at the union's branch."""
    if isinstance(value, str):
        try:
            parse_atomic(value, "")
        except BadRequest as e:
            raise ValueError(e.message.split(": ", 1)[-1]) from None
    return value


#: A Spark type without children, by its JSON name (``integer``, ``decimal(10,2)``, ``interval day``...).
AtomicType = Annotated[str, Field(min_length=1, max_length=255)]
#: What the ``type`` of a Spark type object may be.
_COMPLEX = ("struct", "array", "map", "udt")


def _type_tag(value: Any) -> str | None:
    """Which branch of :data:`SparkType` ``value`` is: ``atomic`` for a name, else its ``type`` member."""
    if isinstance(value, str):
        return "atomic"
    if isinstance(value, dict):
        kind = value.get("type")
        return kind if kind in _COMPLEX else None
    return getattr(value, "type", None)


class _SparkObject(Wire):
    """Base of the Spark type objects: members Spark may add besides these are kept as given."""

    model_config = ConfigDict(extra="allow")


class StructField(_SparkObject):
    """One column of a struct: Spark's StructField in its JSON form (its comment, default and field id in
    ``metadata``)."""

    name: str
    type: SparkType
    nullable: bool
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, column: dict[str, Any]) -> StructField:
        """The wire form of a column the catalog keeps (already valid)."""
        return cls.model_construct(
            name=column["name"], type=_type_of(column["type"]), nullable=column["nullable"],
            metadata=column.get("metadata", {}),
        )


class StructType(_SparkObject):
    """A Spark StructType in its JSON form (``DataType.json()``): uniquely named fields, each of a known
    Spark type; a table's schema is one."""

    type: Literal["struct"]
    fields: list[StructField]

    @model_validator(mode="after")
    def _unique_names(self) -> StructType:
        seen: set[str] = set()
        for f in self.fields:
            if f.name in seen:
                raise ValueError(f"duplicate field name {f.name!r}")
            seen.add(f.name)
        return self

    @classmethod
    def of(cls, schema: dict[str, Any]) -> StructType:
        """The wire form of a schema the catalog keeps (already valid)."""
        return cls.model_construct(type="struct", fields=[StructField.of(f) for f in schema["fields"]])


class ArrayType(_SparkObject):
    """``array<element>`` in Spark's JSON form."""

    type: Literal["array"]
    element_type: SparkType
    contains_null: bool


class MapType(_SparkObject):
    """``map<key, value>`` in Spark's JSON form."""

    type: Literal["map"]
    key_type: SparkType
    value_type: SparkType
    value_contains_null: bool


class UserDefinedType(_SparkObject):
    """A user-defined type in Spark's JSON form (``class``, ``pyClass``, ``sqlType``...): valid Spark, and
    refused by name by every table format."""

    type: Literal["udt"]


#: A Spark data type in its JSON form: a name (``"integer"``) or an object (struct, array, map, udt).
SparkType = Annotated[
    Annotated[AtomicType, Tag("atomic")]
    | Annotated[StructType, Tag("struct")]
    | Annotated[ArrayType, Tag("array")]
    | Annotated[MapType, Tag("map")]
    | Annotated[UserDefinedType, Tag("udt")],
    Discriminator(
        _type_tag,
        custom_error_type="spark_type",
        custom_error_message="a Spark type is a name ('integer', 'decimal(10,2)'...) or an object whose 'type' is "
        "struct, array, map or udt",
    ),
    BeforeValidator(_known_name),
]
for _model in (StructField, StructType, ArrayType, MapType):
    _model.model_rebuild()


def _type_of(value: Any) -> Any:
    """The wire form of a Spark type the catalog keeps (already valid)."""
    if not isinstance(value, dict):
        return value
    kind = value.get("type")
    if kind == "struct":
        return StructType.of(value)
    if kind == "array":
        return ArrayType.model_construct(
            type="array", element_type=_type_of(value["elementType"]), contains_null=value["containsNull"]
        )
    if kind == "map":
        return MapType.model_construct(
            type="map", key_type=_type_of(value["keyType"]), value_type=_type_of(value["valueType"]),
            value_contains_null=value["valueContainsNull"],
        )
    return UserDefinedType.model_validate(value)


#: A partitioning in its text form (docs/partitioning.md).
PartitioningText = Annotated[str, Field(max_length=10_000)]


class PartitionField(Wire):
    """One field of a partition spec: the transform (Iceberg's name: ``day``, ``bucket[8]``) of a source
    column (by field id; ``source`` is its current name, or the last it had once dropped) and the
    partition field's id and name."""

    field_id: int
    source_id: int
    source: str
    transform: str
    name: str


class PartitionSpec(Wire):
    """A partition spec of a table: its id (0: unpartitioned), fields and text form."""

    spec_id: int
    fields: list[PartitionField]
    text: str

    @classmethod
    def of(cls, spec: Spec, schema: dict[str, Any] | None = None) -> PartitionSpec:
        """The wire form of ``spec``, its sources named as in ``schema`` (the table's current schema) if given."""
        named = spec if schema is None else with_current_names(spec, schema)
        fields = [
            PartitionField.model_construct(
                field_id=f.field_id, source_id=f.source_id, source=f.source, transform=str(f.transform), name=f.name
            )
            for f in named.fields
        ]
        return cls.model_construct(spec_id=named.spec_id, fields=fields, text=named.text())


class CreateTableRequest(_StreamSettings):
    """``POST /v1/scopes/{scope}/tables``: the stream, its group and the first schema version."""

    table_name: Name
    schema_: StructType = Field(alias="schema")
    format: TableFormat | None = None
    compatibility: Compatibility | None = None
    comment: Annotated[str, NullMeansDefault] = ""
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)
    #: PARTITIONED BY in the text form of docs/partitioning.md (``days(ts), bucket(8, id)``); empty or
    #: absent: unpartitioned
    partitioning: PartitioningText | None = None


ColumnPath = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class ColumnPosition(Wire):
    """Where a column goes: first, or after a named sibling."""

    first: bool | None = None
    after: str | None = None


def _domain_value(value: Any) -> Any:
    """A member of a wire change as its domain change holds it."""
    if isinstance(value, ColumnPosition):
        # No member set: no position, as absent.
        return domain_changes.Position(bool(value.first), value.after) if value.model_fields_set else None
    if isinstance(value, ColumnDefault):
        return domain_changes.ColumnDefault(value.current, value.exists)
    if isinstance(value, Compatibility):
        return value.to_domain()
    if isinstance(value, Wire):  # a Spark type object
        return value.model_dump(mode="json")
    if isinstance(value, list):  # a column path
        return tuple(value)
    return value


class _Change(Wire):
    """One table change (Spark's TableChange), told apart by ``op``: the wire form of the
    catalog_api.changes type of the same ``op``, whose members have the same names."""

    op: str

    def to_domain(self) -> domain_changes.TableChange:
        """The domain change."""
        kind = domain_changes.BY_OP[self.op]
        return kind(**{name: _domain_value(getattr(self, name)) for name in type(self).model_fields if name != "op"})


class ColumnDefault(Wire):
    """A column's DEFAULT as Spark keeps it: the SQL written (CURRENT_DEFAULT) and the literal it folded
    to, which rows written before the column existed read (EXISTS_DEFAULT; the SQL written when absent)."""

    current: str = Field(min_length=1)
    exists: str | None = None


class AddColumn(_Change):
    """Add a column at ``path`` (nullable unless said otherwise; last unless placed; with a DEFAULT)."""

    op: Literal["addColumn"]
    path: ColumnPath
    type: SparkType
    nullable: bool = True
    comment: str | None = None
    position: ColumnPosition | None = None
    default: ColumnDefault | None = None


class DropColumn(_Change):
    """Drop the column at ``path``."""

    op: Literal["dropColumn"]
    path: ColumnPath


class RenameColumn(_Change):
    """Rename the column at ``path``; the old name stays an alias (docs/decisions.md)."""

    op: Literal["renameColumn"]
    path: ColumnPath
    new_name: Annotated[str, Field(min_length=1)]


class UpdateColumnType(_Change):
    """Change the column's type (the group's policy decides whether that is allowed)."""

    op: Literal["updateColumnType"]
    path: ColumnPath
    type: SparkType


class UpdateColumnNullability(_Change):
    """Make the column nullable or not."""

    op: Literal["updateColumnNullability"]
    path: ColumnPath
    nullable: bool


class UpdateColumnComment(_Change):
    """Set (or with null, clear) the column's comment."""

    op: Literal["updateColumnComment"]
    path: ColumnPath
    comment: str | None = None


class UpdateColumnPosition(_Change):
    """Move the column (to the end when no position is given)."""

    op: Literal["updateColumnPosition"]
    path: ColumnPath
    position: ColumnPosition | None = None


class UpdateColumnDefault(_Change):
    """Set (empty or null: drop) the column's DEFAULT for new rows; older rows keep their EXISTS_DEFAULT."""

    op: Literal["updateColumnDefault"]
    path: ColumnPath
    default: str | None = None


class SetProperty(_Change):
    """Set a table property (``compatibility`` sets the group's policy instead)."""

    op: Literal["setProperty"]
    key: str
    value: str


class RemoveProperty(_Change):
    """Remove a table property."""

    op: Literal["removeProperty"]
    key: str


class SetComment(_Change):
    """Set (or with null, clear) the table's comment."""

    op: Literal["setComment"]
    comment: str | None = None


class SetCompatibility(_Change):
    """Set the compatibility policy of the table's group."""

    op: Literal["setCompatibility"]
    compatibility: Compatibility


class SetPartitioning(_Change):
    """Make ``partitioning`` (the text form of docs/partitioning.md; empty: unpartitioned) the table's
    current partition spec: a new spec, or the id of an identical earlier one. Chunks already written
    keep the spec they were written under."""

    op: Literal["setPartitioning"]
    partitioning: PartitioningText


TableChange = Annotated[
    AddColumn
    | DropColumn
    | RenameColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnComment
    | UpdateColumnPosition
    | UpdateColumnDefault
    | SetProperty
    | RemoveProperty
    | SetComment
    | SetCompatibility
    | SetPartitioning,
    Field(discriminator="op"),
]


class AlterTableRequest(Wire):
    """``PATCH /v1/scopes/{scope}/tables/{table}``: changes applied in order, all or none;
    with ``expectedVersion``, only if the table is still at that version."""

    expected_version: Annotated[int, WholeNumber] | None = None
    changes: list[TableChange]

    def to_domain(self) -> list[domain_changes.TableChange]:
        """The changes as the catalog applies them."""
        return [change.to_domain() for change in self.changes]


class CheckConstraint(Wire):
    """A CHECK constraint in force on a table (docs/data-contracts.md)."""

    name: str
    #: its condition as Spark SQL; null: a CEL rule without a SQL form (Spark does not enforce it)
    sql: str | None
    #: its condition as CEL, as the Python writers evaluate it; null: SQL without a CEL form
    cel: str | None
    #: whether the table declares it (property ``constraint.check.<name>``), else a CEL condition rule of
    #: its schema version
    declared: bool
    #: what the Python writers do with a failing row: ``ERROR`` (refuse the write) or ``DLQ`` (send it to
    #: ``dlqTable``); Spark refuses the write either way
    on_failure: str = "ERROR"
    #: the dead-letter table (``scope.table``) of a ``DLQ`` rule (its parameter ``dlq.table``)
    dlq_table: str | None = None


class Table(Wire):
    """A table: its stream, its schema group, and the Spark schema of the group's latest version."""

    scope_name: str
    table_name: str
    version: int
    format: str
    group: str
    type_name: str
    schema_: StructType = Field(alias="schema")
    schema_version: VersionInfo
    compatibility: Compatibility
    comment: str
    properties: StringMap
    #: the key columns of a primary-key table (its 'primary-key' property); empty for append tables
    primary_key: list[str]
    stream: Stream
    #: the current partition spec (spec 0, without fields: unpartitioned)
    partition_spec: PartitionSpec
    #: every spec the table has had, by id (spec 0 first): older chunks name theirs
    partition_specs: list[PartitionSpec]
    #: the CHECK constraints in force: declared ones, then CEL condition rules translated to SQL
    checks: list[CheckConstraint] = Field(default_factory=list)

    @classmethod
    def of(cls, table: domain.Table) -> Table:
        """The wire form of ``table`` (its group has the table's name)."""
        return cls.model_construct(
            scope_name=table.scope,
            table_name=table.name,
            version=table.version,
            format=table.format,
            group=table.name,
            type_name=table.type_name,
            schema_=StructType.of(table.schema),
            schema_version=VersionInfo.of(table.schema_version),
            compatibility=Compatibility.of(table.compatibility),
            comment=table.comment,
            properties=dict(table.properties),
            primary_key=list(table.primary_key),
            stream=Stream.of(table.stream),
            partition_spec=PartitionSpec.of(table.partition_spec, table.schema),
            partition_specs=[PartitionSpec.of(s, table.schema) for s in table.partition_specs],
            checks=[CheckConstraint.model_construct(name=c.name, sql=c.sql, cel=c.cel, declared=c.declared,
                                                    on_failure=c.on_failure, dlq_table=c.dlq_table)
                    for c in table.checks],
        )


class TableList(Wire):
    """A page of tables and the token of the next page."""

    tables: list[Table]
    continuation_token: str


# -- commits -----------------------------------------------------------------------------------------


def _inside_the_stream(path: str) -> str:
    # A pattern could say this too, but not readably; the message says what is wrong.
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts) or ":" in parts[0]:
        raise ValueError(f"chunk path {path!r} must be relative to the stream's location, without '..'")
    return path


ChunkPath = Annotated[str, Field(min_length=1, max_length=1024)]
#: A partition value: null, a boolean, an integer (dates, timestamps and transforms' results are integers
#: in the units of chunk statistics) or a string (binary truncated: base64).
PartitionValue = bool | Int64 | Annotated[str, Field(max_length=65_536)] | None


class ChunkPartition(Wire):
    """The partition all rows of a chunk are in: a spec of the table and one value per field of it."""

    spec_id: Int32
    values: Annotated[list[PartitionValue], Field(max_length=1_000)]

    def to_domain(self) -> dict[str, Any]:
        """The chunk's ``partition`` as the domain keeps it."""
        return {"specId": self.spec_id, "values": list(self.values)}


class ChunkInfo(Wire):
    """A chunk file: its path relative to the stream's location, what it holds, its statistics.
    ``commit`` is the number of the commit that added it, ``sequence`` where its changes sort (that
    number, or a compaction's base cut) and ``removedAt`` the commit that removed it; the server
    sets all three (they are ignored in a commit request)."""

    path: Annotated[str, Field(min_length=1, max_length=1024)]
    kind: ChunkKind
    segment: Annotated[Int32, NullMeansDefault] = 0
    event_count: Count
    bytes: Count
    encoding_ids: Annotated[list[Int32], NullMeansDefault] = Field(default_factory=list)
    min_event_time: Int64 | None = None
    max_event_time: Int64 | None = None
    stats: Annotated[dict[str, Any], NullMeansDefault] = Field(default_factory=dict)
    commit: Annotated[int, WholeNumber] = 0
    sequence: Annotated[int, WholeNumber] = 0
    removed_at: Annotated[int, WholeNumber] | None = None
    #: the partition the chunk's rows are all in (docs/partitioning.md); left out: unpartitioned
    partition: ChunkPartition | None = omitted()

    @field_validator("path")
    @classmethod
    def _inside_the_stream(cls, path: str) -> str:
        return _inside_the_stream(path)

    @classmethod
    def of(cls, chunk: domain.Chunk) -> ChunkInfo:
        """The wire form of ``chunk``."""
        return cls.model_construct(
            path=chunk.path,
            kind=chunk.kind,
            segment=chunk.segment,
            event_count=chunk.event_count,
            bytes=chunk.bytes,
            encoding_ids=list(chunk.encoding_ids),
            min_event_time=chunk.min_event_time,
            max_event_time=chunk.max_event_time,
            stats=dict(chunk.stats),
            commit=chunk.commit,
            sequence=chunk.sequence,
            removed_at=chunk.removed_at,
            partition=None if chunk.partition is None else ChunkPartition.model_construct(
                spec_id=chunk.partition["specId"], values=list(chunk.partition["values"])
            ),
        )

    def to_domain(self) -> domain.Chunk:
        """The domain object."""
        return domain.Chunk(
            path=self.path,
            kind=self.kind,
            segment=self.segment,
            event_count=self.event_count,
            bytes=self.bytes,
            encoding_ids=tuple(self.encoding_ids),
            min_event_time=self.min_event_time,
            max_event_time=self.max_event_time,
            stats=dict(self.stats),
            commit=self.commit,
            sequence=self.sequence,
            removed_at=self.removed_at,
            partition=None if self.partition is None else self.partition.to_domain(),
        )


class CommitRequest(Wire):
    """``POST .../commits``: chunks made visible at once (none only to empty the stream, with
    ``overwrite``, or when a row-level commit or a compaction removes chunks). A repeated
    (writerId, writerSequence) is acknowledged (200) and changes nothing.

    ``kind`` (docs/changelog-tables.md, "Commits"; by default overwrite when ``overwrite`` is set,
    else append): an overwrite removes every live chunk; a row-level commit records ``readCut``, the
    cut its scan read; a compaction's chunks hold the state at ``baseCut``. Both may remove the live
    chunks ``removes`` names (409 CommitConflict if one is not live). With ``expectedLastCommit``
    the commit is made only if the stream's newest commit is that one (409 CommitConflict)."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "anyOf": [
                        {"properties": {"chunks": {"minItems": 1}}},
                        {"required": ["overwrite"], "properties": {"overwrite": {"const": True}}},
                        {"required": ["kind"], "properties": {"kind": {"const": "overwrite"}}},
                        {
                            "required": ["kind", "removes"],
                            "properties": {"kind": {"enum": ["row-level", "compaction"]}, "removes": {"minItems": 1}},
                        },
                    ]
                },
                {
                    "anyOf": [
                        {"properties": {"writerId": {"type": "null"}, "writerSequence": {"type": "null"}}},
                        {
                            "required": ["writerId", "writerSequence"],
                            "properties": {"writerId": {"type": "string"}, "writerSequence": {"type": "integer"}},
                        },
                    ]
                },
            ]
        }
    )

    chunks: Annotated[list[ChunkInfo], Field(max_length=100_000)]
    overwrite: Annotated[bool, NullMeansDefault] = False
    writer_id: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    writer_sequence: Count | None = None
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)
    kind: CommitKind | None = None
    read_cut: Cut | None = None
    base_cut: Cut | None = None
    expected_last_commit: Cut | None = None
    removes: Annotated[list[ChunkPath], Field(max_length=100_000), NullMeansDefault] = Field(default_factory=list)

    @field_validator("removes")
    @classmethod
    def _removes_inside_the_stream(cls, paths: list[str]) -> list[str]:
        return [_inside_the_stream(p) for p in paths]

    @model_validator(mode="after")
    def _whole(self) -> CommitRequest:
        chunks, options = self.to_domain()
        try:
            options.check(chunks)  # the rules are the domain's: the server's service checks them again
        except BadRequest as e:
            raise ValueError(e.message) from None
        # A commit stores the sums of its chunks' counts, which must fit 64 bits too.
        for name, total in (
            ("eventCount", sum(c.event_count for c in self.chunks)),
            ("bytes", sum(c.bytes for c in self.chunks)),
        ):
            if total > MAX_INT64:
                raise ValueError(f"the chunks' {name} add up to more than {MAX_INT64}")
        return self

    @classmethod
    def of(cls, chunks: Sequence[domain.Chunk], options: domain.CommitOptions) -> CommitRequest:
        """The wire form of a commit of ``chunks`` with ``options`` (members at their defaults left out)."""
        given: dict[str, Any] = {
            "chunks": [ChunkInfo.of(c) for c in chunks],
            "overwrite": options.overwrite,
            "writer_id": options.writer_id,
            "writer_sequence": options.writer_sequence,
            "properties": dict(options.properties),
            # left out when it is what ``overwrite`` implies, as the server reads it
            "kind": None if options.kind == domain.CommitOptions(overwrite=options.overwrite).kind else options.kind,
            "read_cut": options.read_cut,
            "base_cut": options.base_cut,
            "expected_last_commit": options.expected_last_commit,
            "removes": list(options.removes),
        }
        # the chunks always; the other members only when they say something
        return cls.model_construct(**{k: v for k, v in given.items() if k == "chunks" or v not in (None, [], {})})

    def to_domain(self) -> tuple[list[domain.Chunk], domain.CommitOptions]:
        """The chunks and the options of the commit."""
        return [c.to_domain() for c in self.chunks], domain.CommitOptions(
            overwrite=self.overwrite,
            kind=self.kind or "",
            writer_id=self.writer_id,
            writer_sequence=self.writer_sequence,
            properties=dict(self.properties),
            read_cut=self.read_cut,
            base_cut=self.base_cut,
            expected_last_commit=self.expected_last_commit,
            removes=tuple(self.removes),
        )


class TableCommitRequest(CommitRequest):
    """One table's commit in ``POST /v1/commits``: a ``CommitRequest`` of the stream ``stream`` of scope
    ``scope``."""

    scope: Name
    stream: Name

    @classmethod
    def of_part(cls, part: domain.TableCommit) -> TableCommitRequest:
        """The wire form of one table's part."""
        request = CommitRequest.of(part.chunks, part.options)
        return cls.model_construct(scope=part.scope, stream=part.stream, **{
            name: getattr(request, name) for name in request.model_fields_set})

    def to_part(self) -> domain.TableCommit:
        """The part as the catalog's service takes it."""
        chunks, options = self.to_domain()
        return domain.TableCommit(self.scope, self.stream, chunks, options)


class CommitTablesRequest(Wire):
    """``POST /v1/commits``: commits to several tables (or streams) made in one transaction, at one time, or
    none (docs/data-contracts.md, "Dead-letter tables"). Each is checked as its own ``POST .../commits``
    would be; the caller needs write on every table named. A repeat whose every commit carries a
    (writerId, writerSequence) already made is acknowledged (200) and changes nothing; each table at most
    once."""

    commits: Annotated[list[TableCommitRequest], Field(min_length=1, max_length=64)]

    def to_domain(self) -> list[domain.TableCommit]:
        """The parts as the catalog's service takes them."""
        return [c.to_part() for c in self.commits]


class Commit(Wire):
    """One commit of a stream; ``duplicate`` tells a repeated (writerId, writerSequence)."""

    number: int
    overwrite: bool
    writer_id: str | None
    writer_sequence: int | None
    event_count: int
    bytes: int
    chunk_count: int
    timestamp: int
    properties: StringMap
    duplicate: bool
    kind: CommitKind
    read_cut: int | None
    base_cut: int | None
    #: the commit's time (epoch ms; the same as ``timestamp``), strictly increasing per stream
    created_at: int

    @classmethod
    def of(cls, commit: domain.Commit) -> Commit:
        """The wire form of ``commit``."""
        return cls.model_construct(
            number=commit.number,
            overwrite=commit.overwrite,
            writer_id=commit.writer_id,
            writer_sequence=commit.writer_sequence,
            event_count=commit.event_count,
            bytes=commit.bytes,
            chunk_count=commit.chunk_count,
            timestamp=commit.created_at,
            properties=dict(commit.properties),
            duplicate=commit.duplicate,
            kind=commit.kind,
            read_cut=commit.read_cut,
            base_cut=commit.base_cut,
            created_at=commit.created_at,
        )


class CommitTablesAnswer(Wire):
    """The commits ``POST /v1/commits`` made (or found made: ``duplicate``), in the request's order."""

    commits: list[Commit]


class WriterCommit(Wire):
    """``findCommit``: the commit a writer made with one sequence, and the paths of the chunks it added."""

    commit: Commit
    paths: list[str]

    @classmethod
    def of(cls, found: domain.WriterCommit) -> WriterCommit:
        """The wire form of ``found``."""
        return cls.model_construct(commit=Commit.of(found.commit), paths=list(found.paths))


class CommitList(Wire):
    """Commits, oldest first."""

    commits: list[Commit]


class Change(Wire):
    """One non-compaction commit of a change feed: its number, kind, time and read cut, the chunks it
    added (``chunks``) and the ones it removed (``removed``: every live one for an overwrite, the
    named ones for a row-level commit)."""

    number: int
    kind: CommitKind
    created_at: int
    read_cut: int | None
    chunks: list[ChunkInfo]
    removed: list[ChunkInfo]

    @classmethod
    def of(cls, change: domain.Change) -> Change:
        """The wire form of ``change``."""
        return cls.model_construct(
            number=change.number,
            kind=change.kind,
            created_at=change.created_at,
            read_cut=change.read_cut,
            chunks=[ChunkInfo.of(c) for c in change.added],
            removed=[ChunkInfo.of(c) for c in change.removed],
        )


class ChangeList(Wire):
    """The commits of a change feed, oldest first."""

    changes: list[Change]


class Snapshot(Wire):
    """The chunks to read at a stream cut (or appended after a position)."""

    stream_cut: int
    chunks: list[ChunkInfo]

    @classmethod
    def of(cls, snapshot: domain.Snapshot) -> Snapshot:
        """The wire form of ``snapshot``."""
        return cls.model_construct(stream_cut=snapshot.cut, chunks=[ChunkInfo.of(c) for c in snapshot.chunks])

    def to_domain(self) -> domain.Snapshot:
        """The domain object."""
        return domain.Snapshot(self.stream_cut, [c.to_domain() for c in self.chunks])


# -- scan planning and partitions --------------------------------------------------------------------

#: A value a filter compares with, in the units of chunk statistics (dates: days, timestamps: microseconds
#: since the epoch).
FilterValue = bool | int | float | Annotated[str, Field(max_length=65_536)]
FilterColumn = Annotated[str, Field(min_length=1, max_length=1024)]


class Comparison(Wire):
    """``column <op> value``."""

    op: Literal["eq", "gt", "ge", "lt", "le"]
    column: FilterColumn
    value: FilterValue


class StartsWith(Wire):
    """The string ``column`` starts with ``value``."""

    op: Literal["startswith"]
    column: FilterColumn
    value: Annotated[str, Field(max_length=65_536)]


class InValues(Wire):
    """``column`` is one of ``values``."""

    op: Literal["in"]
    column: FilterColumn
    values: Annotated[list[FilterValue], Field(max_length=100_000)]


class NullCheck(Wire):
    """``column`` is (``isnull``) or is not (``notnull``) null."""

    op: Literal["isnull", "notnull"]
    column: FilterColumn


class Junction(Wire):
    """Both (``and``) or either (``or``) of two filters."""

    op: Literal["and", "or"]
    left: Filter
    right: Filter


#: A pushed filter, as Spark's are written (docs/partitioning.md, "Pruning").
Filter = Annotated[Comparison | StartsWith | InValues | NullCheck | Junction, Field(discriminator="op")]
Junction.model_rebuild()


class PlanChunksRequest(Wire):
    """``POST .../chunks/plan``: the chunks to read at a cut (latest by default) or as of a time (epoch
    ms) that may hold a row passing every filter (the filters are a conjunction)."""

    cut: Cut | None = None
    as_of_time: Cut | None = None
    filters: Annotated[list[Filter], Field(max_length=10_000), NullMeansDefault] = Field(default_factory=list)

    def filter_json(self) -> list[dict[str, Any]]:
        """The filters as the pruning functions read them."""
        return [f.model_dump(mode="json") for f in self.filters]


class ChunkPlan(Wire):
    """The chunks a scan reads (in the order of ``GET .../chunks``) and what planning skipped."""

    stream_cut: int
    chunks: list[ChunkInfo]
    chunks_skipped: int
    bytes_skipped: int

    @classmethod
    def of(cls, plan: domain.Plan) -> ChunkPlan:
        """The wire form of ``plan``."""
        return cls.model_construct(
            stream_cut=plan.cut,
            chunks=[ChunkInfo.of(c) for c in plan.chunks],
            chunks_skipped=plan.chunks_skipped,
            bytes_skipped=plan.bytes_skipped,
        )

    def to_domain(self) -> domain.Plan:
        """The domain object."""
        return domain.Plan(self.stream_cut, [c.to_domain() for c in self.chunks], self.chunks_skipped,
                           self.bytes_skipped)


class PartitionSummary(Wire):
    """One partition of a table's current spec: its values and what its live chunks hold."""

    values: list[PartitionValue]
    chunk_count: int
    event_count: int
    bytes: int


class PartitionList(Wire):
    """``GET .../tables/{table}/partitions``: the partitions of the current spec that live chunks are in,
    sorted by values (nulls first)."""

    spec_id: int
    fields: list[PartitionField]
    partitions: list[PartitionSummary]

    @classmethod
    def of(cls, found: domain.Partitions) -> PartitionList:
        """The wire form of ``found``."""
        spec = PartitionSpec.of(found.spec)
        return cls.model_construct(
            spec_id=spec.spec_id,
            fields=spec.fields,
            partitions=[
                PartitionSummary.model_construct(
                    values=list(p.values), chunk_count=p.chunk_count, event_count=p.event_count, bytes=p.bytes
                )
                for p in found.partitions
            ],
        )


# -- query strings -----------------------------------------------------------------------------------

QueryCut = Annotated[int, Field(ge=0, le=MAX_CUT), FromQueryText]


class CommitsQuery(Query):
    """Commits numbered above ``after``, at most ``limit`` of them."""

    after: QueryCut | None = None
    limit: Annotated[int, Field(ge=1, le=10_000), FromQueryText] | None = None


class FindCommitQuery(Query):
    """Which writer's commit: its id and sequence."""

    writer_id: Annotated[str, Field(min_length=1, max_length=255)]
    writer_sequence: Annotated[int, Field(ge=0, le=MAX_INT64), FromQueryText]


class ChunksQuery(Query):
    """Which chunks: at a stream cut (latest by default), as of a time (epoch millis), or
    appended after a commit number (for streaming reads)."""

    stream_cut: QueryCut | None = None
    as_of_time: QueryCut | None = None
    after: QueryCut | None = None


class ChangesQuery(Query):
    """The commits after the cut ``after`` (0 by default; a retained cut) up to the cut ``to`` (the
    latest by default)."""

    after: QueryCut | None = None
    to: QueryCut | None = None


class PurgeQuery(Query):
    """Whether deleting also removes the files under the stream's location."""

    purge: Flag = False


class DeleteScopeQuery(PurgeQuery):
    """Whether deleting a scope also deletes what it holds (cascade) and their files (purge)."""

    cascade: Flag = False
