"""The stream reader: the events of a snapshot (or of the commits after a position), under one schema.

A read asks the catalog which chunks form the snapshot at a stream cut and reads the chunk
files straight from storage, in commit order and, within a commit, in the order the writer
listed them (so one segment's events come back in the order they were written). Event chunks
are decoded by ``registry.serde.Deserializer``; columnar (Parquet) chunks are read with pyarrow
and their columns resolved to the reader schema by name, as Avro schema resolution would:
missing fields get their default, promotions (int to long, float to double...) apply.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from itertools import chain
from typing import Any

import pyarrow as pa

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.storage import resolve
from catalog_api.streams.chunks import ChunkFormatError, frame_offsets, read_columnar_chunk
from registry.client import RegistryClient
from registry.errors import NotFound
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
        self._reader_fields = self._avro_fields(self.reader_schema)
        self._arrow_schema = arrow_schema(self.reader_schema) if self.reader_schema is not None else None
        self._fs, self._root = resolve(self.location)

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
        """
        _cut, chunks = self.snapshot(cut, as_of_time)
        return chain.from_iterable(map(self.read_chunk, chunks))

    def read_batches(self, cut: int | None = None, as_of_time: int | None = None,
                     batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """The records of ``read`` as Arrow record batches (columnar chunks stay columnar)."""
        _cut, chunks = self.snapshot(cut, as_of_time)
        return chain.from_iterable(self.read_chunk_batches(c, batch_rows) for c in chunks)

    # -- streaming ---------------------------------------------------------------------------------

    def poll(self, position: int, max_commits: int | None = None) -> tuple[int, list[Any]]:
        """(new position, records) of the commits after ``position`` (a commit number; 0 is the start).

        At most ``max_commits`` commits are read; the new position is the last commit read.
        Streaming reads see every commit as appended data, overwrites included; truncated
        commits are skipped.
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
            records.extend(self.read_chunk(chunk))
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
        table, encoding_id = read_columnar_chunk(self.location, chunk.path)
        fields = self._reader_fields
        if fields is None:
            return table
        writer = self.registry.encoding_info(self.group, EncodingId(encoding_id)).schema
        if self.reader_schema is not None and writer.data == self.reader_schema.data:
            return table.select([f["name"] for f in fields])
        return self._resolve_columns(table, fields, chunk.path)

    def _resolve_columns(self, table: pa.Table, fields: list[dict[str, Any]], path: str) -> pa.Table:
        """``table``'s columns as the reader's fields: by name (or alias), promoted, defaults for the missing."""
        target = self._arrow_schema
        columns, names = [], []
        for index, field in enumerate(fields):
            name = field["name"]
            kind = target.field(index).type if target is not None else None
            present = next((n for n in (name, *field.get("aliases", ())) if n in table.column_names), None)
            if present is not None:
                column = table.column(present)
                if kind is not None and column.type != kind:
                    column = column.cast(kind)
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


__all__ = ["DEFAULT_BATCH_ROWS", "StreamReader", "arrow_schema", "avro_to_arrow", "scoped_registry"]
