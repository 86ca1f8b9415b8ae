"""The executor side of ``from_registry``: one batch of framed payloads to one struct array.

Rows are grouped by their first five bytes (framing byte and schema or encoding id). An Avro
group whose writer schema the columnar decoder handles (:mod:`spark_plugin.avro_columns`) is
decoded a column at a time; every other row (Protobuf, JSON, a Pravega codec, an Avro schema
the columnar decoder declines, a record it found malformed, a payload too short to have a
prefix) goes through :class:`registry.serde.Deserializer` one record at a time, which also
gives the precise error for a bad payload. Both paths present records under the same reader
schema with the same rules, so a batch may mix them freely.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from registry.client import RegistryClient
from registry.model import SchemaInfo
from registry.serde.errors import SerdeError

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from registry.serde import Deserializer
    from spark_plugin.avro_columns import ColumnarDecoder

#: A payload that cannot be decoded fails the query, naming the row's problem (the default).
FAILFAST = "FAILFAST"
#: A payload that cannot be decoded reads as null (as Spark's ``from_avro`` does in this mode).
PERMISSIVE = "PERMISSIVE"
MODES = (FAILFAST, PERMISSIVE)
#: Framing byte plus the 4-byte id: the same length for Pravega and Confluent (Protobuf's indexes follow).
PREFIX = 5
_PREFIX_MASK = np.uint64((1 << (8 * PREFIX)) - 1)

_lock = threading.Lock()
#: Per executor process: one Deserializer per (registry, group, reader schema), so that writer schemas
#: are resolved once per id and process however many tasks and batches the process runs.
_deserializers: dict[tuple[str, ...], Deserializer] = {}
#: Per executor process: the columnar decoder of each (reader, 5-byte prefix), None where there is none.
_columnar: dict[tuple[tuple[str, ...], bytes], ColumnarDecoder | None] = {}


def _key(uri: str, namespace: str, group: str, reader: SchemaInfo) -> tuple[str, ...]:
    return (uri, namespace, group, reader.format.name, reader.type, reader.data.hex())


def _deserializer(key: tuple[str, ...], uri: str, namespace: str, group: str, reader: SchemaInfo) -> Deserializer:
    found = _deserializers.get(key)
    if found is None:
        from registry.serde import Deserializer

        with _lock:
            found = _deserializers.get(key)
            if found is None:
                as_dict = reader.format.name == "Protobuf"
                found = Deserializer(RegistryClient(uri, namespace), group, reader, as_dict=as_dict)
                _deserializers[key] = found
    return found


def _writer_schema(deserializer: Deserializer, payload: bytes) -> SchemaInfo | None:
    """The Avro writer schema of a payload without a codec; None for anything else."""
    if payload[0] == 0:
        schema = deserializer.confluent.schema(payload)
    else:
        info = deserializer.encoding_info(payload)
        if info.codec.name:
            return None
        schema = info.schema
    return schema if schema.format.name == "Avro" else None


class BatchDecoder:
    """Decodes batches for one (registry, group, reader schema, mode); pickled to the executors."""

    def __init__(self, uri: str, namespace: str, group: str, reader: SchemaInfo, struct: StructType,
                 mode: str) -> None:
        self.uri = uri
        self.namespace = namespace
        self.group = group
        self.reader = reader
        self.struct = struct
        self.mode = mode
        self._arrow_type: pa.StructType | None = None
        self._cache_key: tuple[str, ...] | None = None
        self._fix: Callable[[Any], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # What the executors build for themselves stays out of the pickle.
        return {**self.__dict__, "_arrow_type": None, "_cache_key": None, "_fix": None}

    def __call__(self, payloads: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The struct array of a batch of payloads (null for null payloads).

        Several batches may come as the chunks of one ChunkedArray: they are decoded as one,
        which spreads the fixed cost of each whole-batch operation over more rows.
        """
        arrow_type = self._arrow_type
        if arrow_type is None:  # once per task, not per batch: pyspark's conversion is not free
            from pyspark_streamcat.arrow import spark_arrow_schema

            arrow_type = self._arrow_type = pa.struct(list(spark_arrow_schema(self.struct)))
        key = self._cache_key
        if key is None:
            key = self._cache_key = _key(self.uri, self.namespace, self.group, self.reader)
        deserializer = _deserializer(key, self.uri, self.namespace, self.group, self.reader)
        if pa.types.is_large_binary(payloads.type):
            payloads = payloads.cast(pa.binary())
        pieces: list[tuple[np.ndarray, pa.Array]] = []
        slow = np.ones(len(payloads), bool) if self.reader.format.name != "Avro" else \
            self._columnar(payloads, key, deserializer, arrow_type, pieces)
        rows = np.flatnonzero(slow)
        if len(rows):
            fix = self._fix
            if fix is None and self.reader.format.name != "Avro":
                from pyspark_streamcat.arrow import value_converter

                fix = self._fix = value_converter(self.struct, self.reader.format.name)
            pieces.append((rows, self._records(payloads, rows, deserializer.deserialize, fix, arrow_type)))
        if len(pieces) == 1 and len(pieces[0][0]) == len(payloads):
            return pieces[0][1]
        return _assemble(pieces, len(payloads), arrow_type)

    def _columnar(self, payloads: pa.Array | pa.ChunkedArray, key: tuple[str, ...], deserializer: Deserializer,
                  arrow_type: pa.StructType, pieces: list[tuple[np.ndarray, pa.Array]]) -> np.ndarray:
        """Decode what the columnar decoder can into ``pieces``; returns the rows left to the record path."""
        from spark_plugin.avro_columns import words

        data, starts, ends = _layout(payloads.chunks if isinstance(payloads, pa.ChunkedArray) else [payloads])
        usable = ends - starts >= PREFIX
        if payloads.null_count:
            usable &= ~np.asarray(payloads.is_null().to_numpy(zero_copy_only=False))
        slow = ~usable
        candidates = np.flatnonzero(usable)
        if not len(candidates):
            return slow
        # The first five bytes of each payload, as one integer (the padding makes eight readable).
        prefixes = words(data, starts[candidates]) & _PREFIX_MASK
        if (prefixes == prefixes[0]).all():  # the usual batch: one framing and one id throughout
            groups: list[np.ndarray] = [candidates]
        else:
            kinds, inverse = np.unique(prefixes, return_inverse=True)
            groups = [candidates[inverse == k] for k in range(len(kinds))]
        for chosen in groups:
            start = int(starts[chosen[0]])
            head = data[start:start + PREFIX].tobytes()
            decoder = self._decoder(key, head, deserializer, payloads, int(chosen[0]), arrow_type)
            if decoder is None:
                slow[chosen] = True
                continue
            if len(chosen) == len(starts):  # every row: the arrays themselves, not gathered copies of them
                array, bad = decoder.decode(data, starts + PREFIX, ends)
            else:
                array, bad = decoder.decode(data, starts[chosen] + PREFIX, ends[chosen])
            if array is None:
                slow[chosen] = True
                continue
            if bad.any():
                slow[chosen[bad]] = True
                keep = ~bad
                chosen, array = chosen[keep], array.filter(pa.array(keep, pa.bool_()))
            pieces.append((chosen, array))
        return slow

    def _decoder(self, key: tuple[str, ...], head: bytes, deserializer: Deserializer,
                 payloads: pa.Array | pa.ChunkedArray, row: int, arrow_type: pa.StructType) -> ColumnarDecoder | None:
        """The columnar decoder of the rows that start with ``head`` (``row`` is one of them)."""
        cache_key = (key, head)
        if cache_key in _columnar:
            return _columnar[cache_key]
        from spark_plugin.avro_columns import columnar_decoder

        first = payloads[row].as_py()

        try:
            # Resolves the id and checks the reader schema against the writer's, as the record path does.
            deserializer.deserialize(first)
            writer = _writer_schema(deserializer, first)
        except SerdeError:
            return None  # the record path reports it, row by row
        decoder = None
        if writer is not None:
            decoder = columnar_decoder(json.loads(writer.data), json.loads(self.reader.data), arrow_type)
        with _lock:
            return _columnar.setdefault(cache_key, decoder)

    def _records(self, payloads: pa.Array | pa.ChunkedArray, rows: np.ndarray, deserialize: Callable[[bytes], Any],
                 fix: Callable[[Any], Any] | None, arrow_type: pa.StructType) -> pa.Array:
        permissive = self.mode == PERMISSIVE
        records: list[Any] = []
        append = records.append
        for row, payload in zip(rows.tolist(), payloads.take(pa.array(rows, pa.int64())).to_pylist(), strict=True):
            if payload is None:
                append(None)
                continue
            try:
                record = deserialize(payload)
            except SerdeError as e:
                if permissive:
                    append(None)
                    continue
                raise SerdeError(f"from_registry: row {row} of a batch: {e}") from e
            append(record if fix is None else fix(record))
        return pa.array(records, type=arrow_type)


def _layout(chunks: list[pa.Array]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The payload bytes of ``chunks`` (binary arrays) end to end and padded, and where each payload starts and ends.

    Only the chunks' own bytes are copied: a slice of a bigger array shares its parent's buffer.
    """
    from spark_plugin.avro_columns import pad

    parts: list[np.ndarray] = []
    bounds: list[np.ndarray] = []
    base = 0
    for chunk in chunks:
        if not len(chunk):
            continue
        offsets = np.frombuffer(chunk.buffers()[1], np.int32, len(chunk) + 1, chunk.offset * 4)
        first, last = int(offsets[0]), int(offsets[-1])
        if last > first:
            parts.append(np.frombuffer(chunk.buffers()[2], np.uint8, last - first, first))
        bounds.append(offsets.astype(np.int64) + (base - first))
        base += last - first
    if len(bounds) == 1:
        return pad(*parts), bounds[0][:-1], bounds[0][1:]
    empty = np.zeros(0, np.int64)
    return (pad(*parts), np.concatenate([b[:-1] for b in bounds] or [empty]),
            np.concatenate([b[1:] for b in bounds] or [empty]))


def _assemble(pieces: list[tuple[np.ndarray, pa.Array]], rows: int, arrow_type: pa.StructType) -> pa.Array:
    """One array of ``rows`` rows from pieces that each hold some rows, in the rows' order."""
    position = np.empty(rows, np.int64)
    start = 0
    for chosen, _ in pieces:
        position[chosen] = np.arange(start, start + len(chosen))
        start += len(chosen)
    combined = pa.concat_arrays([array for _, array in pieces]) if pieces else pa.array([], arrow_type)
    return combined.take(pa.array(position, pa.int64()))
