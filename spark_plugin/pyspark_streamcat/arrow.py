"""Arrow data in exactly the shape Spark expects, whatever schema version wrote it.

Spark checks that the Arrow schema of every batch a Python source yields equals
``to_arrow_schema(spark_schema, timezone="UTC")``, nested field names and nullability
included. Chunks written under older schema versions lack columns (they read as null),
hold narrower types (promoted as Avro schema resolution does: int to long, float to double)
and nest differently named list items; :func:`conform_batch` rebuilds them, filling a column a
chunk lacks with the column's EXISTS_DEFAULT when it has one. (Which chunk column is which
table column, by field id, is decided before: ``catalog_api.schema.resolution``.)
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

#: Rows per Arrow batch when records (decoded events) are turned into batches.
EVENT_BATCH_ROWS = 10_000


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires of the batches of a source whose schema is ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


def _field_index(source: pa.StructType | pa.Schema, name: str) -> int:
    index = source.get_field_index(name)
    if index >= 0:
        return index
    lowered = name.lower()  # Spark resolves column names case-insensitively by default
    matches = [i for i, f in enumerate(source) if f.name.lower() == lowered]
    return matches[0] if len(matches) == 1 else -1


def _unsliced(array: pa.Array) -> pa.Array:
    # Child arrays of nested types ignore the parent's slice offset; a copy without offset keeps them aligned.
    return pa.concat_arrays([array]) if array.offset else array


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def conform_array(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` with exactly the type ``target``: missing struct fields null, narrower types widened."""
    source = array.type
    if source.equals(target):
        return array
    if pa.types.is_null(source):
        return pa.nulls(len(array), target)
    if pa.types.is_struct(target) and pa.types.is_struct(source):
        array = _unsliced(array)
        children = []
        for f in target:
            index = _field_index(source, f.name)
            child = array.field(index) if index >= 0 else pa.nulls(len(array), f.type)
            children.append(conform_array(child, f.type))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(array))
    if pa.types.is_map(target) and pa.types.is_map(source):
        array = _unsliced(array)
        keys = conform_array(array.keys, target.key_type)
        items = conform_array(array.items, target.item_type)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=_mask(array))
    if pa.types.is_list(target) and (pa.types.is_list(source) or pa.types.is_large_list(source)):
        array = _unsliced(array)
        values = conform_array(array.values, target.value_type)
        offsets = array.offsets.cast(pa.int32()) if pa.types.is_large_list(source) else array.offsets
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=_mask(array))
    # Scalars: promotions, time zones and units (a chunk may hold nanoseconds; Spark wants micros).
    safe = not (pa.types.is_timestamp(target) or pa.types.is_date(target))
    return array.cast(target, safe=safe)


def conform_batch(batch: pa.RecordBatch, target: pa.Schema,
                  defaults: Mapping[str, Any] | None = None) -> pa.RecordBatch:
    """``batch`` with exactly the columns of ``target``, in its order; absent columns read their value in
    ``defaults`` (a column's EXISTS_DEFAULT: the chunk was written before it existed), else null."""
    if batch.schema.equals(target):
        return batch
    arrays = []
    for f in target:
        index = _field_index(batch.schema, f.name)
        if index >= 0:
            column = batch.column(index)
        elif defaults and f.name in defaults and defaults[f.name] is not None:
            column = pa.array([defaults[f.name]] * batch.num_rows, type=f.type)
        else:
            column = pa.nulls(batch.num_rows, f.type)
        arrays.append(conform_array(column, f.type))
    if not arrays:
        return empty_columns(batch.num_rows)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def empty_columns(rows: int) -> pa.RecordBatch:
    """A batch of ``rows`` rows and no columns (what COUNT(*) reads)."""
    batches = pa.table({"_": pa.nulls(rows)}).select([]).to_batches()
    return batches[0] if batches else pa.RecordBatch.from_arrays([], schema=pa.schema([]))


# -- decoded events (Python values) to Arrow -----------------------------------------------------------

Convert = Callable[[Any], Any]


def _parse_timestamp(value: Any) -> Any:
    if isinstance(value, str):
        parsed = dt.datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return value


def _parse_local_timestamp(value: Any) -> Any:
    if isinstance(value, str):
        parsed = dt.datetime.fromisoformat(value)
        return parsed.astimezone(dt.UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    return value


def _parse_date(value: Any) -> Any:
    return dt.date.fromisoformat(value) if isinstance(value, str) else value


def _parse_decimal(value: Any) -> Any:
    return decimal.Decimal(str(value)) if isinstance(value, (str, int, float)) else value


def _parse_binary(value: Any) -> Any:
    return base64.b64decode(value) if isinstance(value, str) else value


def _parse_float(value: Any) -> Any:
    return float(value) if isinstance(value, str) else value


def _parse_int(value: Any) -> Any:
    return int(value) if isinstance(value, str) else value


def _nullsafe(convert: Convert) -> Convert:
    def run(value: Any) -> Any:
        return None if value is None else convert(value)

    return run


def _wrapped(element: DataType, contains_null: bool) -> bool:
    # The protobuf mapping puts nullable elements (and nested collections) into a message with one
    # field, "value" (see catalog_api.schema.protobuf): in dict form, {"value": x}, or {} for null.
    return contains_null or isinstance(element, (ArrayType, MapType))


def _unwrap(convert: Convert | None) -> Convert:
    if convert is None:
        return lambda wrapper: None if wrapper is None else wrapper.get("value")
    inner = convert
    return lambda wrapper: None if wrapper is None else inner(wrapper.get("value"))


def value_converter(dtype: DataType, fmt: str = "json") -> Convert | None:
    """How to turn a decoded JSON or Protobuf value into one Arrow takes for ``dtype`` (None: as it is).

    JSON carries timestamps, dates and decimals as text and bytes as base64; Protobuf's dict
    form writes bytes as base64, non-finite floats and map keys as text, and wraps nullable
    collection elements in a message of one field.
    """
    scalar: Convert | None = None
    if isinstance(dtype, TimestampType):
        scalar = _parse_timestamp
    elif isinstance(dtype, TimestampNTZType):
        scalar = _parse_local_timestamp
    elif isinstance(dtype, DateType):
        scalar = _parse_date
    elif isinstance(dtype, DecimalType):
        scalar = _parse_decimal
    elif isinstance(dtype, BinaryType):
        scalar = _parse_binary
    elif isinstance(dtype, (FloatType, DoubleType)):
        scalar = _parse_float
    elif isinstance(dtype, (ByteType, ShortType, IntegerType, LongType)):
        scalar = _parse_int
    if scalar is not None:
        return _nullsafe(scalar)
    protobuf = fmt.lower() == "protobuf"
    if isinstance(dtype, ArrayType):
        element = value_converter(dtype.elementType, fmt)
        if protobuf and _wrapped(dtype.elementType, dtype.containsNull):
            element = _unwrap(element)
        if element is None:
            return None
        convert_element = element
        return _nullsafe(lambda items: [convert_element(x) for x in items])
    if isinstance(dtype, MapType):
        key, value = value_converter(dtype.keyType, fmt), value_converter(dtype.valueType, fmt)
        if protobuf and _wrapped(dtype.valueType, dtype.valueContainsNull):
            value = _unwrap(value)
        if key is None and value is None:
            return None
        convert_key = key or (lambda x: x)
        convert_value = value or (lambda x: x)
        return _nullsafe(lambda items: {convert_key(k): convert_value(v) for k, v in items.items()})
    if isinstance(dtype, StructType):
        converters = {f.name: value_converter(f.dataType, fmt) for f in dtype.fields}
        active = {name: c for name, c in converters.items() if c is not None}
        if not active:
            return None

        def convert_struct(record: Any) -> Any:
            out = dict(record)
            for name, convert in active.items():
                if name in out:
                    out[name] = convert(out[name])
            return out

        return _nullsafe(convert_struct)
    return None


def records_to_batches(records: Iterable[Any], schema: StructType, target: pa.Schema, fmt: str,
                       batch_rows: int = EVENT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Decoded records (dicts keyed by column name) as batches of ``target`` (the Arrow form of ``schema``).

    Avro records (fastavro's values) go to Arrow as they are; JSON and Protobuf ones are converted.
    """
    fix = None if fmt.lower() == "avro" else value_converter(schema, fmt)
    pending: list[Any] = []
    for record in records:
        pending.append(fix(record) if fix else record)
        if len(pending) >= batch_rows:
            yield _to_batch(pending, target)
            pending = []
    if pending:
        yield _to_batch(pending, target)


def _to_batch(records: Sequence[Any], target: pa.Schema) -> pa.RecordBatch:
    if not len(target):
        return empty_columns(len(records))
    return pa.RecordBatch.from_pylist(list(records), schema=target)
