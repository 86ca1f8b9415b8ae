"""Column DEFAULT values: Spark's SQL literals as Python values, Avro field defaults and Arrow scalars.

Spark keeps a column's default in its StructField metadata as SQL text: ``CURRENT_DEFAULT`` is
what the user wrote (what an INSERT that omits the column writes: Spark fills it in itself),
``EXISTS_DEFAULT`` the constant it folded to when the column was added (what rows written before
the column existed read). The server accepts defaults that are literals (``42``, ``-1.5``,
``'text'``, ``TRUE``, ``NULL``, ``DATE '2024-01-31'``, ``X'CAFE'``, Spark's suffixed forms such as
``7L`` or ``1.50BD``, and ``CAST(<literal> AS <type>)``); anything else (``current_date()``,
``1 + 1``) is refused naming the column, because every reader, Spark or not, must be able to
fill the value without evaluating SQL.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

from catalog_api.schema.errors import UnsupportedType
from catalog_api.schema.spark import Char, DataType, Decimal, Simple, StructType, Varchar, child_path

#: StructField metadata key of the SQL text an INSERT that omits the column writes.
CURRENT_DEFAULT = "CURRENT_DEFAULT"
#: StructField metadata key of the SQL literal rows written before the column existed read.
EXISTS_DEFAULT = "EXISTS_DEFAULT"

_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(BD|[YSLDF])?", re.IGNORECASE)
_STRING = re.compile(r"'((?:[^'\\]|\\.|'')*)'|\"((?:[^\"\\]|\\.)*)\"", re.DOTALL)
_TYPED = re.compile(r"(DATE|TIMESTAMP_NTZ|TIMESTAMP_LTZ|TIMESTAMP|X)\s*('(?:[^'\\]|\\.)*')", re.IGNORECASE)
_CAST = re.compile(r"CAST\s*\((.*)\s+AS\s+([A-Za-z_][\w(), ]*)\)", re.IGNORECASE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "0": "\0", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_INTEGRAL_RANGE = {
    "byte": (-(2**7), 2**7 - 1), "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1),
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class NotALiteral(ValueError):
    """SQL text that is no constant literal of the column's type."""


def default_value(sql: str, dtype: DataType, path: str) -> Any:
    """The value of the default ``sql`` for a column of ``dtype``: int, float, bool, str, bytes,
    ``decimal.Decimal``, ``datetime.date``, a timestamp as epoch microseconds, or None.

    Raises :class:`UnsupportedType` naming the column when ``sql`` is no literal of that type.
    """
    try:
        return _coerce(_literal(sql.strip()), dtype)
    except NotALiteral as e:
        raise UnsupportedType(path, f"DEFAULT {sql} is not a constant literal of type {_name(dtype)} ({e}); "
                                    "streamcat tables take literal defaults only") from None


def _name(dtype: DataType) -> str:
    json = dtype.json()
    return json if isinstance(json, str) else str(json.get("type"))


def _literal(sql: str) -> Any:
    """A literal's value, before it meets the column's type: strings stay text, typed literals are tagged."""
    if sql.upper() == "NULL":
        return None
    if sql.upper() in ("TRUE", "FALSE"):
        return sql.upper() == "TRUE"
    if sql.startswith("(") and sql.endswith(")"):
        return _literal(sql[1:-1].strip())
    if m := _NUMBER.fullmatch(sql):
        text, suffix = m[1], (m[2] or "").upper()
        exponent, point = any(c in text for c in "eE"), "." in text
        if suffix == "BD" or (not suffix and point and not exponent):
            return decimal.Decimal(text)  # Spark reads 1.5 as a decimal literal
        if suffix in ("D", "F") or exponent:
            return float(text)
        if point:
            raise NotALiteral(f"{sql} is not an integer")
        return int(text)
    if m := _STRING.fullmatch(sql):
        return _unescape(m[1] if m[1] is not None else m[2])
    if m := _TYPED.fullmatch(sql):
        kind, text = m[1].upper(), _unescape(m[2][1:-1])
        return ("binary", bytes.fromhex(text)) if kind == "X" else (kind.lower(), text)
    if m := _CAST.fullmatch(sql):
        # Spark writes floats and special doubles as CAST('1.5' AS FLOAT): the inner literal, read as the column's.
        inner = _literal(m[1].strip())
        return ("cast", inner)
    raise NotALiteral("not a literal")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        elif c == "'" and text[i + 1 : i + 2] == "'":
            out.append("'")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _coerce(value: Any, dtype: DataType) -> Any:
    if value is None:
        return None
    if isinstance(value, tuple) and value[0] == "cast":
        value = value[1]
        if isinstance(value, str) and isinstance(dtype, Simple) and dtype.name in ("float", "double"):
            try:
                return float(value)
            except ValueError:
                raise NotALiteral(f"{value!r} is no number") from None
        return _coerce(value, dtype)
    match dtype:
        case Simple("boolean"):
            if isinstance(value, bool):
                return value
        case Simple(name) if name in _INTEGRAL_RANGE:
            if isinstance(value, int) and not isinstance(value, bool):
                low, high = _INTEGRAL_RANGE[name]
                if not low <= value <= high:
                    raise NotALiteral(f"{value} is out of the range of {name}")
                return value
        case Simple("float" | "double"):
            if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
                return float(value)
        case Decimal(precision, scale):
            if isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
                quantized = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-scale))
                if len(quantized.as_tuple().digits) > precision:
                    raise NotALiteral(f"{value} does not fit decimal({precision},{scale})")
                return quantized
        case Simple("string") | Char() | Varchar():
            if isinstance(value, str):
                return value
        case Simple("binary"):
            if isinstance(value, tuple) and value[0] == "binary":
                return value[1]
            if isinstance(value, str):
                return value.encode()
        case Simple("date"):
            if (isinstance(value, tuple) and value[0] == "date") or isinstance(value, str):
                text = value[1] if isinstance(value, tuple) else value
                try:
                    return dt.date.fromisoformat(text.strip())
                except ValueError:
                    raise NotALiteral(f"{text!r} is no date") from None
        case Simple("timestamp" | "timestamp_ntz"):
            if (isinstance(value, tuple) and value[0].startswith("timestamp")) or isinstance(value, str):
                text = value[1] if isinstance(value, tuple) else value
                return _micros(text)
    raise NotALiteral(f"a {type(value).__name__} literal")


def _micros(text: str) -> int:
    """Epoch microseconds of a timestamp literal; without an offset it is taken as UTC (the session time
    zone of the SQL that made it is not known here)."""
    try:
        parsed = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise NotALiteral(f"{text!r} is no timestamp") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def avro_default(value: Any, dtype: DataType) -> tuple[bool, Any]:
    """(whether Avro can hold it, the Avro field default JSON) for a default value of ``dtype``."""
    match value:
        case None:
            return True, None
        case bool() | int() | float() | str():
            return True, value
        case bytes():
            return True, value.decode("latin-1")  # Avro writes bytes defaults as code points 0-255
        case decimal.Decimal():
            if isinstance(dtype, Decimal):
                unscaled = int(value.scaleb(dtype.scale))
                size = max(1, (unscaled.bit_length() + 8) // 8)
                return True, unscaled.to_bytes(size, "big", signed=True).decode("latin-1")
        case dt.date():
            return True, (value - dt.date(1970, 1, 1)).days
    return False, None


def check_defaults(struct: StructType) -> None:
    """Refuse (:class:`UnsupportedType`, naming the column) a default that is not a literal of its
    column's type, in ``CURRENT_DEFAULT`` or ``EXISTS_DEFAULT``."""
    for f in struct.fields:
        path = child_path("", f.name)
        for key in (CURRENT_DEFAULT, EXISTS_DEFAULT):
            sql = f.metadata.get(key)
            if sql is not None:
                if not isinstance(sql, str):
                    raise UnsupportedType(path, f"{key} must be SQL text, not {sql!r}")
                default_value(sql, f.type, path)


def exists_defaults(struct: StructType) -> dict[str, Any]:
    """The value rows written before it existed read, of each top-level column that has one."""
    out: dict[str, Any] = {}
    for f in struct.fields:
        sql = f.metadata.get(EXISTS_DEFAULT)
        if isinstance(sql, str):
            out[f.name] = default_value(sql, f.type, child_path("", f.name))
    return out
