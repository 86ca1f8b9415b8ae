"""A column's Debezium encodings (dates, timestamps, times, decimals, binary) converted to its Arrow type
(the table in the package's docstring)."""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from catalog_api.streams.base64_ints import unscaled_int64

DECIMAL_MODES = ("precise", "string", "double")
_TIMESTAMP_UNITS = {
    "io.debezium.time.Timestamp": "ms", "org.apache.kafka.connect.data.Timestamp": "ms",
    "io.debezium.time.MicroTimestamp": "us", "io.debezium.time.NanoTimestamp": "ns",
}
_TIME_UNITS = {
    "io.debezium.time.Time": "ms", "org.apache.kafka.connect.data.Time": "ms",
    "io.debezium.time.MicroTime": "us", "io.debezium.time.NanoTime": "ns",
}
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}



# -- column conversions ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Hint:
    """What the envelope's schema says of one column: its semantic name, Connect type and decimal scale."""

    semantic: str | None = None
    connect_type: str | None = None
    scale: int | None = None


def schema_hints(schema: Any) -> dict[str, Hint]:
    """Per column, what a wrapped envelope's ``schema`` says of its encoding (empty when it says nothing)."""
    hints: dict[str, Hint] = {}
    if not isinstance(schema, dict):
        return hints
    for part in schema.get("fields") or ():
        if not isinstance(part, dict) or part.get("field") not in ("after", "before"):
            continue
        for column in part.get("fields") or ():
            if not isinstance(column, dict) or "field" not in column:
                continue
            parameters = column.get("parameters") or {}
            scale = parameters.get("scale")
            hints[str(column["field"])] = Hint(column.get("name"), column.get("type"),
                                                int(scale) if scale is not None else None)
        if hints:
            break
    return hints


class Unconvertible(Exception):
    """A value that does not fit its column (the caller finds which row)."""


def _b64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise Unconvertible(f"expected base64 text, got {value!r}")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except binascii.Error as e:
        raise Unconvertible(f"{value!r} is not base64: {e}") from None


def _decimal_value(value: Any, scale: int | None, mode: str, target_scale: int) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, dict):  # io.debezium.data.VariableScaleDecimal
        raw = value.get("value")
        return Decimal(int.from_bytes(_b64(raw), "big", signed=True)).scaleb(-int(value.get("scale") or 0))
    if isinstance(value, bool):
        raise Unconvertible(f"{value!r} is no decimal")
    if isinstance(value, int | float):
        return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if isinstance(value, str):
        if mode == "precise":
            unscaled = int.from_bytes(_b64(value), "big", signed=True)
            return Decimal(unscaled).scaleb(-(target_scale if scale is None else scale))
        try:
            return Decimal(value)
        except ArithmeticError:
            raise Unconvertible(f"{value!r} is no decimal") from None
    raise Unconvertible(f"{value!r} is no decimal")


def _scaled(values: pa.Array, from_unit: str, to_unit: str) -> pa.Array:
    """int64 counts of ``from_unit`` as counts of ``to_unit`` (refusing to drop precision)."""
    a, b = _PER_SECOND[from_unit], _PER_SECOND[to_unit]
    if a == b:
        return values
    if b > a:
        return pc.multiply_checked(values, b // a)
    divided = pc.divide(values, a // b)
    if pc.all(pc.equal(pc.multiply(divided, a // b), values)).as_py() is not False:
        return divided
    raise Unconvertible(f"a value in {from_unit} has more precision than the column's {to_unit}")


def convert(values: Sequence[Any], target: pa.DataType, hint: Hint, decimal_mode: str) -> pa.Array:
    """One column of raw JSON values as an Arrow array of ``target`` (raises on any value that does not fit)."""
    try:
        return _convert_unchecked(values, target, hint, decimal_mode)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError, ArithmeticError) as e:
        raise Unconvertible(str(e)) from None


def _first(values: Sequence[Any]) -> Any:
    return next((v for v in values if v is not None), None)


def _timestamps(text: pa.Array, target: pa.DataType) -> pa.Array:
    """ISO-8601 strings as timestamps of ``target`` (with a zone: the instant, in UTC)."""
    try:
        parsed = text.cast(pa.timestamp("ns", tz="UTC"))
    except pa.ArrowInvalid:
        parsed = text.cast(pa.timestamp("ns"))  # ISO without a zone: as it is
    if target.tz is None and parsed.type.tz is not None:
        parsed = parsed.cast(pa.timestamp("ns"))
    elif target.tz is not None and parsed.type.tz is None:
        parsed = parsed.cast(pa.int64()).cast(pa.timestamp("ns", tz=target.tz))
    return parsed.cast(target)  # a safe cast: refuses to drop precision


def _decimal_mode(hint: Hint, decimal_mode: str) -> str:
    """How a decimal column's values are encoded: as the envelope's schema says, else as the ingest was told."""
    if hint.semantic == "org.apache.kafka.connect.data.Decimal":
        return "precise"
    if hint.connect_type == "string":
        return "string"
    return decimal_mode


def _precise(text: pa.Array, target: pa.DataType, hint: Hint) -> pa.Array | None:
    """Base64 unscaled values (``decimal.handling.mode`` precise) of a decimal column that fit an int64,
    laid out as the decimal's storage; None when some do not (wide values, other text: decoded one by
    one by the caller). Raises :class:`Unconvertible` for a value with more digits than the column's."""
    if not (hint.scale is None or hint.scale == target.scale) or target.precision > 38:
        return None
    narrow = unscaled_int64(text)
    if narrow is None:
        return None
    bounds = pc.min_max(narrow).as_py()
    limit = 10**target.precision
    if bounds["min"] is not None and not (-limit < bounds["min"] and bounds["max"] < limit):
        raise Unconvertible(f"a value has more than the column's {target.precision} digits")
    wide = narrow.cast(pa.decimal128(38, 0))
    exact = pa.Array.from_buffers(pa.decimal128(target.precision, target.scale), len(wide), wide.buffers(),
                                  null_count=wide.null_count)
    return exact.cast(target)


def _convert_unchecked(values: Sequence[Any], target: pa.DataType, hint: Hint, decimal_mode: str) -> pa.Array:
    first = _first(values)
    if pa.types.is_date(target):
        if isinstance(first, str):
            return pa.array(values, pa.string()).cast(target)
        return pa.array(values, pa.int32()).cast(pa.date32()).cast(target)
    if pa.types.is_timestamp(target):
        if isinstance(first, str):
            return _timestamps(pa.array(values, pa.string()), target)
        unit = _TIMESTAMP_UNITS.get(hint.semantic or "", target.unit)
        counts = _scaled(pa.array(values, pa.int64()), unit, target.unit)
        return counts.cast(pa.timestamp(target.unit, tz=target.tz))
    if pa.types.is_time(target):
        unit = _TIME_UNITS.get(hint.semantic or "", target.unit)
        counts = _scaled(pa.array(values, pa.int64()), unit, target.unit)
        return counts.cast(pa.int32() if pa.types.is_time32(target) else pa.int64()).cast(target)
    if pa.types.is_decimal(target):
        mode = _decimal_mode(hint, decimal_mode)
        if mode == "precise" and isinstance(first, str):
            try:
                exact = _precise(pa.array(values, pa.string()), target, hint)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                exact = None  # other kinds of values among them: one by one below
            if exact is not None:
                return exact
        scale = target.scale
        return pa.array([_decimal_value(v, hint.scale, mode, scale) for v in values], target)
    binary = pa.types.is_binary(target) or pa.types.is_large_binary(target) or pa.types.is_fixed_size_binary(target)
    if binary and isinstance(first, str):
        return pa.array([None if v is None else _b64(v) for v in values], target)
    return pa.array(values, target)


RAW_TYPES: dict[type, pa.DataType] = {int: pa.int64(), str: pa.string(), float: pa.float64(), bool: pa.bool_()}


def direct(target: pa.DataType) -> bool:
    """Whether Debezium's JSON values of a column of ``target`` are the column's values as they are."""
    return bool(pa.types.is_integer(target) or pa.types.is_floating(target) or pa.types.is_boolean(target)
                or pa.types.is_string(target) or pa.types.is_large_string(target))


def from_raw(values: pa.Array, target: pa.DataType, hint: Hint, decimal_mode: str) -> pa.Array:
    """A column of JSON values, read by Arrow as their JSON type, as ``target`` (raises when one does not fit)."""
    if pa.types.is_integer(values.type):
        if pa.types.is_date(target):
            return values.cast(pa.int32()).cast(pa.date32()).cast(target)
        if pa.types.is_timestamp(target):
            unit = _TIMESTAMP_UNITS.get(hint.semantic or "", target.unit)
            return _scaled(values, unit, target.unit).cast(pa.timestamp(target.unit, tz=target.tz))
        if pa.types.is_time(target):
            unit = _TIME_UNITS.get(hint.semantic or "", target.unit)
            counts = _scaled(values, unit, target.unit)
            return counts.cast(pa.int32() if pa.types.is_time32(target) else pa.int64()).cast(target)
    elif pa.types.is_string(values.type):
        if pa.types.is_timestamp(target):
            return _timestamps(values, target)
        if pa.types.is_date(target):
            return values.cast(target)
        if pa.types.is_decimal(target) and _decimal_mode(hint, decimal_mode) == "precise":
            exact = _precise(values, target, hint)
            if exact is not None:
                return exact
    return _convert_unchecked(values.to_pylist(), target, hint, decimal_mode)


