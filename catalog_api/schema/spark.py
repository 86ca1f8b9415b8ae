"""A typed model of Spark's StructType JSON form (what ``StructType.json()`` writes).

:func:`parse_struct` validates the JSON and builds the model, raising
:class:`registry.errors.BadRequest` naming the column and what is wrong;
``StructType.json()`` writes the canonical JSON back, as pyspark's ``jsonValue()`` does.
Valid Spark types that no schema format here can carry (calendar intervals, spatial
types, user-defined types) parse into :class:`Opaque`, so that each format can refuse
them by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from registry.errors import BadRequest

#: Spark types written as a bare name in the JSON form.
SIMPLE_NAMES = frozenset(
    {
        "boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary",
        "date", "timestamp", "timestamp_ntz", "void", "variant",
    }
)
#: Decimal precision limit of Spark.
MAX_PRECISION = 38
#: Fractional-second digits Spark's TIME type allows.
MAX_TIME_PRECISION = 6

_DAY_TIME_FIELDS = ("day", "hour", "minute", "second")
_YEAR_MONTH_FIELDS = ("year", "month")

# The same grammar as Spark's (and pyspark's) DataType.fromJson, anchored.
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_CHAR = re.compile(r"char\(\s*(\d+)\s*\)")
_VARCHAR = re.compile(r"varchar\(\s*(\d+)\s*\)")
_TIME = re.compile(r"time\(\s*(\d+)\s*\)")
_DAY_TIME = re.compile(r"interval (day|hour|minute|second)(?: to (day|hour|minute|second))?")
_YEAR_MONTH = re.compile(r"interval (year|month)(?: to (year|month))?")
_OPAQUE = re.compile(r"interval|string\s+collate\s+\S+|geometry(\(.*\))?|geography(\(.*\))?")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Simple:
    """A type named by one word: ``integer``, ``string``, ``timestamp_ntz``, ``void``, ``variant``..."""

    name: str

    def json(self) -> str:
        """Spark's JSON form."""
        return self.name


@dataclass(frozen=True)
class Decimal:
    """``decimal(precision, scale)``."""

    precision: int
    scale: int

    def json(self) -> str:
        """Spark's JSON form."""
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True)
class Char:
    """``char(n)``: a string padded to exactly n characters."""

    length: int

    def json(self) -> str:
        """Spark's JSON form."""
        return f"char({self.length})"


@dataclass(frozen=True)
class Varchar:
    """``varchar(n)``: a string of at most n characters."""

    length: int

    def json(self) -> str:
        """Spark's JSON form."""
        return f"varchar({self.length})"


@dataclass(frozen=True)
class Time:
    """``time(p)``: a time of day with p fractional-second digits."""

    precision: int

    def json(self) -> str:
        """Spark's JSON form."""
        return f"time({self.precision})"


@dataclass(frozen=True)
class DayTimeInterval:
    """``interval day to second`` and its narrower forms; values are microseconds."""

    start: str
    end: str

    def json(self) -> str:
        """Spark's JSON form."""
        return f"interval {self.start}" if self.start == self.end else f"interval {self.start} to {self.end}"


@dataclass(frozen=True)
class YearMonthInterval:
    """``interval year to month`` and its narrower forms; values are months."""

    start: str
    end: str

    def json(self) -> str:
        """Spark's JSON form."""
        return f"interval {self.start}" if self.start == self.end else f"interval {self.start} to {self.end}"


@dataclass(frozen=True)
class Opaque:
    """A valid Spark type that no schema format here carries; kept as written."""

    value: Any
    description: str

    def json(self) -> Any:
        """Spark's JSON form, as it was given."""
        return self.value


@dataclass(frozen=True)
class ArrayType:
    """``array<element>``."""

    element: DataType
    contains_null: bool

    def json(self) -> dict[str, Any]:
        """Spark's JSON form."""
        return {"type": "array", "elementType": self.element.json(), "containsNull": self.contains_null}


@dataclass(frozen=True)
class MapType:
    """``map<key, value>``; Spark keys are never null."""

    key: DataType
    value: DataType
    value_contains_null: bool

    def json(self) -> dict[str, Any]:
        """Spark's JSON form."""
        return {
            "type": "map",
            "keyType": self.key.json(),
            "valueType": self.value.json(),
            "valueContainsNull": self.value_contains_null,
        }


@dataclass(frozen=True)
class StructField:
    """One column: name, type, nullability and metadata (``comment`` is the column comment)."""

    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def comment(self) -> str | None:
        """The column comment, if the metadata holds one."""
        value = self.metadata.get("comment")
        return value if isinstance(value, str) else None

    @property
    def other_metadata(self) -> dict[str, Any]:
        """The metadata apart from the comment, which formats carry in their own way."""
        return {k: v for k, v in self.metadata.items() if not (k == "comment" and isinstance(v, str))}

    def json(self) -> dict[str, Any]:
        """Spark's JSON form."""
        return {"name": self.name, "type": self.type.json(), "nullable": self.nullable, "metadata": self.metadata}


@dataclass(frozen=True)
class StructType:
    """``struct<...>``: an ordered list of uniquely named fields."""

    fields: tuple[StructField, ...] = ()

    def json(self) -> dict[str, Any]:
        """Spark's JSON form (``StructType.jsonValue()``)."""
        return {"type": "struct", "fields": [f.json() for f in self.fields]}


DataType: TypeAlias = (
    Simple | Decimal | Char | Varchar | Time | DayTimeInterval | YearMonthInterval | Opaque
    | ArrayType | MapType | StructType
)
#: Types without children.
Atomic: TypeAlias = Simple | Decimal | Char | Varchar | Time | DayTimeInterval | YearMonthInterval | Opaque

INTEGRAL = frozenset({"byte", "short", "integer", "long"})


def child_path(parent: str, name: str) -> str:
    """The path of column ``name`` inside ``parent``, quoting the name as Spark does when needed."""
    if not (_PLAIN_NAME.fullmatch(name) and not name.isdigit()):
        name = "`" + name.replace("`", "``") + "`"
    return f"{parent}.{name}" if parent else name


def element_path(parent: str) -> str:
    """The path of an array's elements (Spark's own notation)."""
    return f"{parent}.element"


def key_path(parent: str) -> str:
    """The path of a map's keys."""
    return f"{parent}.key"


def value_path(parent: str) -> str:
    """The path of a map's values."""
    return f"{parent}.value"


def _bad(path: str, message: str) -> BadRequest:
    where = f" at column {path}" if path else ""
    return BadRequest(f"malformed Spark schema{where}: {message}")


def parse_struct(value: Any) -> StructType:
    """Validate Spark StructType JSON (the dict form) and build its model."""
    if not (isinstance(value, dict) and value.get("type") == "struct"):
        raise _bad("", f"a table schema must be a struct, not {_describe(value)}")
    return _parse_fields(value, "")


def parse_type(value: Any, path: str) -> DataType:
    """Validate the JSON form of one Spark type found at ``path``."""
    if isinstance(value, str):
        return parse_atomic(value, path)
    if not isinstance(value, dict):
        raise _bad(path, f"a type must be a string or an object, not {_describe(value)}")
    kind = value.get("type")
    if kind == "struct":
        return _parse_fields(value, path)
    if kind == "array":
        _keys(value, path, {"type", "elementType", "containsNull"})
        return ArrayType(
            parse_type(value["elementType"], element_path(path)), _flag(value, "containsNull", path)
        )
    if kind == "map":
        _keys(value, path, {"type", "keyType", "valueType", "valueContainsNull"})
        return MapType(
            parse_type(value["keyType"], key_path(path)),
            parse_type(value["valueType"], value_path(path)),
            _flag(value, "valueContainsNull", path),
        )
    if kind == "udt":
        return Opaque(value, f"user-defined type {value.get('class') or value.get('pyClass') or '?'}")
    raise _bad(path, f"unknown complex type {kind!r}; expected struct, array, map or udt")


def parse_atomic(text: str, path: str) -> Atomic:
    """Validate the JSON name of a type without children (``integer``, ``decimal(10,2)``...)."""
    if text in SIMPLE_NAMES:
        return Simple(text)
    if text == "decimal":
        return Decimal(10, 0)
    if m := _DECIMAL.fullmatch(text):
        precision, scale = int(m[1]), int(m[2])
        if not 1 <= precision <= MAX_PRECISION:
            raise _bad(path, f"decimal precision must be between 1 and {MAX_PRECISION}, not {precision}")
        if not 0 <= scale <= precision:
            raise _bad(path, f"decimal scale must be between 0 and the precision {precision}, not {scale}")
        return Decimal(precision, scale)
    if m := _CHAR.fullmatch(text):
        return Char(int(m[1]))
    if m := _VARCHAR.fullmatch(text):
        return Varchar(int(m[1]))
    if m := _TIME.fullmatch(text):
        precision = int(m[1])
        if precision > MAX_TIME_PRECISION:
            raise _bad(path, f"time precision must be between 0 and {MAX_TIME_PRECISION}, not {precision}")
        return Time(precision)
    if m := _DAY_TIME.fullmatch(text):
        return DayTimeInterval(*_interval_fields(m, _DAY_TIME_FIELDS, path))
    if m := _YEAR_MONTH.fullmatch(text):
        return YearMonthInterval(*_interval_fields(m, _YEAR_MONTH_FIELDS, path))
    if _OPAQUE.fullmatch(text):
        return Opaque(text, text)
    raise _bad(path, f"unknown type {text!r}")


def _interval_fields(m: re.Match[str], order: tuple[str, ...], path: str) -> tuple[str, str]:
    start, end = m[1], m[2] or m[1]
    if order.index(start) > order.index(end):
        raise _bad(path, f"interval fields out of order in {m[0]!r}")
    return start, end


def _parse_fields(value: dict[str, Any], path: str) -> StructType:
    _keys(value, path, {"type", "fields"})
    raw = value["fields"]
    if not isinstance(raw, list):
        raise _bad(path, f"'fields' must be a list, not {_describe(raw)}")
    fields: list[StructField] = []
    seen: set[str] = set()
    for item in raw:
        if not isinstance(item, dict):
            raise _bad(path, f"a struct field must be an object, not {_describe(item)}")
        name = item.get("name")
        if not isinstance(name, str):
            raise _bad(path, f"a struct field needs a string 'name', not {_describe(name)}")
        here = child_path(path, name)
        if name in seen:
            raise _bad(path, f"duplicate field name {name!r}")
        seen.add(name)
        if "type" not in item:
            raise _bad(here, "the field has no 'type'")
        metadata = item.get("metadata", {})
        if not isinstance(metadata, dict):
            raise _bad(here, f"'metadata' must be an object, not {_describe(metadata)}")
        fields.append(StructField(name, parse_type(item["type"], here), _flag(item, "nullable", here), metadata))
    return StructType(tuple(fields))


def _keys(value: dict[str, Any], path: str, required: set[str]) -> None:
    missing = sorted(required - value.keys())
    if missing:
        raise _bad(path, f"{value['type']} type lacks {', '.join(repr(k) for k in missing)}")


def _flag(value: dict[str, Any], key: str, path: str) -> bool:
    flag = value.get(key)
    if not isinstance(flag, bool):
        raise _bad(path, f"{key!r} must be true or false, not {_describe(flag)}")
    return flag


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
