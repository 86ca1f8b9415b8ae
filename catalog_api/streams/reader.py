"""The stream reader: the events of a snapshot (or of the commits after a position), under one schema.

A read asks the catalog which chunks form the snapshot at a stream cut and reads the chunk
files straight from storage, in commit order and, within a commit, in the order the writer
listed them (so one segment's events come back in the order they were written). Event chunks
are decoded by ``registry.serde.Deserializer``; columnar (Parquet) chunks are read with pyarrow
and their columns resolved to the reader schema by field id (``catalog_api.schema.resolution``:
the file's Parquet field ids, or its schema version's), so a renamed column reads its old data
and a column dropped and added again does not; where ids are unknown, by name and former names,
as Avro schema resolution would. Missing fields get their default (a column's ``EXISTS_DEFAULT``,
else its Avro default), promotions (int to long, float to double...) apply.

A stream that is a table that changes (docs/changelog-tables.md) reads as the table: an append
table's position deletes are applied, and a primary-key table reads as one row per live key
(``catalog_api.streams.merge``). ``changes(after, to)`` gives the change feed between two cuts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import pyarrow as pa

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.schema import to_struct
from catalog_api.schema.defaults import exists_defaults
from catalog_api.schema.fieldids import has_field_ids
from catalog_api.schema.resolution import exact_avro_reader, file_fields, plan, select_columns
from catalog_api.schema.spark import parse_struct
from catalog_api.storage import resolve
from catalog_api.streams.changelog import CommitChanges, change_feed
from catalog_api.streams.chunks import (
    ChunkFormatError,
    frame_offsets,
    read_columnar_chunk,
    recorded_encoding,
    split_event_chunk,
)
from catalog_api.streams.merge import (
    TableLayout,
    apply_position_deletes,
    needs_merge,
    read_state,
    split_ops,
    with_state,
    without_state,
)
from catalog_api.streams.row_kinds import DELETES_KIND, OP_COLUMN, UPSERT, read_position_deletes
from registry.client import RegistryClient
from registry.errors import BadRequest, InvalidSchema, NotFound
from registry.ids import EncodingId
from registry.model import SchemaInfo
from registry.serde import Deserializer, SerdeError

#: Rows per RecordBatch that ``read_batches`` aims at.
DEFAULT_BATCH_ROWS = 65_536


def scoped_registry(registry: RegistryClient, scope: str) -> RegistryClient:
    """``registry`` itself if it works in the scope's namespace, else a client that does (same session)."""
    if registry.namespace == scope:
        return registry
    return RegistryClient(registry.url, scope, timeout=registry.timeout, session=registry.http)


# -- Avro schemas as Arrow types -------------------------------------------------------------------

class _NoArrowType(Exception):
    """An Avro type without one Arrow equivalent (a union of several non-null types)."""


_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}
_LOGICAL: dict[str, pa.DataType] = {
    "date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"), "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"), "local-timestamp-micros": pa.timestamp("us"), "uuid": pa.string(),
}


def avro_to_arrow(schema: Any, named: dict[str, pa.DataType] | None = None) -> pa.DataType:
    """The Arrow type of (the JSON form of) an Avro schema, as fastavro's decoded values fill it."""
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        if schema in named:
            return named[schema]
        raise _NoArrowType(f"unknown named type {schema}")
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise _NoArrowType("a union of several types")
        return avro_to_arrow(branches[0], named)
    kind = schema["type"]
    logical = schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        result: pa.DataType = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    elif logical in _LOGICAL and not isinstance(kind, dict | list):
        result = _LOGICAL[logical]
    elif kind == "record":
        fields = [pa.field(f["name"], avro_to_arrow(f["type"], named), nullable=_nullable(f["type"]))
                  for f in schema["fields"]]
        result = pa.struct(fields)
    elif kind == "enum":
        result = pa.string()
    elif kind == "fixed":
        result = pa.binary(int(schema["size"]))
    elif kind == "array":
        result = pa.list_(avro_to_arrow(schema["items"], named))
    elif kind == "map":
        result = pa.map_(pa.string(), avro_to_arrow(schema["values"], named))
    else:
        result = avro_to_arrow(kind, named)
    if kind in ("record", "enum", "fixed") and "name" in schema:
        name = schema["name"]
        namespace = schema.get("namespace")
        named[name] = result
        if namespace and "." not in name:
            named[f"{namespace}.{name}"] = result
    return result


def _nullable(schema: Any) -> bool:
    return schema == "null" or (isinstance(schema, list) and "null" in schema)


def arrow_schema(reader: SchemaInfo) -> pa.Schema | None:
    """The Arrow schema of records of an Avro record schema; None when some field has no Arrow type."""
    if reader.format.name != "Avro":
        return None
    body = json.loads(reader.data)
    if not isinstance(body, dict) or body.get("type") != "record":
        return None
    try:
        struct = avro_to_arrow(body)
    except _NoArrowType:
        return None
    return pa.schema(list(struct))


def _nullable_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


# -- events by field id ----------------------------------------------------------------------------

class IdResolvedEvents:
    """Decodes events under a reader schema as field ids say, not only as Avro resolution does.

    Avro resolution matches a reader field by name before aliases, so after a column is dropped and added
    again under its old name (a new id), events written before would read the old column's values. For
    the few writer versions where names and ids disagree (``catalog_api.schema.resolution.exact_avro_reader``),
    events are decoded under a reader schema made for that version, and get the reader's names back; the
    others go through ``deserializer`` as they always did.
    """

    def __init__(self, registry: RegistryClient, group: str, reader_schema: SchemaInfo | None,
                 deserializer: Deserializer) -> None:
        self.registry = registry
        self.group = group
        self.reader_schema = reader_schema
        self.deserializer = deserializer
        self._reader_struct = _struct_of(reader_schema)
        body = json.loads(reader_schema.data) if reader_schema is not None and reader_schema.format.name == "Avro" \
            else None
        self._reader_avro = body if isinstance(body, dict) and body.get("type") == "record" else None
        self._exact = self._reader_avro is not None and self._reader_struct is not None and \
            has_field_ids(self._reader_struct)
        self._fixes: dict[int, tuple[Deserializer, dict[str, str]] | None] = {}
        self._lock = threading.Lock()

    def fix(self, encoding_id: int) -> tuple[Deserializer, dict[str, str]] | None:
        """The deserializer and field names that events of ``encoding_id`` need, or None: the usual one does."""
        if not self._exact or self.reader_schema is None or self._reader_avro is None or self._reader_struct is None:
            return None
        with self._lock:
            if encoding_id in self._fixes:
                return self._fixes[encoding_id]
        found: tuple[Deserializer, dict[str, str]] | None = None
        writer = self.registry.encoding_info(self.group, EncodingId(encoding_id)).schema
        writer_struct = _struct_of(writer) if writer.format.name == "Avro" else None
        if writer_struct is not None:
            exact = exact_avro_reader(self._reader_avro, self._reader_struct, writer_struct, json.loads(writer.data))
            if exact is not None:
                schema = SchemaInfo(self.reader_schema.type, self.reader_schema.format, json.dumps(exact[0]).encode())
                found = (Deserializer(self.registry, self.group, schema, as_dict=True), exact[1])
        with self._lock:
            self._fixes[encoding_id] = found
        return found

    def needs_fixes(self, encoding_ids: Iterable[int]) -> bool:
        """Whether events of some of these encoding ids must be decoded one by one (:meth:`decode`)."""
        return self._exact and any(self.fix(e) is not None for e in encoding_ids)

    def decode(self, events: Iterable[bytes | memoryview]) -> Iterator[Any]:
        """Each event (wire format) as a record of the reader schema, its columns matched by id."""
        for event in events:
            fix = self.fix(int.from_bytes(event[1:5], "big"))
            if fix is None:
                yield self.deserializer.deserialize(bytes(event))
            else:
                record = fix[0].deserialize(bytes(event))
                names = fix[1]
                yield {names.get(k, k): v for k, v in record.items()}


# -- the reader ------------------------------------------------------------------------------------

class StreamReader:
    """Reads a stream's events as records (or Arrow batches), at a stream cut or after a position.

    Records are presented under ``reader_schema`` or, by default, under the latest schema of the
    stream's group (the group named like the stream in the scope's namespace, or ``group``)
    when the group has a single type; otherwise each record under the version it was written
    with. The reader schema is fixed when the reader is made: make a new reader to see a newer one.
    """

    def __init__(self, catalog: CatalogClient, registry: RegistryClient, scope: str, stream: str, *,
                 reader_schema: SchemaInfo | None = None, group: str | None = None) -> None:
        self.catalog = catalog
        self.registry = scoped_registry(registry, scope)
        self.scope = scope
        self.stream = stream
        self.group = group or stream
        self.location: str = catalog.get_stream(scope, stream)["location"]
        self.reader_schema = reader_schema if reader_schema is not None else self._latest_schema()
        # Protobuf records come back as dicts too, so that every record of every format is a dict.
        self.deserializer = Deserializer(self.registry, self.group, self.reader_schema, as_dict=True)
        self.events = IdResolvedEvents(self.registry, self.group, self.reader_schema, self.deserializer)
        self._reader_fields = self._avro_fields(self.reader_schema)
        self._arrow_schema = arrow_schema(self.reader_schema) if self.reader_schema is not None else None
        self._reader_struct = _struct_of(self.reader_schema)
        self._exists_defaults = _defaults_of(self._reader_struct)
        self._writer_structs: dict[int, dict[str, Any] | None] = {}
        self._fs, self._root = resolve(self.location)
        self._layout: TableLayout | None = None

    @property
    def layout(self) -> TableLayout:
        """How the stream's changes merge: its table's key, sequence field and merge engine (a stream
        that is no table reads as an append table). Asked once, when first needed."""
        if self._layout is None:
            try:
                properties = self.catalog.get_table(self.scope, self.stream).get("properties") or {}
            except NotFound:
                properties = {}
            self._layout = TableLayout.from_properties(properties)
        return self._layout

    def _latest_schema(self) -> SchemaInfo | None:
        try:
            latest = self.registry.latest_schemas(self.group)
        except NotFound:
            return None
        return latest[0].schema if len(latest) == 1 else None

    @staticmethod
    def _avro_fields(schema: SchemaInfo | None) -> list[dict[str, Any]] | None:
        if schema is None or schema.format.name != "Avro":
            return None
        body = json.loads(schema.data)
        return list(body["fields"]) if isinstance(body, dict) and body.get("type") == "record" else None

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot(self, cut: int | None = None, as_of_time: int | None = None) -> tuple[int, list[Chunk]]:
        """(stream cut, chunks) of a batch read: latest, at ``cut``, or as of ``as_of_time`` (epoch ms)."""
        return self.catalog.snapshot(self.scope, self.stream, cut=cut, as_of_time=as_of_time)

    def read(self, cut: int | None = None, as_of_time: int | None = None) -> Iterator[Any]:
        """Every record visible at the cut (default: the latest commit), in commit and write order.

        The snapshot is taken now (a bad cut fails here); chunk files are read as the records are.
        A primary-key table gives one record per live key (merged when the snapshot is read); an
        append table's deleted rows are left out.
        """
        _cut, chunks = self.snapshot(cut, as_of_time)
        if self.layout.is_keyed and needs_merge(chunks, self.layout):
            return iter(self._merged(chunks).to_pylist(maps_as_pydicts="strict"))
        deleted = self._deleted_positions(chunks)
        return chain.from_iterable(self._live_records(c, deleted.get(c.path)) for c in chunks
                                   if c.kind != DELETES_KIND)

    def read_batches(self, cut: int | None = None, as_of_time: int | None = None,
                     batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """The records of ``read`` as Arrow record batches (columnar chunks stay columnar)."""
        _cut, chunks = self.snapshot(cut, as_of_time)
        if self.layout.is_keyed and needs_merge(chunks, self.layout):
            return iter(self._merged(chunks).to_batches(max_chunksize=batch_rows))
        deleted = self._deleted_positions(chunks)
        return chain.from_iterable(self._live_batches(c, deleted.get(c.path), batch_rows) for c in chunks
                                   if c.kind != DELETES_KIND)

    # -- tables that change ------------------------------------------------------------------------

    def _deleted_positions(self, chunks: list[Chunk]) -> dict[str, pa.Array]:
        return read_position_deletes(self.location, [c.path for c in chunks if c.kind == DELETES_KIND])

    def _live_records(self, chunk: Chunk, deleted: pa.Array | None) -> Iterator[Any]:
        if self.layout.is_keyed and chunk.kind == "columnar":  # a change chunk: its upserts
            return iter(self._upserted(chunk).to_pylist(maps_as_pydicts="strict"))
        if deleted is None:
            return self.read_chunk(chunk)
        if chunk.kind == "columnar":
            return iter(apply_position_deletes(self._columnar(chunk), deleted).to_pylist(maps_as_pydicts="strict"))
        gone = set(deleted.to_pylist())
        return (record for position, record in enumerate(self.read_chunk(chunk)) if position not in gone)

    def _live_batches(self, chunk: Chunk, deleted: pa.Array | None, batch_rows: int) -> Iterator[pa.RecordBatch]:
        if self.layout.is_keyed and chunk.kind == "columnar":
            yield from self._upserted(chunk).to_batches(max_chunksize=batch_rows)
        elif deleted is None:
            yield from self.read_chunk_batches(chunk, batch_rows)
        else:
            live = apply_position_deletes(split_ops(self.chunk_table(chunk))[0], deleted)
            yield from self._as_reader(live).to_batches(max_chunksize=batch_rows)

    def _upserted(self, chunk: Chunk) -> pa.Table:
        """The rows of a columnar chunk of a primary-key table that upsert (without the row kinds)."""
        table, ops = split_ops(self.chunk_table(chunk))
        table = without_state(table, self.layout)
        return self._as_reader(table if not (ops != UPSERT).any() else table.filter(pa.array(ops == UPSERT)))

    def chunk_table(self, chunk: Chunk) -> pa.Table:
        """Every row of one chunk as an Arrow table of the reader schema's columns, then an aggregation table's
        hidden state columns (read by name; null where the chunk has none), plus the chunk's row kinds
        (``OP_COLUMN``) when it has them: what ``catalog_api.streams.merge`` works on."""
        if chunk.kind == "columnar":
            table, encoding_id = read_columnar_chunk(self.location, chunk.path, recorded=recorded_encoding(chunk))
            table, ops = split_ops(table) if OP_COLUMN in table.column_names else (table, None)
            resolved = self._resolve(table, encoding_id, chunk.path)
            if self._arrow_schema is not None:
                # nullable: a delete row leaves even a NOT NULL column empty (only its key means anything)
                resolved = resolved.cast(_nullable_schema(self._arrow_schema))
            resolved = with_state(resolved, self.layout, table)
            return resolved if ops is None else resolved.append_column(OP_COLUMN, pa.array(ops, pa.int8()))
        if chunk.kind == "events":
            if self._arrow_schema is None:
                raise SerdeError(f"the records of {self.scope}/{self.stream} have no Arrow form (the reader schema "
                                 "is no Avro record of Arrow types): they cannot be merged")
            return with_state(pa.Table.from_pylist(list(self.read_chunk(chunk)),
                                                   schema=_nullable_schema(self._arrow_schema)), self.layout)
        raise ChunkFormatError(f"chunk {chunk.path} is of kind {chunk.kind!r}, which holds no rows")

    def _merged(self, chunks: list[Chunk]) -> pa.Table:
        return self._as_reader(without_state(read_state(self.location, chunks, self.layout, self.chunk_table),
                                             self.layout))

    def _as_reader(self, table: pa.Table) -> pa.Table:
        """Merged rows under the reader schema's Arrow form itself (its NOT NULL columns included)."""
        if self._arrow_schema is None or table.schema.equals(self._arrow_schema) or not table.num_columns:
            return table
        try:
            return table.cast(self._arrow_schema)
        except pa.ArrowInvalid:  # a partial update left a NOT NULL column empty: show it as it is
            return table

    def changes(self, after: int, to: int | None = None) -> Iterator[dict[str, Any]]:
        """The change feed of the commits in (``after``, ``to``] (``to``: the latest): records of the table's
        columns plus ``_change_type`` (insert, update_preimage, update_postimage, delete), ``_commit_version``
        and ``_commit_timestamp`` (a UTC datetime), commit after commit; compactions are skipped."""
        for batch in self.change_batches(after, to):
            yield from batch.to_pylist(maps_as_pydicts="strict")

    def change_batches(self, after: int, to: int | None = None,
                       batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """The records of ``changes`` as Arrow record batches. The commits are listed now (a bad range
        fails here); their chunks are read as the batches are."""
        if after < 0:
            raise ValueError(f"a change feed starts after a commit number, not {after}")
        commits = [CommitChanges.of(c) for c in self.catalog.changes(self.scope, self.stream, after, to)]
        if self._arrow_schema is None:
            raise SerdeError(f"the records of {self.scope}/{self.stream} have no Arrow form (the reader schema is "
                             "no Avro record of Arrow types): no change feed")
        feed = change_feed(self.location, self.layout, self.chunk_table,
                           lambda cut: self.catalog.snapshot(self.scope, self.stream, cut=cut)[1] if cut else [],
                           after, commits, self._arrow_schema)
        return chain.from_iterable(t.to_batches(max_chunksize=batch_rows) for t in feed)

    # -- streaming ---------------------------------------------------------------------------------

    def poll(self, position: int, max_commits: int | None = None) -> tuple[int, list[Any]]:
        """(new position, records) of the commits after ``position`` (a commit number; 0 is the start).

        At most ``max_commits`` commits are read; the new position is the last commit read.
        Streaming reads see every commit as appended data, overwrites included; truncated
        commits, position deletes and compactions are skipped, and of a primary-key table's
        changes only the upserted rows are records.
        """
        if position < 0:
            raise ValueError(f"a stream position is a commit number, not {position}")
        if max_commits is not None and max_commits < 1:
            raise ValueError("max_commits must be positive")
        cut, chunks = self.catalog.snapshot(self.scope, self.stream, after=position)
        if position > cut:
            raise ValueError(f"position {position} lies beyond the stream's last commit {cut}")
        if max_commits is not None and cut - position > max_commits:
            cut = position + max_commits
            chunks = [c for c in chunks if c.commit <= cut]
        records: list[Any] = []
        for chunk in chunks:
            if chunk.kind == DELETES_KIND or (chunk.sequence and chunk.sequence < chunk.commit):
                continue  # position deletes, and compactions, which change no row: a stream shows additions
            records.extend(self._live_records(chunk, None) if self.layout.is_keyed else self.read_chunk(chunk))
        return cut, records

    def tail(self, position: int = 0, poll_interval: float = 1.0, *, stop: threading.Event | None = None,
             max_commits: int | None = None) -> Iterator[tuple[int, list[Any]]]:
        """(position, records) each time new commits arrive, forever or until ``stop`` is set."""
        while stop is None or not stop.is_set():
            new, records = self.poll(position, max_commits)
            if new != position:
                position = new
                yield position, records
            elif stop is not None:
                stop.wait(poll_interval)
            else:
                time.sleep(poll_interval)

    # -- chunks ------------------------------------------------------------------------------------

    def _read_bytes(self, chunk: Chunk) -> bytes:
        with self._fs.open_input_file(f"{self._root}/{chunk.path}") as f:
            return bytes(f.read())

    def read_chunk(self, chunk: Chunk) -> Iterator[Any]:
        """The records of one chunk, under the reader schema."""
        if chunk.kind == "events":
            data = self._read_bytes(chunk)
            offsets = frame_offsets(data)
            if len(offsets) != chunk.event_count:
                raise ChunkFormatError(f"chunk {chunk.path} holds {len(offsets)} events; its commit says "
                                       f"{chunk.event_count}")
            if self.events.needs_fixes(chunk.encoding_ids):
                return self.events.decode(split_event_chunk(data))
            # Decoded where they lie in the chunk's bytes: no bytes object per event.
            return self.deserializer.deserialize_framed(data, offsets)
        if chunk.kind == "columnar":
            return iter(self._columnar(chunk).to_pylist(maps_as_pydicts="strict"))
        raise ChunkFormatError(f"chunk {chunk.path} is of unknown kind {chunk.kind!r}")

    def read_chunk_batches(self, chunk: Chunk, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """The records of one chunk as record batches of the reader schema's Arrow form."""
        if chunk.kind == "columnar":
            table = self._columnar(chunk)
            if self._arrow_schema is not None:
                table = table.cast(self._arrow_schema)
            yield from table.to_batches(max_chunksize=batch_rows)
            return
        records = self.read_chunk(chunk)
        while True:
            rows = [row for _, row in zip(range(batch_rows), records, strict=False)]
            if not rows:
                return
            yield pa.RecordBatch.from_pylist(rows, schema=self._arrow_schema)

    def _columnar(self, chunk: Chunk) -> pa.Table:
        table, encoding_id = read_columnar_chunk(self.location, chunk.path, recorded=recorded_encoding(chunk))
        return self._resolve(table, encoding_id, chunk.path)

    def _resolve(self, table: pa.Table, encoding_id: int, path: str) -> pa.Table:
        fields = self._reader_fields
        if fields is None:
            return table
        writer = self.registry.encoding_info(self.group, EncodingId(encoding_id)).schema
        if self.reader_schema is not None and writer.data == self.reader_schema.data:
            return table.select([f["name"] for f in fields])
        if self._reader_struct is not None:
            if encoding_id not in self._writer_structs:
                self._writer_structs[encoding_id] = _struct_of(writer)
            columns = plan(self._reader_struct, file_fields(table.schema, self._writer_structs[encoding_id]))
            table = select_columns(table, columns)
        return self._resolve_columns(table, fields, path)

    def _resolve_columns(self, table: pa.Table, fields: list[dict[str, Any]], path: str) -> pa.Table:
        """``table``'s columns as the reader's fields: those ``_resolve`` matched (by id, or by name or
        alias), promoted; for the missing, their EXISTS_DEFAULT, Avro default or null."""
        target = self._arrow_schema
        matched = self._reader_struct is not None
        columns, names = [], []
        for index, field in enumerate(fields):
            name = field["name"]
            kind = target.field(index).type if target is not None else None
            candidates = (name,) if matched else (name, *field.get("aliases", ()))
            present = next((n for n in candidates if n in table.column_names), None)
            if present is not None:
                column = table.column(present)
                if kind is not None and column.type != kind:
                    column = column.cast(kind)
            elif name in self._exists_defaults:
                column = pa.chunked_array([pa.array([self._exists_defaults[name]] * table.num_rows, type=kind)])
            elif "default" in field:
                default = field["default"]
                if isinstance(default, str) and kind is not None and pa.types.is_binary(kind):
                    default = default.encode("latin-1")  # Avro writes bytes defaults as code points
                column = pa.chunked_array([pa.array([default] * table.num_rows, type=kind)])
            elif _nullable(field["type"]):
                column = pa.chunked_array([pa.nulls(table.num_rows, type=kind or pa.null())])
            else:
                raise SerdeError(f"columnar chunk {path} has no column {name!r}, and the reader schema gives "
                                 "it no default")
            columns.append(column)
            names.append(name)
        return pa.table(columns, names=names)


def _struct_of(schema: SchemaInfo | None) -> dict[str, Any] | None:
    """The Spark schema (StructType JSON) of a registry schema, with its field ids; None when it has none
    (a format or a hand-written schema no table could have: columns then match by name)."""
    if schema is None:
        return None
    try:
        return to_struct(schema.format.name, schema.data, schema.type)
    except (BadRequest, InvalidSchema):
        return None


def _defaults_of(struct: dict[str, Any] | None) -> dict[str, Any]:
    """The EXISTS_DEFAULT value of each column of ``struct`` that has one (timestamps as epoch micros)."""
    if struct is None:
        return {}
    try:
        return exists_defaults(parse_struct(struct))
    except BadRequest:
        return {}


__all__ = ["DEFAULT_BATCH_ROWS", "IdResolvedEvents", "StreamReader", "arrow_schema", "avro_to_arrow", "scoped_registry"]
