"""Catalog operations: scopes, streams, tables (stream + group + Spark schema) and commits."""

from __future__ import annotations

import contextlib
import copy
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cachetools import LRUCache

from catalog_api import locations, storage
from catalog_api.changes import COLUMN_OPS, TABLE_OPS, apply_column_changes
from catalog_api.cuts import check_truncation
from catalog_api.errors import LocationNotAllowed, ScopeNotEmpty, StreamSealed
from catalog_api.groups import SchemaGroups
from catalog_api.model import TABLE_FORMATS, Chunk, Commit, Scope, Snapshot, Stream, StreamConfig, Table
from catalog_api.schema import to_schema, to_struct
from catalog_api.store import CatalogStore, Page, Placement, TableMeta, TableRecord, TableSpec
from registry.errors import BadRequest, Conflict, GroupNotFound, WriteConflict
from registry.ids import GroupName, Namespace, TypeName
from registry.model import (
    OWNER_PROPERTY,
    Compatibility,
    GroupProperties,
    SchemaInfo,
    SchemaWithVersion,
    SerializationFormat,
)

log = logging.getLogger(__name__)

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
    """The catalog's use cases and rules; the REST views are thin wrappers around these.

    ``groups`` is the schema registry as the catalog needs it; the store hands the service's
    callbacks a ``SchemaGroups`` bound to its own transaction for work that must be atomic.
    Streams keep their files under ``warehouse`` or, when their creator names a location, under
    one of ``allowed_locations`` (the rules are catalog_api/locations.py's).
    """

    def __init__(
        self, store: CatalogStore, groups: SchemaGroups, warehouse: str, allowed_locations: Sequence[str] = ()
    ) -> None:
        self.store = store
        self.groups = groups
        self._warehouse = locations.parse_root(warehouse)
        self._roots = tuple(locations.parse_root(root) for root in allowed_locations)
        self.warehouse = str(self._warehouse)
        # Spark schemas by (format, schema id): a registered schema's content never changes.
        self._structs: LRUCache[tuple[str, int], dict[str, Any]] = LRUCache(maxsize=4096)
        self._structs_lock = threading.Lock()

    def default_location(self, scope: str, stream: str) -> str:
        """Where a stream's chunk files go unless its creator says otherwise."""
        return storage.join(self.warehouse, scope, stream)

    def _placement(self, scope: str, stream: str, location: str | None) -> Placement:
        """Where a new stream's files go: normalized, allowed, and (checked by the store, in the
        creating transaction) clear of every live stream's location. Managed when it is the
        location the server gives, whether or not the creator spelled it out."""
        default = locations.parse(self.default_location(scope, stream))
        wanted = default if location is None else locations.parse(location)
        locations.check_allowed(wanted, self._warehouse, self._roots)

        def check(live: list[tuple[str, str]]) -> None:
            locations.check_overlap(wanted, live)

        return Placement(str(wanted), wanted == default, check)

    def _purge(self, streams: Sequence[Stream]) -> None:
        """Delete the files of the managed streams among ``streams``, each only if its location is
        still inside the warehouse with no symlink on the way; external locations keep theirs."""
        for stream in streams:
            if not stream.managed:
                continue
            try:
                location: locations.Location | None = locations.parse(stream.location)
            except LocationNotAllowed:
                location = None
            if location is None or not locations.symlink_free_below(self._warehouse, location):
                # Not the server's to delete (a row from before locations were confined, a moved
                # warehouse, a symlink made since): metadata goes, files stay, and an operator is told.
                log.warning(
                    "purge of %s.%s kept %s: not inside the warehouse %s without a symlink",
                    stream.scope,
                    stream.name,
                    stream.location,
                    self.warehouse,
                )
                continue
            storage.delete_tree(str(location))

    # -- scopes --------------------------------------------------------------------------------

    def create_scope(self, scope: Scope) -> Scope:
        """Create a scope (and so the registry namespace of its name)."""
        return self.store.create_scope(scope)

    def get_scope(self, name: str) -> Scope:
        """A scope by name."""
        return self.store.get_scope(name)

    def list_scopes(self, token: str | None, limit: int) -> Page:
        """A page of scopes."""
        return self.store.list_scopes(token, limit)

    def alter_scope(
        self, name: str, set_properties: dict[str, str], remove: Sequence[str], comment: str | None
    ) -> Scope:
        """Set and remove properties (removals first), and change the comment if given."""

        def change(scope: Scope) -> Scope:
            properties = {k: v for k, v in scope.properties.items() if k not in remove}
            properties.update(set_properties)
            return replace(scope, properties=properties, comment=scope.comment if comment is None else comment)

        return self.store.update_scope(name, change)

    def delete_scope(self, name: str, cascade: bool, purge: bool) -> None:
        """Delete a scope; with cascade its streams, tables and groups; with purge the files of its
        managed streams too."""
        namespace = Namespace(name)

        def clear(streams: list[Stream], groups: SchemaGroups) -> None:
            held = groups.count_groups(namespace)
            if (streams or held) and not cascade:
                raise ScopeNotEmpty(
                    f"scope {name!r} holds {len(streams)} streams and {held} groups; delete with cascade"
                )
            groups.delete_namespace(namespace)

        gone = self.store.delete_scope(name, clear)
        if purge:
            self._purge(gone)

    # -- streams --------------------------------------------------------------------------------

    def create_stream(self, scope: str, name: str, config: StreamConfig, location: str | None) -> Stream:
        """Create a stream at ``location`` (by default under the warehouse); LocationNotAllowed or
        LocationOverlaps if the location breaks a rule of catalog_api/locations.py."""
        return self.store.create_stream(scope, name, config, self._placement(scope, name, location))

    def get_stream(self, scope: str, name: str) -> Stream:
        """A stream by name."""
        return self.store.get_stream(scope, name)

    def list_streams(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's streams (tables' streams included)."""
        return self.store.list_streams(scope, token, limit)

    def seal_stream(self, scope: str, name: str) -> Stream:
        """Refuse further commits to the stream (a sealed stream stays readable)."""
        return self.store.update_stream(scope, name, lambda stream: replace(stream, sealed=True))

    def truncate_stream(self, scope: str, name: str, cut: int) -> Stream:
        """Hide every commit up to and including ``cut`` from reads."""
        return self.store.update_stream(
            scope, name, lambda stream: replace(stream, truncated_at=check_truncation(stream, cut))
        )

    def delete_stream(self, scope: str, name: str, purge: bool) -> None:
        """Delete a stream that backs no table; with purge also its files, if the server manages them."""

        def check(_stream: Stream, is_table: bool) -> None:
            if is_table:
                raise Conflict(f"stream {scope}.{name} backs a table; drop the table instead")

        gone = self.store.delete_stream(scope, name, check)
        if purge:
            self._purge([gone])

    # -- tables ----------------------------------------------------------------------------------

    def _struct(self, fmt: str, latest: SchemaWithVersion) -> dict[str, Any]:
        key = (fmt, latest.version.id)
        with self._structs_lock:
            found = self._structs.get(key)
        if found is None:
            found = to_struct(fmt, latest.schema.data, latest.version.type)
            with self._structs_lock:
                self._structs[key] = found
        return copy.deepcopy(found)

    def _view(self, record: TableRecord, groups: SchemaGroups) -> Table:
        """The table as clients see it: its record, with the schema and policy of its group."""
        stream = record.stream
        namespace, group = Namespace(stream.scope), GroupName(stream.name)
        try:
            properties = groups.get_group(namespace, group)
        except GroupNotFound:
            raise _lost_group(stream.scope, stream.name) from None
        latest = groups.latest_version(namespace, group)
        if latest is None:
            raise Conflict(f"table {stream.scope}.{stream.name} has no schema: every version of its group is deleted")
        return Table(
            scope=stream.scope,
            name=stream.name,
            stream=stream,
            format=record.format,
            type_name=latest.version.type,
            schema=self._struct(record.format, latest),
            schema_version=latest.version,
            compatibility=properties.compatibility,
            comment=record.comment,
            properties=dict(record.properties),
            version=record.version,
        )

    def get_table(self, scope: str, name: str) -> Table:
        """A table with its current schema (its group's latest version)."""
        return self.store.get_table(scope, name, self._view)

    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's tables."""
        return self.store.list_tables(scope, token, limit, self._view)

    def create_table(self, scope: str, request: TableRequest) -> Table:
        """Create stream, group and first schema version together: a refused schema or location
        leaves nothing."""
        fmt = request.format.lower()
        if fmt not in TABLE_FORMATS:
            raise BadRequest(f"unknown table format {request.format!r}; expected one of {', '.join(TABLE_FORMATS)}")
        properties = dict(request.properties)
        policy = request.compatibility or Compatibility.of(DEFAULT_POLICY)
        if POLICY_PROPERTY in properties:
            policy = policy_from_property(properties.pop(POLICY_PROPERTY))
        info = _schema_info(request.schema, fmt, request.name, scope)
        owner = {"streamcat.table": "true", OWNER_PROPERTY: f"table {scope}.{request.name}"}
        group = GroupProperties(SerializationFormat(TABLE_FORMATS[fmt]), policy, False, owner)
        namespace, group_name = Namespace(scope), GroupName(request.name)

        def register(groups: SchemaGroups) -> None:
            groups.create_group(namespace, group_name, group)
            groups.add_schema(namespace, group_name, info)

        spec = TableSpec(fmt, request.comment, properties)
        placement = self._placement(scope, request.name, request.location)
        return self.store.create_table(scope, request.name, request.config, placement, spec, register, self._view)

    def alter_table(
        self, scope: str, name: str, expected_version: int | None, changes: Sequence[dict[str, Any]]
    ) -> Table:
        """Apply Spark's table changes; a new schema must pass the group's policy (409 with reasons)."""
        unknown = [c.get("op") for c in changes if c.get("op") not in COLUMN_OPS + TABLE_OPS]
        if unknown:
            raise BadRequest(f"unknown table changes {unknown}; expected {', '.join(COLUMN_OPS + TABLE_OPS)}")
        namespace, group = Namespace(scope), GroupName(name)

        def update(record: TableRecord, groups: SchemaGroups) -> TableMeta:
            if expected_version is not None and expected_version != record.version:
                raise WriteConflict(
                    f"table {scope}.{name} is at version {record.version}, not {expected_version}; reload and retry"
                )
            current = self._view(record, groups)
            properties, comment = dict(record.properties), record.comment
            for change in changes:
                op = change["op"]
                if op == "setProperty" and change.get("key") == POLICY_PROPERTY:
                    groups.update_compatibility(namespace, group, policy_from_property(str(change["value"])), None)
                elif op == "setProperty":
                    properties[str(change["key"])] = str(change["value"])
                elif op == "removeProperty":
                    properties.pop(str(change["key"]), None)
                elif op == "setComment":
                    comment = str(change.get("comment") or "")
                elif op == "setCompatibility":
                    groups.update_compatibility(namespace, group, change["compatibility"], None)
            schema = apply_column_changes(current.schema, changes)
            if schema != current.schema:
                self._make_current(groups, namespace, group, _schema_info(schema, record.format, name, scope))
            return TableMeta(comment, properties)

        return self.store.alter_table(scope, name, update, self._view)

    @staticmethod
    def _make_current(groups: SchemaGroups, namespace: Namespace, group: GroupName, info: SchemaInfo) -> None:
        """Make ``info`` the group's latest version, checked by its policy."""
        added = groups.add_schema(namespace, group, info)
        latest = groups.latest_version(namespace, group)
        if latest is not None and latest.version != added:
            # An older live version has this very content (a column added, then dropped): the
            # registry answered with it. Retire it and add it again, so that it is the newest.
            groups.delete_by_id(namespace, group, added.id)
            groups.add_schema(namespace, group, info)

    def drop_table(self, scope: str, name: str, purge: bool) -> None:
        """Drop the table: stream, commits and group; with purge also its files, if the server manages them."""

        def unregister(groups: SchemaGroups) -> None:
            # A table that lost its group (_lost_group) is dropped all the same.
            with contextlib.suppress(GroupNotFound):
                groups.drop_group(Namespace(scope), GroupName(name))

        gone = self.store.drop_table(scope, name, unregister)
        if purge:
            self._purge([gone])

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
        paths = [c.path for c in chunks]
        outside = [p for p in paths if not locations.safe_relative(p)]
        if outside:
            # The wire model refuses these too; the rule is the service's, whoever calls it.
            raise BadRequest(f"chunk path {outside[0]!r} must be relative to the stream's location, without '..'")
        if len(set(paths)) != len(paths):
            raise BadRequest("a commit lists the same chunk path twice")
        wanted = frozenset(e for c in chunks for e in c.encoding_ids)

        def check(target: Stream, is_table: bool, groups: SchemaGroups) -> None:
            if target.sealed:
                raise StreamSealed(f"stream {scope}.{stream} is sealed")
            for c in chunks:
                if not 0 <= c.segment < target.config.segments:
                    raise BadRequest(
                        f"chunk {c.path}: segment {c.segment} is not one of the stream's {target.config.segments}"
                    )
            if not is_table:
                return
            try:
                unknown = groups.unknown_encodings(Namespace(scope), GroupName(stream), wanted)
            except GroupNotFound:
                raise _lost_group(scope, stream) from None
            if wanted and unknown:
                raise BadRequest(f"encoding ids {sorted(unknown)} are not encodings of group {stream!r}")

        return self.store.commit(
            scope,
            stream,
            chunks,
            overwrite=overwrite,
            writer_id=writer_id,
            writer_sequence=writer_sequence,
            properties=properties or {},
            check=check,
        )

    def commits(self, scope: str, stream: str, after: int, limit: int) -> list[Commit]:
        """The stream's commits numbered above ``after``, oldest first."""
        return self.store.commits(scope, stream, after, limit)

    def snapshot(
        self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None, after: int | None = None
    ) -> Snapshot:
        """Chunks to read at a cut, as of a time, or appended after a position."""
        return self.store.snapshot(scope, stream, cut, as_of_time, after)

    def garbage(self, scope: str, stream: str, grace_seconds: float) -> tuple[str, list[storage.StoredFile]]:
        """The stream's location and the files below it that no live commit references and that
        are older than the grace period (a writer may be between writing and committing them).

        Only files the location really holds: none reached through a symlink anywhere below the
        root the location is in (a symlink made after the stream was created could otherwise lead
        into another stream's directory, or out). A stream whose location the server would not
        give today (outside the warehouse and every allowed root, or leading out of it through a
        symlink) is refused with LocationNotAllowed: its directory is not the server's to clean.
        """
        current = self.store.get_stream(scope, stream)
        try:
            location = locations.parse(current.location)
            locations.check_allowed(location, self._warehouse, self._roots)
        except LocationNotAllowed as e:
            raise LocationNotAllowed(f"stream {scope}.{stream} is not collected: {e.message}") from None
        roots = [root for root in (self._warehouse, *self._roots) if root.contains(location)]
        referenced = self.store.chunk_paths(scope, stream)
        horizon = time.time_ns() - int(grace_seconds * 1e9)
        found = [
            f
            for f in storage.list_files(str(location))
            if f.path not in referenced
            and f.mtime_ns < horizon
            and locations.safe_relative(f.path)
            and any(locations.symlink_free_below(root, location.child(f.path)) for root in roots)
        ]
        return str(location), found

    def collect_garbage(self, scope: str, stream: str, grace_seconds: float) -> list[str]:
        """Delete what :meth:`garbage` finds; returns the paths deleted, relative to the location."""
        location, found = self.garbage(scope, stream, grace_seconds)
        paths = [f.path for f in found]
        storage.delete_files(location, paths)
        return paths

    def referenced_paths(self, scope: str, stream: str) -> set[str]:
        """Paths of the stream's chunks that a commit still makes visible."""
        return self.store.chunk_paths(scope, stream)


def _lost_group(scope: str, table: str) -> Conflict:
    """The answer about a table whose group is gone. Dropping a table or its scope locks the
    table's stream before its group, and the registry API refuses to delete a table's group, so
    only a hand in the database gets here: a conflict to clear up by dropping the table, not a 500."""
    return Conflict(f"table {scope}.{table} has no schema group {table!r}; drop the table and create it again")


def _schema_info(struct: dict[str, Any], fmt: str, table: str, scope: str) -> SchemaInfo:
    """The registry schema of a Spark table schema in the table's format."""
    type_name, data = to_schema(struct, fmt, _avro_name(table), _avro_name(scope))
    return SchemaInfo(TypeName(type_name), SerializationFormat(TABLE_FORMATS[fmt]), data)
