"""The Iceberg REST catalog's JSON bodies (the names of ``open-api/rest-catalog-open-api.yaml`` in
apache/iceberg: kebab-case in bodies, camelCase in query strings)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from catalog_api.iceberg.model import LoadedTable, Requirement, Update, namespace_properties
from catalog_api.model import Scope, Table
from registry.api.wire import Query


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class IcebergWire(BaseModel):
    """Base of the bodies: kebab-case names, closed objects, no coercion."""

    model_config = ConfigDict(
        alias_generator=_kebab, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True,
        extra="forbid", strict=True, frozen=True, json_schema_serialization_defaults_required=True,
    )


#: A namespace: scopes are one level, so one name.
NamespaceName = Annotated[list[str], Field(min_length=1, max_length=1)]


class ConfigQuery(Query):
    """``GET /v1/config``: the warehouse a client names (ignored: the server has one)."""

    warehouse: str | None = None


class CatalogConfig(IcebergWire):
    """``GET /v1/config``: client settings, and the endpoints implemented."""

    defaults: dict[str, str]
    overrides: dict[str, str]
    endpoints: list[str]


class PageQuery(Query):
    """Iceberg's paging: ``pageToken`` and ``pageSize``."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              extra="ignore", frozen=True)

    page_token: str | None = None
    page_size: Annotated[int, Field(ge=1, le=1000)] | None = None


class ListNamespacesQuery(PageQuery):
    """``GET /v1/namespaces``: ``parent`` must be absent (scopes are one level)."""

    parent: str | None = None


class NamespaceList(IcebergWire):
    """A page of namespaces."""

    namespaces: list[list[str]]
    next_page_token: str | None = None


class CreateNamespaceRequest(IcebergWire):
    """``POST /v1/namespaces``."""

    namespace: NamespaceName
    properties: dict[str, str] = Field(default_factory=dict)


class Namespace(IcebergWire):
    """A namespace and its properties."""

    namespace: list[str]
    properties: dict[str, str]

    @staticmethod
    def of(scope: Scope) -> Namespace:
        """The namespace of a scope."""
        return Namespace(namespace=[scope.name], properties=namespace_properties(scope))


class UpdateNamespaceRequest(IcebergWire):
    """``POST /v1/namespaces/{namespace}/properties``."""

    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class UpdateNamespaceResult(IcebergWire):
    """Which properties were set, removed, and asked to be removed but missing."""

    updated: list[str]
    removed: list[str]
    missing: list[str]


class TableIdentifier(IcebergWire):
    """A table's namespace and name."""

    namespace: list[str]
    name: str


class TableList(IcebergWire):
    """A page of tables."""

    identifiers: list[TableIdentifier]
    next_page_token: str | None = None

    @staticmethod
    def of(scope: str, tables: list[Table], token: str | None) -> TableList:
        """The identifiers of ``tables`` in ``scope``."""
        return TableList(identifiers=[TableIdentifier(namespace=[scope], name=t.name) for t in tables],
                         next_page_token=token or None)


class IcebergStructField(IcebergWire):
    """A field of a struct: its id, name, whether it is required, and its type."""

    id: int
    name: str
    required: bool
    type: IcebergType


class IcebergStruct(IcebergWire):
    """A struct type."""

    type: Literal["struct"]
    fields: list[IcebergStructField]


class IcebergList(IcebergWire):
    """A list type; its element has an id of its own."""

    type: Literal["list"]
    element_id: int
    element: IcebergType
    element_required: bool


class IcebergMap(IcebergWire):
    """A map type; its key and value have ids of their own."""

    type: Literal["map"]
    key_id: int
    key: IcebergType
    value_id: int
    value: IcebergType
    value_required: bool


#: A primitive type's name (``long``, ``decimal(10, 2)``...) or a nested type.
IcebergType = str | IcebergStruct | IcebergList | IcebergMap


class IcebergSchema(IcebergWire):
    """One of a table's schemas (the registry version of its group whose number is ``schema-id``)."""

    type: Literal["struct"]
    schema_id: int
    identifier_field_ids: list[int] = Field(default_factory=list)
    fields: list[IcebergStructField]


class IcebergPartitionField(IcebergWire):
    """A partition field: a transform of a source column."""

    source_id: int
    field_id: int
    name: str
    transform: str


class IcebergPartitionSpec(IcebergWire):
    """A partition spec."""

    spec_id: int
    fields: list[IcebergPartitionField]


class IcebergSortField(IcebergWire):
    """A sort field."""

    transform: str
    source_id: int
    direction: str
    null_order: str


class IcebergSortOrder(IcebergWire):
    """A sort order (Streamcat tables are unsorted: order 0, no fields)."""

    order_id: int
    fields: list[IcebergSortField]


class IcebergSnapshot(IcebergWire):
    """A snapshot: one Streamcat commit Iceberg can express (its id is the commit's number)."""

    snapshot_id: int
    #: left out for the first snapshot (some readers take ``null`` for a bad value)
    parent_snapshot_id: int | None = Field(default=None, exclude_if=lambda value: value is None)
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    summary: dict[str, str]
    schema_id: int


class SnapshotRef(IcebergWire):
    """A branch or tag."""

    snapshot_id: int
    type: Literal["branch", "tag"]


class SnapshotLogEntry(IcebergWire):
    """When a snapshot became current."""

    snapshot_id: int
    timestamp_ms: int


class MetadataLogEntry(IcebergWire):
    """An earlier metadata file."""

    metadata_file: str
    timestamp_ms: int


class TableMetadata(IcebergWire):
    """Iceberg table metadata, format version 2."""

    format_version: Literal[2]
    table_uuid: str
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    current_schema_id: int
    schemas: list[IcebergSchema]
    default_spec_id: int
    partition_specs: list[IcebergPartitionSpec]
    last_partition_id: int
    default_sort_order_id: int
    sort_orders: list[IcebergSortOrder]
    properties: dict[str, str]
    current_snapshot_id: int
    refs: dict[str, SnapshotRef]
    snapshots: list[IcebergSnapshot]
    snapshot_log: list[SnapshotLogEntry]
    metadata_log: list[MetadataLogEntry]


class CreateTableRequest(IcebergWire):
    """``POST .../namespaces/{namespace}/tables``: the table's name, Iceberg schema and partition spec."""

    name: Annotated[str, Field(min_length=1)]
    schema_: dict[str, Any] = Field(alias="schema")
    location: str | None = None
    partition_spec: dict[str, Any] | None = None
    write_order: dict[str, Any] | None = None
    stage_create: bool = False
    properties: dict[str, str] = Field(default_factory=dict)


class LoadTableQuery(Query):
    """``GET .../tables/{table}``: ``snapshots=all`` (default) or ``refs``."""

    snapshots: Annotated[str, Field(pattern="^(all|refs)$")] = "all"


class LoadTableResult(IcebergWire):
    """A table's metadata (format v2) and where its metadata file is."""

    metadata_location: str
    metadata: TableMetadata
    config: dict[str, str]

    @staticmethod
    def of(loaded: LoadedTable) -> LoadTableResult:
        """The answer of a loaded table."""
        metadata = TableMetadata.model_validate(loaded.metadata, strict=False)
        return LoadTableResult(metadata_location=loaded.metadata_location, metadata=metadata, config={})


class DropTableQuery(Query):
    """``DELETE .../tables/{table}``: ``purgeRequested`` deletes the files of a managed table too."""

    purge_requested: bool = False


class RenameTableRequest(IcebergWire):
    """``POST /v1/tables/rename`` (always refused, with the reason)."""

    source: TableIdentifier
    destination: TableIdentifier


class TableRequirement(IcebergWire):
    """A commit's requirement: its ``type`` and the values it asserts (by their Iceberg names)."""

    model_config = ConfigDict(alias_generator=_kebab, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True, extra="allow", frozen=True)

    type: str

    def to_domain(self) -> Requirement:
        """The requirement, its values by Iceberg name."""
        return Requirement(self.type, dict(self.model_extra or {}))


class TableUpdate(IcebergWire):
    """A commit's update: its ``action`` and values (by their Iceberg names)."""

    model_config = ConfigDict(alias_generator=_kebab, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True, extra="allow", frozen=True)

    action: str

    def to_domain(self) -> Update:
        """The update, its values by Iceberg name."""
        return Update(self.action, dict(self.model_extra or {}))


class CommitTableRequest(IcebergWire):
    """``POST .../tables/{table}``: requirements that must hold, and the updates to make."""

    identifier: TableIdentifier | None = None
    requirements: list[TableRequirement] = Field(default_factory=list)
    updates: list[TableUpdate] = Field(default_factory=list)


class CommitTableResponse(IcebergWire):
    """The table's metadata after a commit."""

    metadata_location: str
    metadata: TableMetadata

    @staticmethod
    def of(loaded: LoadedTable) -> CommitTableResponse:
        """The answer of the committed table."""
        metadata = TableMetadata.model_validate(loaded.metadata, strict=False)
        return CommitTableResponse(metadata_location=loaded.metadata_location, metadata=metadata)


class ErrorModel(IcebergWire):
    """What went wrong: a message, the Iceberg exception type, the HTTP status."""

    message: str
    type: str
    code: int


class IcebergError(IcebergWire):
    """Iceberg's error body."""

    error: ErrorModel
