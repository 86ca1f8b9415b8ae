"""Catalog operations: scopes, streams, tables (stream + group + Spark schema) and commits."""

from __future__ import annotations

import contextlib
import copy
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cachetools import LRUCache

from catalog_api import constraints, locations, storage
from catalog_api.aggregates import (
    AggregateError,
    check_columns,
    check_row_count_field,
    field_aggregates,
    has_field_settings,
)
from catalog_api.changes import POLICY_PROPERTY, TableChange, apply, partitioning_of, policy_from_property
from catalog_api.cuts import check_expiry, check_truncation
from catalog_api.errors import (
    CommitConflict,
    CommitNotFound,
    LocationNotAllowed,
    ScopeNotEmpty,
    StreamSealed,
    TableNotFound,
)
from catalog_api.groups import SchemaGroups, TableRules
from catalog_api.model import (
    APPEND,
    COLUMNAR,
    DELETES,
    GROUP_PRIMARY_KEY,
    MERGE_ENGINE_PROPERTY,
    MERGE_ENGINES,
    METADATA_FOLDER,
    OVERWRITE,
    PRIMARY_KEY_PROPERTY,
    SEQUENCE_FIELD_PROPERTY,
    TABLE_FORMATS,
    Change,
    Chunk,
    Commit,
    CommitOptions,
    Partitions,
    PartitionSummary,
    Plan,
    Reader,
    Scope,
    Snapshot,
    Stream,
    StreamConfig,
    Table,
    TableCommit,
    WriterCommit,
    primary_key,
)
from catalog_api.partitioning.pruning import ChunkPruner
from catalog_api.partitioning.rules import (
    by_partition,
    check_partition,
    check_sources,
    check_split,
    new_spec,
    stored_partition,
)
from catalog_api.partitioning.spec import UNPARTITIONED, with_current_names
from catalog_api.schema import to_schema, to_struct
from catalog_api.schema.fieldids import carry_field_ids
from catalog_api.schema.spark import parse_struct
from catalog_api.store import CatalogStore, CheckCommit, Page, Placement, TableMeta, TableRecord, TableSpec
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
    #: PARTITIONED BY in the text form (docs/partitioning.md); None or blank: unpartitioned
    partitioning: str | None = None


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
        #: What else a scope may hold (views): each says what it holds of a scope ("2 views"), or ""
        #: for nothing; asked inside a scope's deletion, after the scope is locked.
        self.scope_holdings: list[Callable[[str], str]] = []
        #: Checks every commit must pass (materialized tables take commits from their refresher only):
        #: each is given (scope, stream, commit properties, commit kind) and raises to refuse it.
        self.commit_guards: list[Callable[[str, str, Mapping[str, str], str], None]] = []
        #: Where a table's CHECK constraints are mirrored as CEL rules (None: not mirrored).
        self.rules: TableRules | None = None

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

    def count_tables(self) -> int:
        """How many tables all scopes hold."""
        return self.store.count_tables()

    def recent_commits(self, limit: int) -> list[tuple[str, str, Commit]]:
        """The newest ``limit`` commits of every stream, newest first, as (scope, stream, commit)."""
        return self.store.recent_commits(limit)

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
            others = [said for holding in self.scope_holdings if (said := holding(name))]
            if (streams or held or others) and not cascade:
                raise ScopeNotEmpty(
                    f"scope {name!r} holds {len(streams)} streams and {held} groups"
                    + "".join(f", {said}" for said in others)
                    + "; delete with cascade"
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
        rule_set = constraints.rule_set_of(latest.schema.properties)
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
            primary_key=primary_key(record.properties),
            partition_spec=record.partition_spec,
            partition_specs=record.partition_specs,
            checks=tuple(constraints.in_force(record.properties, rule_set)),
            rule_set=rule_set,
        )

    def get_table(self, scope: str, name: str) -> Table:
        """A table with its current schema (its group's latest version)."""
        return self.store.get_table(scope, name, self._view)

    def list_table_entries(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's tables as TableEntry: names and what the tables' own rows say, cheaper
        than :meth:`list_tables` (which reads each table's schema from its group)."""
        return self.store.list_table_entries(scope, token, limit)

    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's tables."""
        return self.store.list_tables(scope, token, limit, self._view)

    def create_table(self, scope: str, request: TableRequest) -> Table:
        """Create stream, group and first schema version together: a refused schema or location
        leaves nothing."""
        fmt = request.format.lower()
        if fmt not in TABLE_FORMATS:
            raise BadRequest(f"unknown table format {request.format!r}; expected one of {', '.join(TABLE_FORMATS)}")
        # The wire model refuses a malformed schema too; the rule is the service's, whoever calls it, and
        # keys, partitioning and field ids below read a schema that is known to be a struct of columns.
        parse_struct(request.schema)
        properties = dict(request.properties)
        policy = request.compatibility or Compatibility.of(DEFAULT_POLICY)
        if POLICY_PROPERTY in properties:
            policy = policy_from_property(properties.pop(POLICY_PROPERTY))
        schema = _keyed_schema(request.schema, properties)
        _check_change_properties(schema, properties)
        # Partition fields name their source columns by field id: a partitioned table's columns get
        # theirs now rather than at their first column change.
        partitioning, schema = new_spec(request.partitioning or "", schema)
        check_sources(partitioning, schema, primary_key(properties))
        info = _schema_info(schema, fmt, request.name, scope)
        owner = {"streamcat.table": "true", OWNER_PROPERTY: f"table {scope}.{request.name}"}
        if PRIMARY_KEY_PROPERTY in properties:
            owner[GROUP_PRIMARY_KEY] = properties[PRIMARY_KEY_PROPERTY]
        group = GroupProperties(SerializationFormat(TABLE_FORMATS[fmt]), policy, False, owner)
        namespace, group_name = Namespace(scope), GroupName(request.name)

        def register(groups: SchemaGroups) -> None:
            groups.create_group(namespace, group_name, group)
            groups.add_schema(namespace, group_name, info)

        constraints.check_declared(properties)
        spec = TableSpec(fmt, request.comment, properties, partitioning)
        placement = self._placement(scope, request.name, request.location)
        created = self.store.create_table(scope, request.name, request.config, placement, spec, register, self._view)
        return self._mirror(created)

    def alter_table(
        self, scope: str, name: str, expected_version: int | None, changes: Sequence[TableChange]
    ) -> Table:
        """Apply Spark's table changes (catalog_api.changes); a new schema must pass the group's policy
        (409 with reasons)."""
        text = partitioning_of(changes)
        namespace, group = Namespace(scope), GroupName(name)

        before: list[Table] = []

        def update(record: TableRecord, groups: SchemaGroups) -> TableMeta:
            if expected_version is not None and expected_version != record.version:
                raise WriteConflict(
                    f"table {scope}.{name} is at version {record.version}, not {expected_version}; reload and retry"
                )
            current = self._view(record, groups)
            before[:] = [current]
            altered = apply(current, changes, groups)
            schema = altered.schema
            _check_key_columns_intact(current.primary_key, current.schema, schema)
            _check_change_properties(schema, altered.properties)
            partitioning = None
            if text is not None:
                partitioning, schema = new_spec(text, schema, record.partition_specs, record.last_partition_field_id)
            in_force = partitioning or with_current_names(record.partition_spec, current.schema)
            check_sources(in_force, schema, current.primary_key, dropping=altered.dropped)
            constraints.check_declared(altered.properties)
            if schema != current.schema:
                self._make_current(groups, namespace, group, _schema_info(schema, record.format, name, scope))
            return TableMeta(altered.comment, altered.properties, partitioning)

        altered = self.store.alter_table(scope, name, update, self._view)
        # A column change makes a version without the rule set: the previous one's rules carry over.
        previous = before[0].rule_set if before and altered.rule_set is None else None
        return self._mirror(altered, constraints.dropped(changes), previous)

    def _mirror(self, table: Table, dropped: Sequence[str] = (), previous: Mapping[str, Any] | None = None) -> Table:
        """``table`` once its schema version's rule set mirrors its CHECK constraints (catalog_api/constraints.py)."""
        if self.rules is None:
            return table
        base = table.rule_set or previous
        wanted = constraints.mirrored(table.properties, base, dropped)
        if wanted is None:
            if base is table.rule_set or not base:
                return table
            wanted = dict(base)
        # The table's version makes each mirrored contract new: a contract seen before would otherwise
        # answer its older version (registration is idempotent), which is not the latest.
        self.rules.set_rule_set(Namespace(table.scope), GroupName(table.name), wanted,
                                {constraints.REVISION_PROPERTY: str(table.version)})
        return self.get_table(table.scope, table.name)

    def replace_schema(self, scope: str, name: str, schema: dict[str, Any]) -> Table:
        """Make ``schema`` (a Spark StructType's JSON) the table's, as a new query of a materialized table
        asks: the group's policy decides (IncompatibleSchema, 409 with reasons), and a primary key's
        columns must stay as they are."""
        namespace, group = Namespace(scope), GroupName(name)

        def update(record: TableRecord, groups: SchemaGroups) -> TableMeta:
            current = self._view(record, groups)
            key = primary_key(record.properties)
            # The new query's columns keep the ids of the table's columns of the same path, so that
            # the table's older chunks read under the new schema.
            wanted = carry_field_ids(current.schema, _keyed_schema(schema, dict(record.properties)))
            _check_key_columns_intact(key, current.schema, wanted)
            check_sources(with_current_names(record.partition_spec, current.schema), wanted, key)
            if wanted != current.schema:
                self._make_current(groups, namespace, group, _schema_info(wanted, record.format, name, scope))
            return TableMeta(record.comment, dict(record.properties))

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
        self, scope: str, stream: str, chunks: Sequence[Chunk], options: CommitOptions | None = None, **fields: Any
    ) -> Commit:
        """Make chunk files visible (and, by kind, others invisible), all at once.

        ``options`` (or, for short, its ``fields`` as keywords) say how (``CommitOptions``, whose rules
        refuse what does not fit: BadRequest): an overwrite removes every live chunk; a row-level commit
        (which records the ``read_cut`` its scan read) and a compaction (whose chunks hold the state at
        ``base_cut``) may remove the live chunks ``removes`` names. With ``expected_last_commit`` the
        commit is made only if the stream's newest commit is that one (CommitConflict otherwise, as for
        a removed chunk that is no longer live).
        """
        options = options if options is not None else CommitOptions(**fields)
        chunks, check = self._commit_check(scope, stream, chunks, options)
        return self.store.commit(scope, stream, chunks, options, check)

    def commit_tables(self, parts: Sequence[TableCommit]) -> list[Commit]:
        """Commit to several tables (or streams) at once: each part is checked as :meth:`commit` checks it,
        and all are made in one transaction, at one time, or none is (what a writer that sends a batch's
        failing rows to a dead-letter table needs). A repeat of a request whose every part carries a writer
        id and sequence is acknowledged (each commit ``duplicate``) and changes nothing. BadRequest for no
        part, or for two parts of one stream."""
        if not parts:
            raise BadRequest("a commit of several tables needs at least one table's commit")
        seen: set[tuple[str, str]] = set()
        for part in parts:
            if (part.scope, part.stream) in seen:
                raise BadRequest(f"{part.scope}.{part.stream} has two commits in one request: make them one")
            seen.add((part.scope, part.stream))
        prepared = [self._commit_check(p.scope, p.stream, p.chunks, p.options) for p in parts]
        stored = [replace(p, chunks=chunks) for p, (chunks, _) in zip(parts, prepared, strict=True)]
        return self.store.commit_tables(stored, [check for _, check in prepared])

    def _commit_check(self, scope: str, stream: str, chunks: Sequence[Chunk],
                      options: CommitOptions) -> tuple[list[Chunk], CheckCommit]:
        """The chunks of a commit as stored, and the check of the locked stream that holds the commit's rules
        (BadRequest at once for options that do not fit)."""
        options.check(chunks)
        for guard in self.commit_guards:
            guard(scope, stream, options.properties, options.kind)
        # A writer names the spec it split its rows by, spec 0 included (it loaded the table unpartitioned).
        declared = {c.path for c in chunks if c.partition is not None}
        # spec 0 is kept as no partition
        chunks = [c if (p := stored_partition(c.path, c.partition)) is c.partition else replace(c, partition=p)
                  for c in chunks]
        wanted = frozenset(e for c in chunks for e in c.encoding_ids)

        def check(target: Stream, table: TableRecord | None, groups: SchemaGroups) -> None:
            if target.sealed:
                raise StreamSealed(f"stream {scope}.{stream} is sealed")
            if options.expected_last_commit is not None and options.expected_last_commit != target.last_commit:
                raise CommitConflict(
                    f"stream {scope}.{stream} is at commit {target.last_commit}, not {options.expected_last_commit}: "
                    "another commit came first; check it and retry"
                )
            if options.read_cut is not None and options.read_cut > target.last_commit:
                raise BadRequest(f"read cut {options.read_cut} is past the latest commit {target.last_commit}")
            if options.base_cut is not None and not target.retained_from <= options.base_cut <= target.last_commit:
                raise BadRequest(
                    f"base cut {options.base_cut} is not a retained cut of {scope}.{stream} "
                    f"({target.retained_from} to {target.last_commit})"
                )
            for c in chunks:
                if not 0 <= c.segment < target.config.segments:
                    raise BadRequest(
                        f"chunk {c.path}: segment {c.segment} is not one of the stream's {target.config.segments}"
                    )
            if table is not None:
                try:
                    unknown = groups.unknown_encodings(Namespace(scope), GroupName(stream), wanted)
                except GroupNotFound:
                    raise _lost_group(scope, stream) from None
                if wanted and unknown:
                    raise BadRequest(f"encoding ids {sorted(unknown)} are not encodings of group {stream!r}")
            what = f"table {scope}.{stream}" if table is not None else f"stream {scope}.{stream}"
            specs = {s.spec_id: s for s in (table.partition_specs if table is not None else (UNPARTITIONED,))}
            current = table.partition_spec if table is not None else UNPARTITIONED
            # The schema (values are checked against the source columns' types) only when some chunk has values.
            has_values = any(c.partition for c in chunks)
            schema = self._view(table, groups).schema if table is not None and has_values else None
            for c in chunks:
                # writers split the rows they write by partition: an append's or an overwrite's columnar chunks
                if options.kind in (APPEND, OVERWRITE) and c.kind == COLUMNAR:
                    check_split(what, c.path, c.path in declared, current)
                check_partition(what, c.path, c.partition, specs, schema)

        return chunks, check

    def find_commit(self, scope: str, stream: str, writer_id: str, writer_sequence: int) -> WriterCommit:
        """The commit ``writer_id`` made with ``writer_sequence`` and the paths of the chunks it added
        (CommitNotFound: that commit was not made)."""
        found = self.store.find_commit(scope, stream, writer_id, writer_sequence)
        if found is None:
            raise CommitNotFound(f"stream {scope}.{stream} has no commit of writer {writer_id!r} with sequence "
                                 f"{writer_sequence}")
        return found

    def commits(self, scope: str, stream: str, after: int, limit: int) -> list[Commit]:
        """The stream's commits numbered above ``after``, oldest first."""
        return self.store.commits(scope, stream, after, limit)

    def snapshot(
        self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None, after: int | None = None
    ) -> Snapshot:
        """Chunks to read at a cut (or as of a time), in (sequence, commit, position) order; or, with
        ``after``, the chunks the non-compaction commits after that position added. An expired cut
        (below the stream's ``retained_from``) is refused."""
        return self.store.snapshot(scope, stream, cut, as_of_time, after)

    def changes(self, scope: str, stream: str, after: int = 0, to: int | None = None) -> list[Change]:
        """The non-compaction commits in (``after``, ``to``] (``to``: the latest by default), each with
        the chunks it added and removed; ``after`` must be a retained cut (the feed replays on it)."""
        return self.store.changes(scope, stream, after, to)

    # -- partitioned tables: scan planning and partitions ---------------------------------------------

    def plan_chunks(
        self,
        scope: str,
        stream: str,
        filters: Sequence[dict[str, Any]],
        cut: int | None = None,
        as_of_time: int | None = None,
    ) -> Plan:
        """The chunks visible at a cut (or as of a time) that may hold a row passing every filter, in
        snapshot order, and what was skipped (docs/partitioning.md, "Pruning").

        A chunk is skipped when its partition (under its own spec, so chunks written before a spec change
        are pruned too) or, in a table read row by row, its statistics rule a filter out. Tables whose reads
        merge (a primary key, or position deletes at the cut) prune by partition only: one chunk's
        statistics cannot prove that a key's latest version, or the row a delete names, is elsewhere.
        Position-deletes chunks are never skipped unless their partition rules them out.
        """
        snapshot = self.store.snapshot(scope, stream, cut, as_of_time, None)
        try:
            table: Table | None = self.store.get_table(scope, stream, self._view)
        except TableNotFound:
            table = None  # a plain stream: no partitions, no key
        specs = {s.spec_id: s for s in table.partition_specs} if table is not None else {}
        schema = table.schema if table is not None else {"type": "struct", "fields": []}
        merged = bool(table is not None and table.primary_key) or any(c.kind == DELETES for c in snapshot.chunks)
        pruner = ChunkPruner(filters, specs, schema)
        kept: list[Chunk] = []
        skipped = skipped_bytes = 0
        for c in snapshot.chunks:
            by_stats = not merged and c.kind != DELETES
            if pruner.may_match(c, by_stats=by_stats):
                kept.append(c)
            else:
                skipped += 1
                skipped_bytes += c.bytes
        return Plan(snapshot.cut, kept, skipped, skipped_bytes)

    def partitions(self, scope: str, name: str) -> Partitions:
        """The partitions of the table's current spec that its live data chunks are in (position deletes
        aside), each with its chunk, event and byte counts, sorted by values (nulls first). An
        unpartitioned table has one partition, of no values, once it holds a chunk."""
        table = self.get_table(scope, name)
        spec = with_current_names(table.partition_spec, table.schema)
        data = [c for c in self.store.snapshot(scope, name, None, None, None).chunks if c.kind != DELETES]
        return Partitions(spec, [
            PartitionSummary(values, len(group), sum(c.event_count for c in group), sum(c.bytes for c in group))
            for values, group in by_partition(data, spec)
        ])

    # -- retention and readers --------------------------------------------------------------------

    def expire(
        self, scope: str, stream: str, older_than_ms: int | None = None, retain_last: int | None = None
    ) -> Stream:
        """Move the stream's ``retained_from`` forward as far as the rules allow: cuts whose commit is
        older than ``older_than_ms`` may go (no limit when None), the newest ``retain_last`` cuts stay
        (at least the latest), and so does every cut from the oldest registered reader's offset on.
        At least one of the two limits must be given."""
        if older_than_ms is None and retain_last is None:
            raise BadRequest("say which cuts to expire: olderThan (epoch ms), retainLast (a count), or both")
        if retain_last is not None and retain_last < 1:
            raise BadRequest(f"retainLast must be at least 1 (the latest cut always stays), not {retain_last}")

        def decide(target: Stream, newest_older: int | None, oldest_reader: int | None) -> int:
            limit = target.last_commit
            if retain_last is not None:
                limit = min(limit, target.last_commit - retain_last + 1)
            if newest_older is not None:
                # Cut k goes when commit k is older; cut 0 (before any commit) with cut 1.
                limit = min(limit, newest_older + 1 if newest_older else 0)
            if oldest_reader is not None:
                limit = min(limit, oldest_reader)
            return check_expiry(target, max(target.retained_from, limit))

        return self.store.expire(scope, stream, older_than_ms, decide)

    def set_reader(self, scope: str, stream: str, name: str, offset: int) -> Reader:
        """Register reader ``name`` of the stream at ``offset`` (the cut it has read up to), or move
        it there; the offset must be a retained cut. Expiry then keeps that cut and what follows."""

        def check(target: Stream) -> None:
            if not target.retained_from <= offset <= target.last_commit:
                raise BadRequest(
                    f"reader offset {offset} is not a retained cut of {scope}.{stream} "
                    f"({target.retained_from} to {target.last_commit})"
                )

        return self.store.set_reader(scope, stream, name, offset, check)

    def readers(self, scope: str, stream: str) -> list[Reader]:
        """The stream's registered readers, by name."""
        return self.store.readers(scope, stream)

    def get_reader(self, scope: str, stream: str, name: str) -> Reader:
        """One registered reader (ReaderNotFound if none)."""
        return self.store.get_reader(scope, stream, name)

    def delete_reader(self, scope: str, stream: str, name: str) -> None:
        """Forget a reader: expiry no longer keeps cuts for it."""
        self.store.delete_reader(scope, stream, name)

    def garbage(self, scope: str, stream: str, grace_seconds: float) -> tuple[str, list[storage.StoredFile]]:
        """The stream's location and the files below it that no readable cut needs (no retained cut,
        no registered reader's) and that are older than the grace period (a writer may be between
        writing and committing them).

        Only files the location really holds: none reached through a symlink anywhere below the
        root the location is in (a symlink made after the stream was created could otherwise lead
        into another stream's directory, or out). A stream whose location the server would not
        give today (outside the warehouse and every allowed root, or leading out of it through a
        symlink) is refused with LocationNotAllowed: its directory is not the server's to clean. Files
        under ``metadata/`` are the table's Iceberg metadata (catalog_api/iceberg/), which no chunk lists:
        never garbage.
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
            and not f.path.startswith(METADATA_FOLDER + "/")
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
        """Paths of the stream's chunks that a retained cut or a registered reader still needs."""
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


# -- primary-key tables ---------------------------------------------------------------------------


def _top_level(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in schema.get("fields", []) if isinstance(f, dict) and "name" in f}


def _keyed_schema(schema: dict[str, Any], properties: dict[str, str]) -> dict[str, Any]:
    """The schema of a new table with its key columns made non-null, and ``properties`` with the
    key spelled as the columns are (BadRequest naming a key that is no top-level column)."""
    if PRIMARY_KEY_PROPERTY not in properties:
        return schema
    key = primary_key(properties)
    if not key:
        raise BadRequest("'primary-key' names no column; give one or more comma-separated column names")
    if len({k.lower() for k in key}) != len(key):
        raise BadRequest(f"'primary-key' names a column twice: {properties[PRIMARY_KEY_PROPERTY]!r}")
    result = copy.deepcopy(schema)
    columns = _top_level(result)
    folded = {name.lower(): name for name in columns}
    spelled = []
    for name in key:
        found = name if name in columns else folded.get(name.lower())
        if found is None:
            raise BadRequest(
                f"primary key column {name!r} is not a top-level column of the table "
                f"(columns: {', '.join(columns) or 'none'})"
            )
        if isinstance(columns[found].get("type"), dict):
            raise BadRequest(f"primary key column {found!r} has a nested type; key columns are atomic")
        columns[found]["nullable"] = False
        spelled.append(found)
    properties[PRIMARY_KEY_PROPERTY] = ",".join(spelled)
    return result


def _check_change_properties(schema: dict[str, Any], properties: dict[str, str]) -> None:
    """'sequence.field' names a column and 'merge-engine' a known engine, both of a primary-key table."""
    keyed = bool(primary_key(properties))
    for name in (SEQUENCE_FIELD_PROPERTY, MERGE_ENGINE_PROPERTY):
        if name in properties and not keyed:
            raise BadRequest(f"{name!r} applies to primary-key tables only; this table has no 'primary-key'")
    field_name = properties.get(SEQUENCE_FIELD_PROPERTY)
    if field_name is not None:
        columns = _top_level(schema)
        if field_name not in columns:
            raise BadRequest(
                f"'sequence.field' {field_name!r} is not a top-level column of the table "
                f"(columns: {', '.join(columns) or 'none'})"
            )
        if isinstance(columns[field_name].get("type"), dict):
            raise BadRequest(f"'sequence.field' {field_name!r} has a nested type; it must be comparable")
    engine = properties.get(MERGE_ENGINE_PROPERTY)
    if engine is not None and engine not in MERGE_ENGINES:
        raise BadRequest(f"unknown 'merge-engine' {engine!r}; expected one of {', '.join(MERGE_ENGINES)}")
    if has_field_settings(properties) and engine != "aggregation":
        raise BadRequest("'fields.<column>.aggregate-function', 'ignore-retract', 'list-agg-delimiter' and "
                         "'aggregation.row-count-field' apply to tables with 'merge-engine' = 'aggregation'")
    if engine == "aggregation":
        types = {name: column.get("type") for name, column in _top_level(schema).items()}
        try:
            check_columns(field_aggregates(properties), types, primary_key(properties))
            check_row_count_field(properties, types, primary_key(properties))
        except AggregateError as e:
            raise BadRequest(str(e)) from None


def _check_key_columns_intact(key: tuple[str, ...], before: dict[str, Any], after: dict[str, Any]) -> None:
    """Every key column is still there, of the same type, non-null (whatever the changes were)."""
    old, new = _top_level(before), _top_level(after)
    for name in key:
        column = new.get(name)
        if column is None:
            raise BadRequest(f"column {name!r} is part of the table's primary key and must stay")
        if name in old and column.get("type") != old[name].get("type"):
            raise BadRequest(f"cannot change the type of column {name!r}: it is part of the table's primary key")
        if column.get("nullable", True):
            raise BadRequest(f"cannot make nullable column {name!r}: it is part of the table's primary key")

