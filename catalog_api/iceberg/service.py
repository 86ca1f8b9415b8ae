"""The Iceberg REST catalog's use cases over the catalog: namespaces are scopes, tables are Streamcat
tables, and a table's Iceberg metadata is derived from its commits on every load (docs/iceberg.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from cachetools import LRUCache

from catalog_api.errors import ScopeNotEmpty
from catalog_api.iceberg import commits, datafiles, snapshots
from catalog_api.iceberg.errors import NotSupported
from catalog_api.iceberg.evolution import spark_struct
from catalog_api.iceberg.metadata import table_metadata, table_uuid
from catalog_api.iceberg.model import COMMENT, LoadedTable, Requirement, Update, namespace_properties
from catalog_api.iceberg.schemas import iceberg_schema, iceberg_spec, iceberg_struct, with_ids
from catalog_api.iceberg.store import SqlIcebergStore
from catalog_api.iceberg.writer import MetadataWriter, SpecLayout, TableFiles
from catalog_api.model import APPEND, COLUMNAR, OVERWRITE, Chunk, CommitOptions, Scope, Table
from catalog_api.partitioning.spec import PartitionField, PartitionSpec, Transform
from catalog_api.schema import to_struct
from catalog_api.schema.fieldids import field_id
from catalog_api.service import CatalogService, TableRequest
from catalog_api.storage import uri_of
from catalog_api.store import Page
from registry.errors import BadRequest
from registry.ids import CodecName, EncodingId, GroupName, Namespace, TypeName
from registry.model import NO_CODEC, SchemaWithVersion, VersionInfo

#: The endpoints this server implements, as ``config.endpoints`` lists them.
ENDPOINTS = (
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
)


class SchemaVersions(Protocol):
    """The schema registry as the Iceberg view needs it: every live version of a table's group."""

    def versions(self, namespace: Namespace, name: GroupName, type_name: TypeName | None) -> list[SchemaWithVersion]:
        """Every live version, in order of addition."""

    def encoding_id(self, namespace: Namespace, name: GroupName, version: VersionInfo, codec: CodecName) -> EncodingId:
        """Get or create the encoding id of (version, codec)."""

    def encodings(self, namespace: Namespace, name: GroupName) -> list[tuple[EncodingId, VersionInfo, CodecName]]:
        """Every encoding id of the group, with the version and codec it stands for."""


class IcebergService:
    """Namespaces and tables for Iceberg clients, and the metadata of each table's expressible commits.

    ``is_materialized(scope, name)`` says whether a table is a materialized table (read-only here).
    """

    def __init__(self, catalog: CatalogService, store: SqlIcebergStore, versions: SchemaVersions,
                 writer: MetadataWriter, is_materialized: Callable[[str, str], bool]) -> None:
        self.catalog = catalog
        self.store = store
        self.versions = versions
        self.writer = writer
        self.is_materialized = is_materialized
        # Iceberg schemas by (format, global schema id): a registered schema never changes.
        self._schemas: LRUCache[tuple[str, int], dict[str, Any]] = LRUCache(maxsize=4096)
        # Loaded tables by everything their metadata is derived from: while a table neither commits nor
        # changes (nor is truncated or expired), loading it again takes two reads of the database.
        self._loaded: LRUCache[tuple[Any, ...], LoadedTable] = LRUCache(maxsize=256)
        self._lock = threading.Lock()

    # -- namespaces ------------------------------------------------------------------------------

    def list_namespaces(self, token: str | None, limit: int) -> Page:
        """A page of scopes."""
        return self.catalog.list_scopes(token, limit)

    def get_namespace(self, name: str) -> Scope:
        """A scope (ScopeNotFound if none)."""
        return self.catalog.get_scope(name)

    def create_namespace(self, name: str, properties: dict[str, str]) -> Scope:
        """Create a scope; the ``comment`` property is its comment."""
        rest = dict(properties)
        comment = rest.pop(COMMENT, "")
        return self.catalog.create_scope(Scope(name, comment, rest))

    def update_namespace(self, name: str, updates: dict[str, str], removals: list[str]) -> tuple[list[str], list[str]]:
        """Set and remove properties; (removed, missing) of the removals."""
        both = set(updates) & set(removals)
        if both:
            raise BadRequest(f"property {sorted(both)[0]!r} is both updated and removed")
        before = namespace_properties(self.catalog.get_scope(name))
        rest = dict(updates)
        comment = rest.pop(COMMENT, None)
        if COMMENT in removals:
            comment = ""
        self.catalog.alter_scope(name, rest, [r for r in removals if r != COMMENT], comment)
        return [r for r in removals if r in before], [r for r in removals if r not in before]

    def drop_namespace(self, name: str) -> None:
        """Delete an empty scope (ScopeNotEmpty, 409, otherwise: Iceberg never cascades)."""
        try:
            self.catalog.delete_scope(name, cascade=False, purge=False)
        except ScopeNotEmpty as e:
            raise ScopeNotEmpty(f"{e.message}; drop its tables first") from None

    # -- tables ----------------------------------------------------------------------------------

    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's tables."""
        return self.catalog.list_tables(scope, token, limit)

    def create_table(self, scope: str, name: str, schema: dict[str, Any], spec: dict[str, Any] | None,
                     properties: dict[str, str], location: str | None) -> LoadedTable:
        """Create a table of an Iceberg schema and partition spec (as CREATE TABLE does: a stream, a schema
        group under the default policy and its first version); the catalog gives the columns their ids."""
        struct = spark_struct(schema)
        partitioning = None
        if spec and spec.get("fields"):
            by_id = {f.get("id"): f.get("name") for f in schema.get("fields", []) if isinstance(f, dict)}
            try:
                fields = tuple(
                    PartitionField(1000 + i, int(f["source-id"]), str(by_id[f["source-id"]]),
                                   Transform.parse(f["transform"]), str(f.get("name", "")))
                    for i, f in enumerate(spec["fields"])
                )
            except (KeyError, TypeError, ValueError) as e:
                raise BadRequest(f"partition spec {spec!r}: no such source column or field {e}") from None
            partitioning = PartitionSpec(1, fields).text()
        request = TableRequest(name=name, schema=struct, properties=dict(properties), location=location,
                               partitioning=partitioning)
        self.catalog.create_table(scope, request)
        return self.load_table(scope, name)

    def table_exists(self, scope: str, name: str) -> None:
        """TableNotFound unless the table exists."""
        self.catalog.get_table(scope, name)

    def drop_table(self, scope: str, name: str, purge: bool) -> None:
        """Drop a table, and with ``purge`` its files when the server manages its location (as DROP
        TABLE PURGE does); a materialized table is dropped through Streamcat's own API only."""
        if self.is_materialized(scope, name):
            raise NotSupported(
                f"{scope}.{name} is a materialized table, read-only to Iceberg clients: drop it with DROP "
                "MATERIALIZED TABLE or Streamcat's API"
            )
        self.catalog.drop_table(scope, name, purge=purge)

    @staticmethod
    def rename_table() -> None:
        """Refused: a Streamcat table's name is also its stream's and its schema group's."""
        raise NotSupported(
            "Streamcat tables cannot be renamed: a table's name is also the name of its stream, whose "
            "location holds its files, and of its schema group, whose encoding ids its data carries; create "
            "a new table and copy the rows, or define a view under the new name"
        )

    def _iceberg_schemas(self, table: Table) -> list[dict[str, Any]]:
        """Every live version of the table's group as an Iceberg schema, oldest first (the last is current)."""
        found = []
        for v in self.versions.versions(Namespace(table.scope), GroupName(table.name), None):
            key = (table.format, int(v.version.id))
            with self._lock:
                schema = self._schemas.get(key)
            if schema is None:
                struct = to_struct(table.format, v.schema.data, v.version.type)
                schema = iceberg_schema(struct, int(v.version.version))
                with self._lock:
                    self._schemas[key] = schema
            found.append(schema)
        return found

    def load_table(self, scope: str, name: str, refs_only: bool = False) -> LoadedTable:
        """The table's Iceberg metadata, its manifests written first where they are not yet."""
        table = self.catalog.get_table(scope, name)
        stream = table.stream
        key = (scope, name, stream.created_at, stream.last_commit, stream.retained_from, stream.truncated_at,
               table.version, int(table.schema_version.id), refs_only)
        with self._lock:
            found = self._loaded.get(key)
        if found is not None and self.writer.exists(found.metadata_location):
            return found
        loaded = self._derive(table, refs_only)
        with self._lock:
            self._loaded[key] = loaded
        return loaded

    def _derive(self, table: Table, refs_only: bool) -> LoadedTable:
        scope, name = table.scope, table.name
        schemas = self._iceberg_schemas(table)
        encodings = self.versions.encodings(Namespace(scope), GroupName(name))
        history = snapshots.history(self.store.facts(scope, name), keyed=bool(table.primary_key),
                                    versions={int(e): int(v.version) for e, v, _codec in encodings})
        current = iceberg_struct(with_ids(table.schema))
        source_types = {f["id"]: f["type"] for f in current["fields"]}
        files = TableFiles(
            location=table.stream.location,
            table_uuid=table_uuid(table),
            schema=schemas[-1],
            specs={
                s.spec_id: SpecLayout.of(iceberg_spec(s), source_types) for s in table.partition_specs
            },
            history=history,
        )
        lists = self.writer.manifest_lists(files)
        metadata = table_metadata(table, schemas, history, lists, uri_of(table.stream.location), refs_only)
        return LoadedTable(self.writer.metadata_file(files, metadata), metadata)

    def commit_table(
        self, scope: str, name: str, requirements: list[Requirement], updates: list[Update]
    ) -> LoadedTable:
        """Apply an Iceberg client's commit: its requirements checked against the table as it is now, its
        updates made one ALTER TABLE (a new schema checked by the group's policy); the table's new metadata."""
        table = self.catalog.get_table(scope, name)
        if self.is_materialized(scope, name):
            raise NotSupported(
                f"{scope}.{name} is a materialized table: only its refresher writes it; change its query with "
                "ALTER MATERIALIZED TABLE"
            )
        if table.primary_key:
            raise NotSupported(
                f"{scope}.{name} is a primary-key table: its writes merge by key ({', '.join(table.primary_key)}), "
                "which Iceberg clients do not do; write it with Spark or Streamcat's writers"
            )
        before = self.load_table(scope, name).metadata
        commits.check(requirements, before)
        changes = commits.changes(updates, before)
        added = commits.added_snapshots(updates)
        if added:
            if changes:
                raise NotSupported("a commit that adds data cannot also change the table's schema or properties: "
                                   "commit them one after the other")
            self._append(table, before, added)
        elif changes:
            # The version read: a change made since the requirements were checked fails the commit (409).
            self.catalog.alter_table(scope, name, table.version, changes)
        return self.load_table(scope, name)

    def _append(self, table: Table, metadata: dict[str, Any], added: list[dict[str, Any]]) -> None:
        """Make the data files of a client's snapshots one Streamcat commit, once each file's footer shows the
        table's field ids and types and, in a partitioned table, that its rows are in the partition of the
        table's current spec its manifest gives it: an append, or an overwrite when they remove every live
        file (pyiceberg's ``overwrite``); the chunks record the encoding id of the table's current version
        and their partitions."""
        location = table.stream.location
        schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
        found = [datafiles.snapshot_files(location, snapshot) for snapshot in added]
        removed = {path for f in found for path in f.removed}
        files = [f for each in found for f in each.added if f.path not in removed]
        removed -= {f.path for each in found for f in each.added}
        if removed:
            live = {c.path for c in self.catalog.snapshot(table.scope, table.name, cut=table.stream.last_commit).chunks}
            if removed != live:
                raise NotSupported(
                    f"{table.scope}.{table.name}: a commit from an Iceberg client may remove every file of the table "
                    "(pyiceberg's overwrite without a filter) but not some of them; delete rows with Spark"
                )
        elif not files:
            raise BadRequest("add-snapshot: the snapshot adds no data file")
        spec = table.partition_spec
        types = {fid: column["type"] for column in with_ids(table.schema)["fields"]
                 if isinstance(column.get("type"), str) and (fid := field_id(column)) is not None}
        for f in files:
            datafiles.check_footer(location, f, schema, spec, types)
        encoding = int(self.versions.encoding_id(Namespace(table.scope), GroupName(table.name),
                                                 table.schema_version, NO_CODEC))
        chunks = [Chunk(path=f.path, kind=COLUMNAR, event_count=f.rows, bytes=f.bytes, encoding_ids=(encoding,),
                        partition=None if spec.unpartitioned else {"specId": spec.spec_id,
                                                                   "values": datafiles.partition_values(f, spec)})
                  for f in files]
        # Made only if no commit came since the metadata the requirements were checked against (409 otherwise).
        self.catalog.commit(table.scope, table.name, chunks,
                            CommitOptions(kind=OVERWRITE if removed else APPEND,
                                          expected_last_commit=table.stream.last_commit))
