"""Avro records decoded a batch at a time, column by column, with numpy: no Python object per value.

Decoding one record at a time with fastavro builds a dict and a Python object per field
(about 6 µs for eight fields), which is slower than Spark's own ``from_avro`` before Arrow
has even been built. Avro's binary encoding is sequential within a record but the records of
a batch are independent, so each field can be decoded for every record at once: a position
array holds where each record's next field starts; varints, floats, strings and union
branches are read with a few numpy operations over the whole batch and become Arrow arrays
straight away.

:func:`columnar_decoder` compiles a writer schema (and optionally a reader schema) into such
a decoder, or returns None when the schemas use something it does not handle (arrays, maps,
unions other than a type and null, decimals, time types, defaults that are not scalars,
resolution other than added, removed, renamed-by-alias or promoted fields, a nullable writer
field that the reader declares non-nullable); callers then decode record by record, which
handles everything. Resolution follows Avro's rules for what it accepts: fields matched by
name or reader alias, the reader's defaults for fields the writer lacks, int/long/float/double
promotions and string/bytes. Each record is decoded from its own start, so a bad record never
shifts another: records whose decoding runs past their end are reported, not guessed at.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Bytes beyond the data that any read may touch (a varint's ten, at most), so reads need no bounds checks.
_PADDING = 16

#: The decoder of one column: (data, positions) -> (Arrow array, positions after the value).
Step = Callable[[np.ndarray, np.ndarray], tuple[pa.Array | None, np.ndarray]]


class Unsupported(Exception):
    """The schemas use something the columnar decoder does not handle."""


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_PAIRS = np.uint64(0x3F803F803F803F80)
_LOW14, _HIGH14 = np.uint64(0x00003FFF00003FFF), np.uint64(0x3FFF00003FFF0000)
_LOW28, _HIGH28 = np.uint64(0x000000000FFFFFFF), np.uint64(0x0FFFFFFF00000000)


def words(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The eight bytes at each position as one little-endian uint64 (``data`` is padded)."""
    view = np.ndarray((len(data) - 7,), np.dtype("<u8"), buffer=data, strides=(1,))
    return view[pos]  # indexing, not take(): take() is several times slower on an unaligned view


def _varint(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints (Avro int and long) starting at ``pos``; returns values and positions after them.

    The common cases take a handful of whole-batch operations: every value one byte long, or
    every value at most eight bytes long (56 bits), read as one 64-bit word whose 7-bit groups
    are packed together. Longer varints (magnitudes of 2^55 and over) are read a byte at a time.
    Each numpy operation costs about a microsecond on a batch however simple it is, so the
    packing skips the steps that the batch's longest varint does not need.
    """
    first = data.take(pos)
    if not (first & 0x80).any():
        return _unzigzag(first.astype(np.uint64)), pos + 1
    word = words(data, pos)
    stop = ~word & _HIGH  # the high bit of every byte that ends a varint
    if not stop.all():
        return _varint_bytes(data, pos)
    # Every bit up to the first ending byte's high bit: stop - 1 borrows through the lower bits.
    mask = stop ^ (stop - _ONE)
    x = word & _LOW7 & mask
    bits = np.bitwise_count(mask)  # eight per byte of the varint
    widest = int(bits.max())
    # Pairs of 7-bit groups into 14 bits: take the upper group's extra 2^7 back out (b0 + 256 b1 - 128 b1).
    x -= (x >> _ONE) & _PAIRS
    if widest > 16:
        x = (x & _LOW14) | ((x & _HIGH14) >> np.uint64(2))
        if widest > 32:
            x = (x & _LOW28) | ((x & _HIGH28) >> np.uint64(4))
    return _unzigzag(x), pos + (bits >> np.uint8(3))


def _unzigzag(value: np.ndarray) -> np.ndarray:
    # In uint64 then viewed, not cast: astype() would copy twice.
    return ((value >> _ONE) ^ (_ZERO - (value & _ONE))).view(np.int64)


def _varint_bytes(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_varint` a byte at a time, for batches with varints longer than eight bytes."""
    value = np.zeros(len(pos), np.uint64)
    more = np.ones(len(pos), bool)
    shift = np.uint64(0)
    for _ in range(10):
        byte = data[pos].astype(np.uint64)
        value |= np.where(more, (byte & np.uint64(0x7F)) << shift, np.uint64(0))
        pos = pos + more
        more &= byte >= 0x80
        if not more.any():
            break
        shift += np.uint64(7)
    return _unzigzag(value), pos


def _fixed_bytes(data: np.ndarray, pos: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` bytes at each position, as a (rows, size) array."""
    return data[pos[:, None] + np.arange(size)]


def _unaligned(data: np.ndarray, pos: np.ndarray, dtype: str) -> np.ndarray:
    """The value of ``dtype`` (a fixed-size little-endian type) at each position (``data`` is padded)."""
    kind = np.dtype(dtype)
    return np.ndarray((len(data) - kind.itemsize + 1,), kind, buffer=data, strides=(1,))[pos]


def _gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrow offsets and the concatenated bytes of the slices (starts, lengths)."""
    offsets = np.zeros(len(starts) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return offsets, np.zeros(0, np.uint8)
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total)
    return offsets, data[index]


def _slices(binary_type: pa.DataType, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """A binary (or string) array of the byte ranges (starts, ends) of ``data``, each ``start <= end``.

    When the ranges come in order without overlapping (one per record, records in order: the
    usual case), ``data`` itself is the values buffer of an array whose even elements are the
    ranges and whose odd elements are the bytes between them, and Arrow's ``take`` of the even
    elements copies them in C++, without numpy's byte-index array. Otherwise (a malformed
    record ran into the next one) they are gathered with numpy.
    """
    rows = len(starts)
    if rows and len(data) < 2**31 and not (starts[1:] < ends[:-1]).any():
        bounds = np.empty(2 * rows, np.int32)
        bounds[0::2] = starts
        bounds[1::2] = ends
        interleaved = pa.Array.from_buffers(binary_type, 2 * rows - 1,
                                            [None, pa.py_buffer(bounds), pa.py_buffer(data)])
        return pc.take(interleaved, _evens(rows), boundscheck=False)  # the indices are in range by construction
    offsets, values = _gather(data, starts, ends - starts)
    return pa.Array.from_buffers(binary_type, rows, [None, pa.py_buffer(offsets), pa.py_buffer(values)])


def _check_utf8(array: pa.Array) -> None:
    """Raise ArrowInvalid unless every string of ``array`` (offset 0) is UTF-8, as fastavro's strict decoding checks.

    Text that is all ASCII is UTF-8: one pass for the highest byte spares Arrow's full
    validation (about 15 times slower) in that common case.
    """
    size = int(np.frombuffer(array.buffers()[1], np.int32, len(array) + 1)[-1]) if len(array) else 0
    if size and np.frombuffer(array.buffers()[2], np.uint8, size).max() >= 0x80:
        array.validate(full=True)


_even_indices: dict[int, pa.Array] = {}


def _evens(rows: int) -> pa.Array:
    """0, 2, 4, ... (``rows`` of them), kept per size: batches mostly come in a few sizes."""
    found = _even_indices.get(rows)
    if found is None:
        if len(_even_indices) > 64:
            _even_indices.clear()
        found = _even_indices[rows] = pa.array(np.arange(0, 2 * rows, 2, dtype=np.int64))
    return found


def _primitive(kind: str, arrow_type: pa.DataType) -> Step:
    if kind in ("int", "long"):
        narrow = pa.types.is_int32(arrow_type) or pa.types.is_date32(arrow_type)
        numpy_type, integer_type = (np.int32, pa.int32()) if narrow else (np.int64, pa.int64())

        def integer(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            values, pos = _varint(data, pos)
            # Always name the Arrow type: left to infer it, pa.array took 10 to 700 µs a call here, not 2.
            return pa.array(values.astype(numpy_type, copy=False), integer_type), pos

        return integer
    if kind in ("float", "double"):
        size, layout, float_type = (4, "<f4", pa.float32()) if kind == "float" else (8, "<f8", pa.float64())

        def floating(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            return pa.array(_unaligned(data, pos, layout), float_type), pos + size

        return floating
    if kind == "boolean":

        def boolean(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            return pa.array(data.take(pos) != 0, pa.bool_()), pos + 1

        return boolean
    if kind in ("string", "bytes"):
        binary_type = pa.string() if kind == "string" else pa.binary()

        def text(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            lengths, pos = _varint(data, pos)
            ends = pos + lengths
            if (lengths < 0).any() or (ends > len(data)).any():
                raise _Overrun  # a negative or impossible length: not a record of this schema
            array = _slices(binary_type, data, pos, ends)
            if kind == "string":
                _check_utf8(array)
            return array, ends

        return text
    if kind == "null":

        def null(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            return pa.nulls(len(pos)), pos

        return null
    raise Unsupported(kind)


class _Overrun(Exception):
    """A length in the data is impossible; the batch is decoded record by record instead."""


def _spread(values: pa.Array, present: np.ndarray, chosen: np.ndarray) -> pa.Array:
    """``values`` (one per row of ``chosen``, the rows where ``present``) spread over all rows, null elsewhere.

    Strings and fixed-width numbers are laid out directly (offsets or values with a validity
    bitmap), which is several times cheaper than Arrow's ``take``; other types are taken.
    """
    rows = len(present)
    kind = values.type
    validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    nulls = rows - len(chosen)
    buffers = values.buffers()
    if values.null_count == 0 and values.offset == 0 and all(b is not None for b in buffers[1:]):
        if pa.types.is_string(kind) or pa.types.is_binary(kind):
            value_offsets = np.frombuffer(buffers[1], np.int32, len(values) + 1)
            # Row i's offset is that of the first value after the rows before it that have one.
            before = np.zeros(rows + 1, np.intp)
            np.cumsum(present, out=before[1:])
            offsets = value_offsets[before]
            return pa.Array.from_buffers(kind, rows, [validity, pa.py_buffer(offsets), buffers[2]], null_count=nulls)
        width = kind.bit_width if pa.types.is_primitive(kind) and not pa.types.is_boolean(kind) else 0
        if width in (8, 16, 32, 64):
            layout = np.dtype(f"<u{width // 8}")
            spread = np.zeros(rows, layout)
            spread[chosen] = np.frombuffer(buffers[1], layout, len(values))
            return pa.Array.from_buffers(kind, rows, [validity, pa.py_buffer(spread)], null_count=nulls)
    # Rows without a value take a null index, which take() turns into null.
    index = np.full(rows, -1, np.int64)
    index[chosen] = np.arange(len(chosen))
    return values.take(pa.array(index, pa.int64(), mask=~present))


def _names(schema: dict[str, Any], namespace: str) -> tuple[str, str]:
    name = schema["name"]
    space = schema.get("namespace", namespace) if "." not in name else name.rpartition(".")[0]
    full = name if "." in name else (f"{space}.{name}" if space else name)
    return full, space or ""


@dataclass
class _Names:
    """The named types (records, enums, fixed) one schema has defined so far, by full name."""

    named: dict[str, Any]

    def resolve(self, schema: Any, namespace: str) -> Any:
        """The definition a type name refers to; other schemas as they are."""
        if isinstance(schema, str) and schema not in _PRIMITIVES:
            full = schema if "." in schema or not namespace else f"{namespace}.{schema}"
            found = self.named.get(full) or self.named.get(schema)
            if found is None:
                raise Unsupported(f"named type {schema}")
            return found
        if isinstance(schema, dict) and schema.get("type") in _PRIMITIVES and "logicalType" not in schema:
            return schema["type"]
        if isinstance(schema, dict) and schema.get("type") in ("record", "enum", "fixed"):
            self.named.setdefault(_names(schema, namespace)[0], schema)
        return schema

    def kind(self, schema: Any, namespace: str) -> str:
        """``record``, ``union``, ``long``...: what the schema is."""
        schema = self.resolve(schema, namespace)
        if isinstance(schema, str):
            return schema
        if isinstance(schema, list):
            return "union"
        kind = schema.get("type")
        return self.kind(kind, namespace) if isinstance(kind, (dict, list)) else str(kind)


@dataclass
class _Compiler:
    """Turns a (writer, reader) pair of Avro schemas into steps; raises Unsupported for the rest."""

    writer_names: _Names
    reader_names: _Names

    def step(self, writer: Any, reader: Any, arrow_type: pa.DataType, namespace: str,
             reader_namespace: str | None = None) -> Step:
        space_r = namespace if reader_namespace is None else reader_namespace
        writer = self.writer_names.resolve(writer, namespace)
        reader = self.reader_names.resolve(reader, space_r)
        if isinstance(writer, list):
            return self._union(writer, reader, arrow_type, namespace, space_r)
        if isinstance(reader, list):
            # A writer's plain value read as a nullable union: the value itself.
            branches = [b for b in reader if self.reader_names.kind(b, space_r) != "null"]
            if len(branches) != 1 or len(reader) != 2:
                raise Unsupported("union")
            return self.step(writer, branches[0], arrow_type, namespace, space_r)
        kind_w, kind_r = self.writer_names.kind(writer, namespace), self.reader_names.kind(reader, space_r)
        if kind_w == "record":
            if kind_r != "record" or not pa.types.is_struct(arrow_type):
                raise Unsupported("record")
            return self._record(writer, reader, arrow_type, namespace, space_r)
        if kind_w == "enum":
            if kind_r != "enum" or writer["symbols"] != reader["symbols"]:
                raise Unsupported("enum")
            return self._enum(writer["symbols"], arrow_type)
        if kind_w == "fixed":
            if kind_r != "fixed" or writer.get("size") != reader.get("size") or self._logical(reader):
                raise Unsupported("fixed")
            return self._fixed(int(writer["size"]))
        if kind_w in ("array", "map") or kind_r in ("array", "map", "record", "enum", "fixed"):
            raise Unsupported(kind_w)
        logical_w, logical_r = self._logical(writer), self._logical(reader)
        if logical_w != logical_r and not (logical_w in _PLAIN_LOGICAL and logical_r in _PLAIN_LOGICAL):
            raise Unsupported("logical type change")
        _check_promotion(kind_w, kind_r)
        return self._typed(_primitive(kind_w, arrow_type), arrow_type, logical_r)

    def _typed(self, read: Step, arrow_type: pa.DataType, logical: str | None) -> Step:
        if logical in ("timestamp-millis", "local-timestamp-millis"):
            def millis(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
                values, pos = read(data, pos)
                assert values is not None
                micros = np.asarray(values.to_numpy(zero_copy_only=False)) * 1000
                return pa.array(micros, pa.int64()).view(arrow_type), pos

            return millis
        if logical not in _PLAIN_LOGICAL:
            raise Unsupported(str(logical))

        def typed(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            values, pos = read(data, pos)
            assert values is not None
            if values.type.equals(arrow_type):
                return values, pos
            if pa.types.is_timestamp(arrow_type) or pa.types.is_date32(arrow_type):
                return values.view(arrow_type), pos
            return values.cast(arrow_type), pos

        return typed

    def _union(self, writer: list[Any], reader: Any, arrow_type: pa.DataType, namespace: str,
               space_r: str) -> Step:
        kinds = [self.writer_names.kind(b, namespace) for b in writer]
        if len(writer) != 2 or kinds.count("null") != 1:
            raise Unsupported("union")
        value_branch = 1 - kinds.index("null")
        if not isinstance(reader, list):
            raise Unsupported("nullable writer field, non-nullable reader")
        reader_branches = [b for b in reader if self.reader_names.kind(b, space_r) != "null"]
        if len(reader) != 2 or len(reader_branches) != 1:
            raise Unsupported("union")
        value = self.step(writer[value_branch], reader_branches[0], arrow_type, namespace, space_r)

        def union(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            branch, pos = _varint(data, pos)
            if ((branch != 0) & (branch != 1)).any():
                raise _Overrun
            present = branch == value_branch
            if present.all():
                return value(data, pos)
            chosen = np.flatnonzero(present)
            values, after = value(data, pos[chosen])
            pos = pos.copy()
            pos[chosen] = after
            assert values is not None
            return _spread(values, present, chosen), pos

        return union

    def _record(self, writer: dict[str, Any], reader: dict[str, Any], arrow_type: pa.StructType,
                namespace: str, reader_namespace: str) -> Step:
        _, space_w = _names(writer, namespace)
        _, space_r = _names(reader, reader_namespace)
        by_name: dict[str, tuple[int, dict[str, Any]]] = {}
        for position, f in enumerate(reader["fields"]):
            by_name[f["name"]] = (position, f)
            for alias in f.get("aliases", []):
                by_name.setdefault(alias, (position, f))
        if len(reader["fields"]) != arrow_type.num_fields:
            raise Unsupported("reader record does not match the Spark type")
        steps: list[tuple[int | None, Step]] = []
        seen: set[int] = set()
        for f in writer["fields"]:
            found = by_name.get(f["name"])
            if found is None:
                # Read to move past it, then dropped: the reader has no such field.
                skip = _Compiler(self.writer_names, self.writer_names)
                arrow = _arrow_of(f["type"], space_w, self.writer_names)
                steps.append((None, skip.step(f["type"], f["type"], arrow, space_w)))
                continue
            position, reader_field = found
            seen.add(position)
            steps.append((position, self.step(f["type"], reader_field["type"], arrow_type.field(position).type,
                                              space_w, space_r)))
        defaults: dict[int, Any] = {}
        for position, f in enumerate(reader["fields"]):
            if position in seen:
                continue
            if "default" not in f:
                raise Unsupported(f"field {f['name']} has no default")
            default = f["default"]
            if isinstance(default, (dict, list)):
                raise Unsupported("complex default")
            defaults[position] = default
        fields = list(arrow_type)

        def record(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            columns: list[pa.Array | None] = [None] * len(fields)
            for position, step in steps:
                values, pos = step(data, pos)
                if position is not None:
                    columns[position] = values
            for position, default in defaults.items():
                columns[position] = pa.array([default] * len(pos), fields[position].type)
            arrays = [c if c is not None else pa.nulls(len(pos), f.type) for c, f in zip(columns, fields, strict=True)]
            return pa.StructArray.from_arrays(arrays, fields=fields), pos

        return record

    def _enum(self, symbols: list[str], arrow_type: pa.DataType) -> Step:
        dictionary = pa.array(symbols, arrow_type)

        def enum(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            index, pos = _varint(data, pos)
            if ((index < 0) | (index >= len(symbols))).any():
                raise _Overrun
            return dictionary.take(pa.array(index, pa.int64())), pos

        return enum

    def _fixed(self, size: int) -> Step:
        def fixed(data: np.ndarray, pos: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
            values = np.ascontiguousarray(_fixed_bytes(data, pos, size)).reshape(-1)
            offsets = np.arange(0, (len(pos) + 1) * size, size, dtype=np.int32)
            buffers = [None, pa.py_buffer(offsets), pa.py_buffer(values)]
            return pa.Array.from_buffers(pa.binary(), len(pos), buffers), pos + size

        return fixed

    @staticmethod
    def _logical(schema: Any) -> str | None:
        return schema.get("logicalType") if isinstance(schema, dict) else None


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
#: Logical types whose values are their underlying type's, in the Arrow type Spark gives them.
_PLAIN_LOGICAL = frozenset({None, "timestamp-micros", "local-timestamp-micros", "date", "uuid",
                            "timestamp-millis", "local-timestamp-millis"})
_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"), ("long", "double"),
               ("float", "double"), ("string", "bytes"), ("bytes", "string")}


def _check_promotion(writer: str, reader: str) -> None:
    if writer != reader and (writer, reader) not in _PROMOTIONS:
        raise Unsupported(f"{writer} read as {reader}")


def _arrow_of(schema: Any, namespace: str, names: _Names) -> pa.DataType:
    """An Arrow type for a writer-only field (decoded to move past it, then dropped)."""
    schema = names.resolve(schema, namespace)
    if isinstance(schema, list):
        kinds = [names.kind(b, namespace) for b in schema]
        if "null" in kinds and len(schema) == 2:
            return _arrow_of(schema[1 - kinds.index("null")], namespace, names)
        raise Unsupported("union")
    kind = names.kind(schema, namespace)
    simple = {"int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(),
              "boolean": pa.bool_(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null(),
              "enum": pa.string(), "fixed": pa.binary()}
    if kind in simple:
        return simple[kind]
    if kind == "record":
        _, space = _names(schema, namespace)
        return pa.struct([pa.field(f["name"], _arrow_of(f["type"], space, names)) for f in schema["fields"]])
    raise Unsupported(kind)


@dataclass(frozen=True)
class ColumnarDecoder:
    """Decodes the Avro payloads of a batch into a struct array of the reader's Arrow type."""

    step: Step

    def decode(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[pa.Array | None, np.ndarray]:
        """Records whose bytes start at ``starts`` in ``data`` (padded), and which ran past their ``ends``.

        None (and every row marked) when a length or a branch in the data is impossible.
        """
        try:
            array, after = self.step(data, starts)
        except (_Overrun, pa.ArrowInvalid, IndexError):
            return None, np.ones(len(starts), bool)
        return array, after > ends


def pad(*parts: np.ndarray) -> np.ndarray:
    """``parts`` (bytes) joined, with the zero bytes after them that decoders may read past a truncated record."""
    return np.concatenate([*parts, np.zeros(_PADDING + 1, np.uint8)])


def columnar_decoder(writer: Any, reader: Any | None, arrow_type: pa.StructType) -> ColumnarDecoder | None:
    """A columnar decoder of ``writer``'s records presented as ``reader``'s, or None if it cannot be one.

    ``writer`` and ``reader`` are Avro schemas as parsed JSON; ``arrow_type`` is the Arrow type of
    the reader's records as Spark wants them.
    """
    try:
        # Two name tables: a reader may define a record of the same name differently.
        step = _Compiler(_Names({}), _Names({})).step(writer, writer if reader is None else reader, arrow_type, "")
    except (Unsupported, KeyError, TypeError, ValueError):
        return None
    return ColumnarDecoder(step)
