"""Chunk files: immutable, self-describing, readable with plain Python.

Event chunk (written by producers)::

    b"SCEV" 0x01 0x00 0x00 0x00          magic, format version, reserved
    { uint32 big-endian length, event }*  each event in the wire format of registry/serde/wire.py
                                          (0x01, encoding id int32 BE, payload)

Columnar chunk (written by Spark): a Parquet file, all rows in one schema version, whose
key-value metadata holds ``streamcat.encoding_id`` and ``streamcat.chunk_version`` (a Parquet data file an
Iceberg client appended has neither: its commit records the encoding id), and whose
columns carry the field ids of that version (Parquet field ids) when the writer knew them
(readers then match columns by id, ``catalog_api.schema.resolution``). In a partitioned table every
columnar chunk a writer commits holds the rows of one partition and records it (``Chunk.partition``,
docs/partitioning.md): :func:`partition_pieces` cuts rows that way.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.aggregates import HIDDEN_FIELD_IDS, is_hidden
from catalog_api.model import Chunk
from catalog_api.partitioning.spec import PartitionSpec
from catalog_api.partitioning.transforms import split_by_partition
from catalog_api.schema.fieldids import field_id, has_field_ids
from catalog_api.schema.resolution import PARQUET_FIELD_ID

EVENT_MAGIC = b"SCEV\x01\x00\x00\x00"
ENCODING_ID_KEY = b"streamcat.encoding_id"
CHUNK_VERSION_KEY = b"streamcat.chunk_version"
_LENGTH = struct.Struct(">I")


class ChunkFormatError(ValueError):
    """A chunk file is not in the format its kind says."""


@dataclass
class ChunkStats:
    """What a chunk writer learned while writing: counts and per-column statistics."""

    event_count: int = 0
    bytes: int = 0
    encoding_ids: set[int] = field(default_factory=set)
    stats: dict[str, Any] = field(default_factory=dict)

    def columnar(self, path: str, segment: int = 0, sequence: int = 0,
                 partition: dict[str, Any] | None = None) -> Chunk:
        """The Chunk a commit lists for the columnar chunk written at ``path`` with these statistics;
        ``partition`` (``{"specId", "values"}``) is the one every row of it is in (None: unpartitioned)."""
        return Chunk(path=path, kind="columnar", segment=segment, event_count=self.event_count, bytes=self.bytes,
                     encoding_ids=tuple(sorted(self.encoding_ids)), stats=self.stats, sequence=sequence,
                     partition=partition)


def partition_pieces(table: pa.Table, spec: PartitionSpec) -> list[tuple[dict[str, Any], pa.Table]]:
    """``table``'s rows cut into one piece per partition of ``spec``: (the ``Chunk.partition`` the piece's
    chunk records, the rows, in their order in ``table``), pieces in the order of their first row. Under
    spec 0 every row is one piece, recorded as spec 0's (``spec_zero_partition``); no rows, no piece.

    ``spec``'s sources must be named as ``table``'s columns are (see
    :func:`~catalog_api.partitioning.spec.with_current_names`); other columns ride along untouched.
    Raises :class:`~catalog_api.partitioning.spec.PartitioningError` when a source column is missing or
    of a type its transform does not take.
    """
    return [({"specId": spec.spec_id, "values": values}, rows) for values, rows in split_by_partition(table, spec)]


def write_event_chunk(location: str, path: str, events: Iterable[bytes]) -> ChunkStats:
    """Write events (wire-format bytes) to ``location/path``; returns counts and encoding ids."""
    fs, root = storage.resolve(location)
    full = f"{root}/{path}"
    fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
    result = ChunkStats()
    buffer = bytearray(EVENT_MAGIC)
    for event in events:
        if len(event) < 5 or event[0] != 1:
            raise ChunkFormatError("an event must start with the wire header (0x01 and an encoding id)")
        result.encoding_ids.add(int.from_bytes(event[1:5], "big"))
        buffer += _LENGTH.pack(len(event))
        buffer += event
        result.event_count += 1
    with fs.open_output_stream(full) as out:
        out.write(bytes(buffer))
    result.bytes = len(buffer)
    return result


def frame_events(events: Iterable[bytes]) -> bytearray:
    """The length-prefixed body of an event chunk holding ``events`` (without the magic)."""
    pack = _LENGTH.pack
    out = bytearray()
    for event in events:
        out += pack(len(event))
        out += event
    return out


def write_framed_event_chunk(location: str, path: str, framed: bytes | bytearray | memoryview) -> int:
    """Write an event chunk whose events are already length-prefixed (a writer's buffer); returns its size.

    The caller vouches for the framing; :func:`write_event_chunk` checks every event instead.
    """
    fs, root = storage.resolve(location)
    full = f"{root}/{path}"
    fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(full) as out:
        out.write(EVENT_MAGIC)
        out.write(framed)
    return len(EVENT_MAGIC) + len(framed)


def parse_event_chunk(data: bytes) -> Iterator[memoryview]:
    """The events of an event chunk's bytes, in order."""
    if not data.startswith(EVENT_MAGIC[:5]):
        raise ChunkFormatError("not an event chunk (bad magic)")
    view = memoryview(data)
    offset, end = len(EVENT_MAGIC), len(data)
    while offset < end:
        if offset + 4 > end:
            raise ChunkFormatError(f"event chunk truncated at byte {offset}")
        (length,) = _LENGTH.unpack_from(view, offset)
        offset += 4
        if offset + length > end:
            raise ChunkFormatError(f"event chunk truncated at byte {offset}")
        yield view[offset : offset + length]
        offset += length


def split_event_chunk(data: bytes) -> list[bytes]:
    """The events of an event chunk's bytes, in order, as bytes (what readers that decode every event want:
    small bytes objects hash and slice faster than memoryviews)."""
    if not data.startswith(EVENT_MAGIC[:5]):
        raise ChunkFormatError("not an event chunk (bad magic)")
    unpack = _LENGTH.unpack_from
    events: list[bytes] = []
    append = events.append
    offset, end = len(EVENT_MAGIC), len(data)
    try:
        while offset < end:
            (length,) = unpack(data, offset)
            offset += 4
            append(data[offset : offset + length])
            offset += length
    except struct.error:
        raise ChunkFormatError(f"event chunk truncated at byte {offset}") from None
    if offset != end:
        raise ChunkFormatError(f"event chunk truncated: its last event ends at byte {offset} of {end}")
    return events


def frame_offsets(data: bytes) -> list[int]:
    """Where each event's frame (its uint32 length, then the event) starts in an event chunk's bytes, in
    order: the framing checked as :func:`split_event_chunk` checks it, without copying events out."""
    if not data.startswith(EVENT_MAGIC[:5]):
        raise ChunkFormatError("not an event chunk (bad magic)")
    unpack = _LENGTH.unpack_from
    offsets: list[int] = []
    append = offsets.append
    offset, end = len(EVENT_MAGIC), len(data)
    try:
        while offset < end:
            (length,) = unpack(data, offset)
            append(offset)
            offset += 4 + length
    except struct.error:
        raise ChunkFormatError(f"event chunk truncated at byte {offset}") from None
    if offset != end:
        raise ChunkFormatError(f"event chunk truncated: its last event ends at byte {offset} of {end}")
    return offsets


def read_event_chunk(location: str, path: str) -> Iterator[memoryview]:
    """The events of the event chunk at ``location/path``."""
    fs, root = storage.resolve(location)
    with fs.open_input_file(f"{root}/{path}") as f:
        data = f.read()
    return parse_event_chunk(data)


def column_stats(table: pa.Table) -> dict[str, Any]:
    """Min, max and null count of each primitive column, JSON-ready (for pruning reads)."""
    columns: dict[str, Any] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if not (
            pa.types.is_integer(kind)
            or pa.types.is_floating(kind)
            or pa.types.is_string(kind)
            or pa.types.is_boolean(kind)
            or pa.types.is_date(kind)
            or pa.types.is_timestamp(kind)
        ):
            continue
        entry: dict[str, Any] = {"nulls": column.null_count}
        if column.null_count < len(column):
            if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
                column = column.cast(pa.int32() if pa.types.is_date32(kind) else pa.int64())
            bounds = pc.min_max(column).as_py()
            if not (pa.types.is_floating(kind) and any(v != v for v in bounds.values())):  # NaN is not JSON
                entry.update(bounds)
        columns[name] = entry
    return {"columns": columns, "rows": table.num_rows}


def _with_ids(dtype: pa.DataType, struct: dict[str, Any] | None) -> pa.DataType:
    if struct is None:
        return dtype
    if pa.types.is_struct(dtype):
        return pa.struct(_fields_with_ids(list(dtype), struct))
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_with_ids(dtype.value_type, struct)))
    if pa.types.is_large_list(dtype):
        return pa.large_list(dtype.value_field.with_type(_with_ids(dtype.value_type, struct)))
    if pa.types.is_map(dtype):
        return pa.map_(dtype.key_field, dtype.item_field.with_type(_with_ids(dtype.item_type, struct)))
    return dtype


def _inner_struct(dtype: Any) -> dict[str, Any] | None:
    """The struct inside a StructType-JSON type (itself, or an array's elements, a map's values)."""
    while isinstance(dtype, dict) and dtype.get("type") in ("array", "map"):
        dtype = dtype.get("elementType" if dtype["type"] == "array" else "valueType")
    return dtype if isinstance(dtype, dict) and dtype.get("type") == "struct" else None


def _fields_with_ids(fields: list[pa.Field], struct: dict[str, Any], top: bool = False) -> list[pa.Field]:
    by_name = {f["name"]: f for f in struct.get("fields", [])}
    out = []
    hidden = 0
    for f in fields:
        column = by_name.get(f.name)
        if column is None and top and is_hidden(f.name):
            f = f.with_metadata({**(f.metadata or {}), PARQUET_FIELD_ID: str(HIDDEN_FIELD_IDS + hidden).encode()})
            hidden += 1
        if column is None:
            out.append(f)
            continue
        f = f.with_type(_with_ids(f.type, _inner_struct(column.get("type"))))
        fid = field_id(column)
        if fid is not None:
            f = f.with_metadata({**(f.metadata or {}), PARQUET_FIELD_ID: str(fid).encode()})
        out.append(f)
    return out


def with_field_ids(table: pa.Table, schema: dict[str, Any]) -> pa.Table:
    """``table`` whose columns (nested struct fields too) carry the field ids of ``schema`` (the rows'
    schema version, StructType JSON), matched by name, as Parquet field ids: pyarrow writes an Arrow
    field's ``PARQUET:field_id`` metadata into the file. Hidden state columns get ids from
    :data:`~catalog_api.aggregates.HIDDEN_FIELD_IDS` up."""
    if not has_field_ids(schema):
        return table
    return table.cast(pa.schema(_fields_with_ids(list(table.schema), schema, top=True),
                                metadata=table.schema.metadata))


def write_columnar_chunk(location: str, path: str, table: pa.Table, encoding_id: int,
                         schema: dict[str, Any] | None = None, *,
                         dictionary: bool | Sequence[str] = True) -> ChunkStats:
    """Write ``table`` as a Parquet chunk whose rows are all of one encoding id; ``schema``, that encoding's
    Spark schema (StructType JSON), gives the columns their Parquet field ids. ``dictionary``: the columns
    Parquet dictionary-encodes (True: all, its default)."""
    if schema is not None:
        table = with_field_ids(table, schema)
    fs, root = storage.resolve(location)
    full = f"{root}/{path}"
    fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
    metadata = dict(table.schema.metadata or {})
    metadata[ENCODING_ID_KEY] = str(encoding_id).encode()
    metadata[CHUNK_VERSION_KEY] = b"1"
    table = table.replace_schema_metadata(metadata)
    pq.write_table(table, full, filesystem=fs, compression="zstd",
                   use_dictionary=dictionary if isinstance(dictionary, bool) else list(dictionary))
    size = fs.get_file_info(full).size or 0
    return ChunkStats(event_count=table.num_rows, bytes=size, encoding_ids={encoding_id}, stats=column_stats(table))


def recorded_encoding(chunk: Chunk) -> int | None:
    """The encoding id a commit records for a columnar chunk (its rows are all of one), or None."""
    return chunk.encoding_ids[0] if len(chunk.encoding_ids) == 1 else None


def read_columnar_chunk(location: str, path: str, columns: list[str] | None = None,
                        recorded: int | None = None) -> tuple[pa.Table, int]:
    """The rows of a Parquet chunk and the encoding id they were written with: the footer's, or for a file
    written by another engine (an Iceberg client's append), whose footer has none, ``recorded``, the one
    its commit records (:func:`recorded_encoding`)."""
    fs, root = storage.resolve(location)
    with fs.open_input_file(f"{root}/{path}") as source:
        parquet = pq.ParquetFile(source)
        raw = (parquet.schema_arrow.metadata or {}).get(ENCODING_ID_KEY)
        if raw is not None:
            recorded = int(raw)
        elif recorded is None:
            raise ChunkFormatError(f"{path} is not a columnar chunk (no {ENCODING_ID_KEY.decode()} metadata, and "
                                   "its commit records no encoding id)")
        return parquet.read(columns=columns), recorded
