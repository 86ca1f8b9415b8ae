"""Arrow struct arrays to the records each format's serializer takes (the encode side of ``to_registry``).

The decode side is :func:`pyspark_streamcat.arrow.value_converter`; this is its inverse, for
the types the schema mapping (``docs/schema-mapping.md``) gives each format:

- Avro (fastavro): timestamps and dates as integers (epoch microseconds, days), which
  fastavro writes as they are and which Arrow produces without building datetime objects;
  decimals as ``Decimal``; maps as dicts.
- Protobuf (the proto3 JSON mapping that ``json_format.ParseDict`` reads): the same integers,
  decimals as text, bytes as base64, map keys as text, and nullable array elements and map
  values (and nested collections) wrapped in ``{"value": ...}``, as the mapping declares them.
- JSON: timestamps and dates as RFC 3339 text, decimals as text, bytes as base64.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

Convert = Callable[[Any], Any]


def _integers(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with timestamps as int64 and dates as int32, at any depth.

    Every field becomes nullable: Arrow refuses to cast a null struct whose non-nullable child
    holds a null under it, which is how Spark sends a null struct.
    """
    if pa.types.is_timestamp(arrow_type):
        return pa.int64()
    if pa.types.is_date32(arrow_type):
        return pa.int32()
    if pa.types.is_struct(arrow_type):
        return pa.struct([f.with_type(_integers(f.type)).with_nullable(True) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return pa.map_(arrow_type.key_field.with_type(_integers(arrow_type.key_type)),
                       arrow_type.item_field.with_type(_integers(arrow_type.item_type)).with_nullable(True))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        value = arrow_type.value_field.with_type(_integers(arrow_type.value_type)).with_nullable(True)
        return pa.large_list(value) if pa.types.is_large_list(arrow_type) else pa.list_(value)
    return arrow_type


def _nullsafe(convert: Convert) -> Convert:
    def run(value: Any) -> Any:
        return None if value is None else convert(value)

    return run


def _decimal_text(value: decimal.Decimal) -> str:
    return format(value, "f")


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _timestamp_text(value: dt.datetime) -> str:
    return value.isoformat()


def _scalar(dtype: DataType, fmt: str) -> Convert | None:
    if fmt == "avro":
        return None  # fastavro takes Arrow's Python values (and integers for the temporal types)
    if isinstance(dtype, DecimalType):
        return _decimal_text
    if isinstance(dtype, BinaryType):
        return _base64
    if fmt == "json" and isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return _timestamp_text
    return None


def _wrapped(element: DataType, contains_null: bool) -> bool:
    # Mirrors catalog_api.schema.protobuf: nullable elements and nested collections are wrapped.
    return contains_null or isinstance(element, (ArrayType, MapType))


def _wrap(convert: Convert | None) -> Convert:
    if convert is None:
        return lambda value: {} if value is None else {"value": value}
    inner = convert
    return lambda value: {} if value is None else {"value": inner(value)}


def _converter(dtype: DataType, fmt: str) -> Convert | None:
    """How to turn Arrow's Python value for ``dtype`` into the format's record value (None: as it is)."""
    scalar = _scalar(dtype, fmt)
    if scalar is not None:
        return _nullsafe(scalar)
    protobuf = fmt == "protobuf"
    if isinstance(dtype, ArrayType):
        element = _converter(dtype.elementType, fmt)
        if protobuf and _wrapped(dtype.elementType, dtype.containsNull):
            element = _wrap(element)
        if element is None:
            return None
        convert_element = element
        return _nullsafe(lambda items: [convert_element(x) for x in items])
    if isinstance(dtype, MapType):
        key = _converter(dtype.keyType, fmt)
        value = _converter(dtype.valueType, fmt)
        if protobuf:
            # The JSON mapping writes every map key as text.
            inner_key = key
            key = (lambda k: str(inner_key(k))) if inner_key is not None else str
            if _wrapped(dtype.valueType, dtype.valueContainsNull):
                value = _wrap(value)
        convert_key = key or (lambda k: k)
        convert_value = value or (lambda v: v)
        # Arrow gives maps as lists of (key, value) pairs.
        return _nullsafe(lambda pairs: {convert_key(k): convert_value(v) for k, v in pairs})
    if isinstance(dtype, StructType):
        converters = {f.name: _converter(f.dataType, fmt) for f in dtype.fields}
        active = [(name, c) for name, c in converters.items() if c is not None]
        if not active:
            return None

        def convert_struct(record: dict[str, Any]) -> dict[str, Any]:
            for name, convert in active:
                record[name] = convert(record[name])
            return record

        return _nullsafe(convert_struct)
    return None


def records_writer(schema: StructType, fmt: str) -> Callable[[pa.Array], list[Any]]:
    """A function from a struct array of ``schema`` to its rows as records of format ``fmt`` (None for null rows)."""
    kind = fmt.lower()
    convert = _converter(schema, kind)

    def records(array: pa.Array) -> list[Any]:
        if kind != "json":
            target = _integers(array.type)
            if not target.equals(array.type):
                array = array.cast(target)
        rows = array.to_pylist()
        return rows if convert is None else [convert(r) for r in rows]

    return records
