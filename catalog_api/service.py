"""Catalog operations: scopes, streams, tables (stream + group + Spark schema) and commits."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog_api import storage
from catalog_api.changes import COLUMN_OPS, TABLE_OPS, apply_column_changes
from catalog_api.model import TABLE_FORMATS, Chunk, Commit, Scope, Snapshot, Stream, StreamConfig, Table
from catalog_api.schema import to_schema
from catalog_api.store import CatalogStore, Page, TableSpec, TableUpdate
from registry.errors import BadRequest
from registry.ids import GroupName, Namespace, TypeName
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat, VersionInfo
from registry.service import RegistryService
from registry.store.base import RegistryStore

#: Default policy of a table's group, as in Confluent's registry.
DEFAULT_POLICY = "Backward"
_POLICY_NAMES = {
    p.lower().replace("_", ""): p
    for p in (
        "AllowAny",
        "DenyAll",
        "Backward",
        "Forward",
        "Full",
        "BackwardTransitive",
        "ForwardTransitive",
        "FullTransitive",
    )
}
#: Table properties that steer the catalog rather than being stored as they are.
POLICY_PROPERTY = "compatibility"


def policy_from_property(value: str) -> Compatibility:
    """A policy from a TBLPROPERTIES value: ``BACKWARD``, ``full_transitive``, ``FullTransitive``..."""
    key = value.strip().lower().replace("_", "").replace("-", "")
    if key not in _POLICY_NAMES:
        raise BadRequest(f"unknown compatibility {value!r}; expected one of {', '.join(_POLICY_NAMES.values())}")
    return Compatibility.of(_POLICY_NAMES[key])


#: Names a record or message may not take: Avro's primitive types and the options the
#: protobuf conversion declares.
_RESERVED_NAMES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string", "spark_type"}


def _avro_name(name: str) -> str:
    # Avro names are [A-Za-z_][A-Za-z0-9_]*; scopes and tables may also hold '-' and '.'.
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    cleaned = cleaned if re.match(r"[A-Za-z_]", cleaned) else f"_{cleaned}"
    return f"{cleaned}_" if cleaned in _RESERVED_NAMES else cleaned


@dataclass(frozen=True)
class TableRequest:
    """What CREATE TABLE says."""

    name: str
    schema: dict[str, Any]
    format: str = "avro"
    compatibility: Compatibility | None = None
    comment: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    config: StreamConfig = field(default_factory=StreamConfig)
    location: str | None = None


class CatalogService:
    """The catalog's use cases; the REST views are thin wrappers around these."""

    def __init__(self, store: CatalogStore, registry: RegistryService, warehouse: str) -> None:
        self.store = store
        self.registry = registry
        self.warehouse = warehouse.rstrip("/")

    def default_location(self, scope: str, stream: str) -> str:
        """Where a stream's chunk files go unless its creator says otherwise."""
        return storage.join(self.warehouse, scope, stream)

    # -- scopes --------------------------------------------------------------------------------

    def create_scope(self, scope: Scope) -> Scope:
        """Create a scope (and so the registry namespace of its name)."""
        return self.store.create_scope(scope)

    def list_scopes(self, token: str | None, limit: int) -> Page:
        """A page of scopes."""
        return self.store.list_scopes(token, limit)

    def delete_scope(self, name: str, cascade: bool, purge: bool) -> None:
        """Delete a scope; with cascade its streams, tables and groups; with purge their files too."""
        gone = self.store.delete_scope(name, cascade)
        self.registry.answers.forget((name,))
        if purge:
            for stream in gone:
                storage.delete_tree(stream.location)

    # -- streams --------------------------------------------------------------------------------

    def create_stream(self, scope: str, name: str, config: StreamConfig, location: str | None) -> Stream:
        """Create a stream at ``location`` (by default under the warehouse)."""
        return self.store.create_stream(scope, name, config, location or self.default_location(scope, name))

    def delete_stream(self, scope: str, name: str, purge: bool) -> None:
        """Delete a stream; with purge also its files."""
        gone = self.store.delete_stream(scope, name)
        if purge:
            storage.delete_tree(gone.location)

    # -- tables ----------------------------------------------------------------------------------

    def create_table(self, scope: str, request: TableRequest) -> Table:
        """Create stream, group and first schema version together: a refused schema leaves nothing."""
        fmt = request.format.lower()
        if fmt not in TABLE_FORMATS:
            raise BadRequest(f"unknown table format {request.format!r}; expected one of {', '.join(TABLE_FORMATS)}")
        properties = dict(request.properties)
        policy = request.compatibility or Compatibility.of(DEFAULT_POLICY)
        if POLICY_PROPERTY in properties:
            policy = policy_from_property(properties.pop(POLICY_PROPERTY))
        type_name, data = to_schema(request.schema, fmt, _avro_name(request.name), _avro_name(scope))
        info = SchemaInfo(TypeName(type_name), SerializationFormat(TABLE_FORMATS[fmt]), data)
        group = GroupProperties(SerializationFormat(TABLE_FORMATS[fmt]), policy, False, {"streamcat.table": "true"})
        namespace, group_name = Namespace(scope), GroupName(request.name)

        def register(store: RegistryStore) -> VersionInfo:
            registry = self.registry.using(store)
            registry.create_group(namespace, group_name, group)
            return registry.add_schema(namespace, group_name, info)

        spec = TableSpec(fmt, type_name, request.schema, request.comment, properties)
        location = request.location or self.default_location(scope, request.name)
        return self.store.create_table(scope, request.name, request.config, location, spec, register)

    def alter_table(
        self, scope: str, name: str, expected_version: int | None, changes: Sequence[dict[str, Any]]
    ) -> Table:
        """Apply Spark's table changes; a new schema must pass the group's policy (409 with reasons)."""
        unknown = [c.get("op") for c in changes if c.get("op") not in COLUMN_OPS + TABLE_OPS]
        if unknown:
            raise BadRequest(f"unknown table changes {unknown}; expected {', '.join(COLUMN_OPS + TABLE_OPS)}")

        def update(table: Table, store: RegistryStore) -> TableUpdate:
            registry = self.registry.using(store)
            namespace, group = Namespace(scope), GroupName(name)
            properties, comment = dict(table.properties), table.comment
            for change in changes:
                op = change["op"]
                if op == "setProperty" and change.get("key") == POLICY_PROPERTY:
                    registry.update_compatibility(namespace, group, policy_from_property(str(change["value"])), None)
                elif op == "setProperty":
                    properties[str(change["key"])] = str(change["value"])
                elif op == "removeProperty":
                    properties.pop(str(change["key"]), None)
                elif op == "setComment":
                    comment = str(change.get("comment") or "")
                elif op == "setCompatibility":
                    registry.update_compatibility(
                        namespace, group, Compatibility.from_json(change["compatibility"]), None
                    )
            schema = apply_column_changes(table.schema, changes)
            version = None
            if schema != table.schema:
                type_name, data = to_schema(schema, table.format, _avro_name(name), _avro_name(scope))
                info = SchemaInfo(TypeName(type_name), SerializationFormat(TABLE_FORMATS[table.format]), data)
                version = registry.add_schema(namespace, group, info)
            return TableUpdate(schema, version, comment, properties)

        return self.store.alter_table(scope, name, expected_version, update)

    def drop_table(self, scope: str, name: str, purge: bool) -> None:
        """Drop the table: stream, commits and group; with purge also its files."""
        gone = self.store.drop_table(scope, name)
        self.registry.answers.forget((scope, name))
        if purge:
            storage.delete_tree(gone.location)

    # -- commits ----------------------------------------------------------------------------------

    def commit(
        self,
        scope: str,
        stream: str,
        chunks: Sequence[Chunk],
        *,
        overwrite: bool = False,
        writer_id: str | None = None,
        writer_sequence: int | None = None,
        properties: dict[str, str] | None = None,
    ) -> Commit:
        """Make chunk files visible, all at once."""
        if not chunks and not overwrite:
            raise BadRequest("a commit needs at least one chunk (or overwrite, to empty the stream)")
        if (writer_id is None) != (writer_sequence is None):
            raise BadRequest("writerId and writerSequence go together")
        return self.store.commit(
            scope,
            stream,
            chunks,
            overwrite=overwrite,
            writer_id=writer_id,
            writer_sequence=writer_sequence,
            properties=properties or {},
        )

    def snapshot(
        self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None, after: int | None = None
    ) -> Snapshot:
        """Chunks to read at a cut, as of a time, or appended after a position."""
        return self.store.snapshot(scope, stream, cut, as_of_time, after)

    def collect_garbage(self, scope: str, stream: str, grace_seconds: float) -> list[str]:
        """Delete files under the stream that no live commit references and that are older
        than the grace period (a writer may be between writing and committing them)."""
        location = self.store.get_stream(scope, stream).location
        referenced = self.store.chunk_paths(scope, stream)
        horizon = time.time_ns() - int(grace_seconds * 1e9)
        garbage = [f.path for f in storage.list_files(location) if f.path not in referenced and f.mtime_ns < horizon]
        storage.delete_files(location, garbage)
        return garbage
