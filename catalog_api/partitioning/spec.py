"""Partition specs: what they are, their JSON and text forms, and parsing the text form.

A spec field names a source column by its field id (``parquet.field.id``, see
:mod:`catalog_api.schema.fieldids`), so a spec survives a rename; ``source`` is the column's name,
which :func:`with_current_names` brings up to date. The text form is what Spark's
``Transform.describe()`` prints (``days(ts), bucket(8, id)``), with Iceberg's singular spellings
(``day(ts)``) accepted too. Values are in the units chunk statistics use
(:func:`catalog_api.streams.chunks.column_stats`): see :mod:`catalog_api.partitioning.transforms`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from catalog_api.schema.fieldids import field_id
from registry.errors import BadRequest

Struct: TypeAlias = dict[str, Any]
#: A table's partition spec id; 0 is the unpartitioned spec.
SpecId: TypeAlias = int
#: A partition field's id (1000 and up, unique across a table's specs).
PartitionFieldId: TypeAlias = int
#: A column's field id (``parquet.field.id``).
ColumnId: TypeAlias = int

#: The unpartitioned spec's id.
UNPARTITIONED_SPEC_ID: SpecId = 0
#: The highest partition field id of a table that has none yet (Iceberg's: the first field is 1000).
NO_PARTITION_FIELDS: PartitionFieldId = 999
#: The most buckets ``bucket[N]`` may have.
MAX_BUCKETS = 1_000_000

IDENTITY, YEAR, MONTH, DAY, HOUR, BUCKET, TRUNCATE = "identity", "year", "month", "day", "hour", "bucket", "truncate"

_INTEGRAL = frozenset({"byte", "short", "integer", "long"})
_TIMESTAMPS = frozenset({"timestamp", "timestamp_ntz"})
_DATES = frozenset({"date"}) | _TIMESTAMPS
#: The source types each transform takes (``string`` stands for char/varchar too).
ALLOWED_TYPES: Mapping[str, frozenset[str]] = {
    IDENTITY: _INTEGRAL | {"boolean", "string"} | _DATES,
    YEAR: _DATES,
    MONTH: _DATES,
    DAY: _DATES,
    HOUR: _TIMESTAMPS,
    BUCKET: _INTEGRAL | {"string", "binary"} | _DATES,
    TRUNCATE: _INTEGRAL | {"string", "binary"},
}
# Iceberg's field name suffixes.
_SUFFIX = {YEAR: "year", MONTH: "month", DAY: "day", HOUR: "hour", BUCKET: "bucket", TRUNCATE: "trunc"}
# Spark's plural spelling in the text form.
_PLURAL = {YEAR: "years", MONTH: "months", DAY: "days", HOUR: "hours"}
_FUNCTIONS = {
    IDENTITY: IDENTITY, BUCKET: BUCKET, TRUNCATE: TRUNCATE,
    **{kind: kind for kind in _PLURAL}, **{plural: kind for kind, plural in _PLURAL.items()},
}
_TRANSFORM_JSON = re.compile(r"(identity|year|month|day|hour)|(bucket|truncate)\[(\d+)\]")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")
_CHAR_TYPE = re.compile(r"(?:var)?char\(\s*\d+\s*\)")


class PartitioningError(BadRequest):
    """A partitioning that cannot be: text that does not parse, an unknown or nested column, a transform
    the column's type does not take, a bad bucket count or width, a repeated field, bad values."""

    code = "InvalidPartitioning"


@dataclass(frozen=True)
class Transform:
    """A partition transform: its kind (Iceberg's name) and the bucket count or truncate width."""

    kind: str
    #: N of ``bucket[N]``, W of ``truncate[W]``; None for the others
    param: int | None = None

    def __str__(self) -> str:
        return self.kind if self.param is None else f"{self.kind}[{self.param}]"

    @staticmethod
    def parse(text: str) -> Transform:
        """The transform of Iceberg's name for it (``day``, ``bucket[16]``), as specs store it; raises
        :class:`PartitioningError` for anything else, or an out-of-range N or W."""
        match = _TRANSFORM_JSON.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise PartitioningError(f"unknown partition transform {text!r}")
        if match.group(1):
            return Transform(match.group(1))
        return make_transform(match.group(2), int(match.group(3)))


def make_transform(kind: str, param: int | None = None) -> Transform:
    """The transform ``kind`` with its parameter checked: 1 <= N <= 1,000,000 buckets, width W >= 1, and
    none for the others."""
    if kind == BUCKET:
        if param is None or not 1 <= param <= MAX_BUCKETS:
            raise PartitioningError(f"bucket count must be between 1 and {MAX_BUCKETS:,}, not {param}")
    elif kind == TRUNCATE:
        if param is None or param < 1:
            raise PartitioningError(f"truncate width must be at least 1, not {param}")
    elif kind in ALLOWED_TYPES:
        if param is not None:
            raise PartitioningError(f"the {kind} transform takes no number, got {param}")
    else:
        raise PartitioningError(f"unknown partition transform {kind!r}")
    return Transform(kind, param)


@dataclass(frozen=True)
class PartitionField:
    """One field of a partition spec: a transform of one top-level column."""

    field_id: PartitionFieldId
    source_id: ColumnId
    #: the source column's name (current once :func:`with_current_names` has been applied)
    source: str
    transform: Transform
    name: str
    #: the source column's Spark type name (``date``, ``timestamp``...), when known: the time transforms
    #: need it to tell days from microseconds; not part of the JSON form
    source_type: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The camelCase JSON form: ``{"fieldId", "sourceId", "source", "transform", "name"}``."""
        return {"fieldId": self.field_id, "sourceId": self.source_id, "source": self.source,
                "transform": str(self.transform), "name": self.name}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> PartitionField:
        """The field of its JSON form (``source`` may be absent); raises :class:`PartitioningError`."""
        try:
            return PartitionField(
                field_id=_int(data["fieldId"], "fieldId"),
                source_id=_int(data["sourceId"], "sourceId"),
                source=str(data.get("source") or ""),
                transform=Transform.parse(data["transform"]),
                name=str(data["name"]),
            )
        except (KeyError, TypeError) as e:
            raise PartitioningError(f"bad partition field {data!r}: {e}") from None


@dataclass(frozen=True)
class PartitionSpec:
    """A table's partition spec: its id and its fields, in order (none: unpartitioned)."""

    spec_id: SpecId
    fields: tuple[PartitionField, ...] = ()

    @property
    def unpartitioned(self) -> bool:
        """Whether the spec has no field."""
        return not self.fields

    def to_json(self) -> dict[str, Any]:
        """``{"specId", "fields": [field JSON]}``."""
        return {"specId": self.spec_id, "fields": [f.to_json() for f in self.fields]}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> PartitionSpec:
        """The spec of its JSON form; raises :class:`PartitioningError`."""
        try:
            fields = data.get("fields") or []
            return PartitionSpec(_int(data["specId"], "specId"), tuple(PartitionField.from_json(f) for f in fields))
        except (KeyError, TypeError, AttributeError) as e:
            raise PartitioningError(f"bad partition spec {data!r}: {e}") from None

    def text(self) -> str:
        """The text form, as Spark's ``Transform.describe()`` prints each field, comma-separated ("" when
        unpartitioned)."""
        return ", ".join(_describe(f) for f in self.fields)

    def highest_field_id(self, last: PartitionFieldId = NO_PARTITION_FIELDS) -> PartitionFieldId:
        """The highest partition field id of the table once this spec is added, whose last one was
        ``last``: what to store as the table's last partition field id."""
        return max([last, *(f.field_id for f in self.fields)])


#: The unpartitioned spec, spec 0, which every table has (never stored).
UNPARTITIONED = PartitionSpec(UNPARTITIONED_SPEC_ID)


def spec_zero_partition() -> dict[str, Any]:
    """The ``Chunk.partition`` of a chunk whose writer loaded the table unpartitioned: spec 0, no values.
    Writers name it rather than leave the partition out: the catalog keeps such a chunk as an unpartitioned
    one and, like a chunk of any earlier spec, still accepts it once the table is partitioned, so a writer
    that runs across a spec change (a streaming query, a long ingest) is not refused."""
    return {"specId": UNPARTITIONED_SPEC_ID, "values": []}


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer")
    return value


def quote(name: str) -> str:
    """A column name as Spark's ``quoteIfNeeded`` writes it: back-quoted (doubling back-quotes inside)
    unless it is plain letters, digits and underscores, not all digits."""
    if _PLAIN_NAME.fullmatch(name) and not name.isdigit():
        return name
    return "`" + name.replace("`", "``") + "`"


def _describe(f: PartitionField) -> str:
    kind, column = f.transform.kind, quote(f.source)
    if kind == IDENTITY:
        return column
    if kind in _PLURAL:
        return f"{_PLURAL[kind]}({column})"
    return f"{kind}({f.transform.param}, {column})"


def type_name(dtype: Any) -> str:
    """The Spark type name of a StructType-JSON type, as the allowed-type rules see it: char(n) and
    varchar(n) are ``string``; a nested type is its kind (``struct``, ``array``, ``map``)."""
    if isinstance(dtype, dict):
        return str(dtype.get("type"))
    text = str(dtype)
    return "string" if _CHAR_TYPE.fullmatch(text) else text


def result_type(field: PartitionField, schema: Struct) -> str:
    """The Spark type name of ``field``'s values in a table of schema ``schema`` (StructType JSON):
    identity and truncate keep the source's type (truncate of binary gives base64 ``string``), day gives
    ``date`` (days since the epoch, Iceberg's), year/month/hour/bucket give ``integer``. Raises
    :class:`PartitioningError` when the source column is gone."""
    kind = field.transform.kind
    if kind in (YEAR, MONTH, HOUR, BUCKET):
        return "integer"
    if kind == DAY:
        return "date"
    source = columns_by_id(schema).get(field.source_id)
    if source is None:
        raise PartitioningError(f"partition field {field.name} reads column id {field.source_id}, not in the table")
    name = type_name(source.get("type"))
    return "string" if kind == TRUNCATE and name == "binary" else name


def columns_by_id(schema: Struct) -> dict[ColumnId, Struct]:
    """The top-level columns (StructField JSON) of ``schema`` that have a field id, by id."""
    out: dict[ColumnId, Struct] = {}
    for column in schema.get("fields") or []:
        fid = field_id(column) if isinstance(column, dict) else None
        if fid is not None:
            out[fid] = column
    return out


def source_names(schema: Struct) -> dict[ColumnId, str]:
    """The current name of each top-level column of ``schema``, by field id."""
    return {fid: str(column["name"]) for fid, column in columns_by_id(schema).items()}


def with_current_names(spec: PartitionSpec, schema: Struct) -> PartitionSpec:
    """``spec`` whose fields' ``source`` (and source type) are those of their column in ``schema``, the
    table's current schema; a field whose column was dropped keeps the name it had."""
    columns = columns_by_id(schema)

    def current(f: PartitionField) -> PartitionField:
        column = columns.get(f.source_id)
        if column is None:
            return f
        return replace(f, source=str(column["name"]), source_type=type_name(column.get("type")))

    return replace(spec, fields=tuple(current(f) for f in spec.fields))


def table_spec(described: Mapping[str, Any]) -> PartitionSpec:
    """The current partition spec of a table as the catalog describes it (``getTable``'s answer), its sources
    named and typed as in the table's schema; spec 0 when the answer has none (a server older than
    partitioning)."""
    raw = described.get("partitionSpec")
    if not raw:
        return UNPARTITIONED
    return with_current_names(PartitionSpec.from_json(raw), described["schema"])


# -- the text form --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # "name" (plain word), "quoted", "int", or the punctuation itself
    text: str
    at: int
    end: int


_PUNCTUATION = frozenset("(),.")
_WORD = re.compile(r"[A-Za-z0-9_]+")


def _tokens(text: str) -> Iterator[_Token]:
    i, end = 0, len(text)
    while i < end:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _PUNCTUATION:
            yield _Token(ch, ch, i, i + 1)
            i += 1
        elif ch == "`":
            start, i, parts = i, i + 1, []
            while True:
                close = text.find("`", i)
                if close < 0:
                    raise PartitioningError(f"partitioning {text!r}: unclosed back-quote at position {start}")
                parts.append(text[i:close])
                if text.startswith("``", close):  # a doubled back-quote stands for one
                    parts.append("`")
                    i = close + 2
                    continue
                i = close + 1
                break
            yield _Token("quoted", "".join(parts), start, i)
        else:
            match = _WORD.match(text, i)
            if match is None:
                raise PartitioningError(f"partitioning {text!r}: unexpected {ch!r} at position {i}")
            word = match.group()
            i = match.end()
            # Spark's describe() of a long literal may carry an L suffix
            number = re.fullmatch(r"(\d+)[Ll]?", word)
            yield (_Token("int", number.group(1), match.start(), i) if number
                   else _Token("name", word, match.start(), i))


@dataclass(frozen=True)
class _Item:
    """One comma-separated item of the text: a transform applied to a column reference."""

    kind: str
    param: int | None
    column: tuple[str, ...]
    text: str


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = list(_tokens(text))
        self.pos = 0

    def fail(self, expected: str) -> PartitioningError:
        if self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            found = f"{token.text!r} at position {token.at}"
        else:
            found = "the end"
        return PartitioningError(f"partitioning {self.text!r}: expected {expected}, found {found}")

    def peek(self, kind: str, offset: int = 0) -> bool:
        at = self.pos + offset
        return at < len(self.tokens) and self.tokens[at].kind == kind

    def take(self, kind: str, expected: str) -> _Token:
        if not self.peek(kind):
            raise self.fail(expected)
        self.pos += 1
        return self.tokens[self.pos - 1]

    def items(self) -> list[_Item]:
        if not self.tokens:
            return []
        found = [self.item()]
        while self.peek(","):
            self.pos += 1
            found.append(self.item())
        if self.pos < len(self.tokens):
            raise self.fail("',' or the end")
        return found

    def item(self) -> _Item:
        start = self.tokens[self.pos].at if self.pos < len(self.tokens) else len(self.text)
        if self.peek("name") and self.peek("(", 1):
            word = self.tokens[self.pos].text
            kind = _FUNCTIONS.get(word.lower())
            if kind is None:
                raise PartitioningError(
                    f"partitioning {self.text!r}: unknown transform {word!r} (known: {', '.join(sorted(_FUNCTIONS))})")
            self.pos += 2
            args = [self.argument()]
            while self.peek(","):
                self.pos += 1
                args.append(self.argument())
            end = self.take(")", "')'")
            return self.apply(kind, args, self.text[start : end.end])
        column = self.reference()
        return _Item(IDENTITY, None, column, self.text[start : self.tokens[self.pos - 1].end])

    def argument(self) -> int | tuple[str, ...]:
        if self.peek("int"):
            return int(self.take("int", "a number").text)
        return self.reference()

    def reference(self) -> tuple[str, ...]:
        parts = [self.part()]
        while self.peek("."):
            self.pos += 1
            parts.append(self.part())
        return tuple(parts)

    def part(self) -> str:
        if self.peek("name") or self.peek("quoted"):
            self.pos += 1
            return self.tokens[self.pos - 1].text
        if self.peek("int"):  # Spark leaves a name such as 8L unquoted: here it can only be a name
            token = self.tokens[self.pos]
            self.pos += 1
            return self.text[token.at : token.end]
        raise self.fail("a column name")

    def apply(self, kind: str, args: list[int | tuple[str, ...]], text: str) -> _Item:
        numbers = [a for a in args if isinstance(a, int)]
        columns = [a for a in args if isinstance(a, tuple)]
        wants_number = kind in (BUCKET, TRUNCATE)
        if len(columns) != 1 or len(numbers) != (1 if wants_number else 0):
            shape = f"{kind}(N, column)" if kind == BUCKET else "truncate(W, column)" if kind == TRUNCATE \
                else f"{kind}(column)"
            raise PartitioningError(f"partitioning {self.text!r}: {text} must be written {shape}")
        return _Item(kind, numbers[0] if numbers else None, columns[0], text)


def _column(item: _Item, schema: Struct, text: str) -> Struct:
    top = [c for c in schema.get("fields") or [] if isinstance(c, dict)]
    first = item.column[0]
    exact = [c for c in top if c.get("name") == first]
    # Spark resolves names without regard to case unless spark.sql.caseSensitive is set
    found = exact or [c for c in top if str(c.get("name", "")).lower() == first.lower()]
    shown = ".".join(quote(p) for p in item.column)
    if len(found) != 1:
        known = ", ".join(quote(str(c.get("name"))) for c in top)
        what = "no column" if not found else "more than one column matching"
        raise PartitioningError(f"partitioning {text!r}: {what} {shown} in the table (columns: {known})")
    if len(item.column) > 1:
        raise PartitioningError(
            f"partitioning {text!r}: {shown} is a nested column; only top-level columns may be partition sources")
    return found[0]


def _field_name(kind: str, column: str) -> str:
    return column if kind == IDENTITY else f"{column}_{_SUFFIX[kind]}"


def parse_partitioning(text: str, schema: Struct, spec_id: SpecId, last_field_id: PartitionFieldId,
                       previous_specs: Iterable[PartitionSpec] = ()) -> PartitionSpec:
    """The spec that the text form ``text`` describes in a table of schema ``schema`` (StructType JSON
    whose columns carry field ids).

    A field of the same (source column, transform) as a field of one of ``previous_specs`` keeps that
    field's id; the others are numbered from ``last_field_id + 1``. When the fields come out identical to
    those of a previous spec, that spec is returned (its id re-used); empty text gives the unpartitioned
    spec (id 0); otherwise the spec gets ``spec_id``. Raises :class:`PartitioningError` naming what is
    wrong: text that does not parse, an unknown or nested column, a column without a field id, a type
    the transform does not take, a bad bucket count or truncate width, a field given twice.
    """
    if not isinstance(text, str):
        raise PartitioningError(f"partitioning must be text, not {type(text).__name__}")
    items = _Parser(text).items()
    if not items:
        return UNPARTITIONED
    previous = sorted(previous_specs, key=lambda s: s.spec_id, reverse=True)  # the latest id wins
    known: dict[tuple[ColumnId, Transform], PartitionFieldId] = {}
    for spec in previous:
        for f in spec.fields:
            known.setdefault((f.source_id, f.transform), f.field_id)
    fields: list[PartitionField] = []
    seen: dict[tuple[ColumnId, Transform], str] = {}
    names: dict[str, str] = {}
    next_id = last_field_id
    for item in items:
        column = _column(item, schema, text)
        name = str(column["name"])
        source_id = field_id(column)
        if source_id is None:
            raise PartitioningError(f"partitioning {text!r}: column {quote(name)} has no field id")
        try:
            transform = make_transform(item.kind, item.param)
        except PartitioningError as e:
            raise PartitioningError(f"partitioning {text!r}: {item.text}: {e.message}") from None
        dtype = type_name(column.get("type"))
        if dtype not in ALLOWED_TYPES[item.kind]:
            allowed = ", ".join(sorted(ALLOWED_TYPES[item.kind]))
            raise PartitioningError(f"partitioning {text!r}: column {quote(name)} of type {dtype} cannot be "
                                    f"partitioned by {item.kind} (it takes {allowed})")
        key = (source_id, transform)
        if key in seen:
            raise PartitioningError(f"partitioning {text!r}: {item.text} repeats {seen[key]}")
        seen[key] = item.text
        field_name = _field_name(item.kind, name)
        if field_name in names:
            raise PartitioningError(
                f"partitioning {text!r}: {item.text} and {names[field_name]} would both be named {quote(field_name)}")
        names[field_name] = item.text
        if key in known:
            fid = known[key]
        else:
            next_id += 1
            fid = next_id
        fields.append(PartitionField(fid, source_id, name, transform, field_name, dtype))
    for spec in previous:
        if _shape(spec.fields) == _shape(fields):
            return replace(spec, fields=tuple(fields))
    return PartitionSpec(spec_id, tuple(fields))


def _shape(fields: Sequence[PartitionField]) -> list[tuple[PartitionFieldId, ColumnId, Transform, str]]:
    # what makes two specs the same one: the source's current name does not
    return [(f.field_id, f.source_id, f.transform, f.name) for f in fields]


def check_values(spec: PartitionSpec, values: Any, schema: Struct) -> list[Any]:
    """``values`` (a chunk's partition values under ``spec``, JSON) checked against ``schema``, the table's
    current schema: a list of one value per spec field, each null or of the field's result type
    (:func:`result_type`) in stats units (dates as days, timestamps as microseconds, truncated binary as
    base64 text), and one that some row could have: a bucket in [0, N), an integer truncation a multiple of
    W, a string truncation of at most W code points. Raises :class:`PartitioningError` naming the field (the
    types of every field are checked before any range)."""
    if not isinstance(values, list) or len(values) != len(spec.fields):
        raise PartitioningError(f"partition values {values!r} must be a list of {len(spec.fields)} value(s), "
                                f"one per field of spec {spec.spec_id}")
    for f, value in zip(spec.fields, values, strict=True):
        if value is not None and not _of_type(value, result_type(f, schema)):
            raise PartitioningError(f"partition value {value!r} of field {f.name} (spec {spec.spec_id}) is not "
                                    f"a {result_type(f, schema)} value")
    columns = columns_by_id(schema)
    for f, value in zip(spec.fields, values, strict=True):
        wrong = _out_of_range(f, value, columns)
        if wrong:
            raise PartitioningError(
                f"partition value {value!r} of field {f.name} (spec {spec.spec_id}) cannot be: {wrong}"
            )
    return values


def _out_of_range(f: PartitionField, value: Any, columns: Mapping[ColumnId, Struct]) -> str:
    """Why no row could give ``f`` the value ``value`` (already of the field's result type), or ""."""
    kind, param = f.transform.kind, f.transform.param
    if value is None or param is None:
        return ""
    if kind == BUCKET and not 0 <= value < param:
        return f"a bucket of {f.transform} is between 0 and {param - 1}"
    if kind == TRUNCATE and isinstance(value, int) and value % param:
        return f"{f.transform} of an integer is a multiple of {param}"
    if kind == TRUNCATE and isinstance(value, str) and len(value) > param \
            and type_name(columns.get(f.source_id, {}).get("type")) == "string":
        return f"{f.transform} of a string has at most {param} characters"
    return ""


_LIMITS = {"byte": 7, "short": 15, "integer": 31, "date": 31, "long": 63, "timestamp": 63, "timestamp_ntz": 63}


def _of_type(value: Any, dtype: str) -> bool:
    if dtype == "boolean":
        return isinstance(value, bool)
    if dtype in _LIMITS:
        bits = _LIMITS[dtype]
        return isinstance(value, int) and not isinstance(value, bool) and -(2**bits) <= value < 2**bits
    if dtype == "string":
        return isinstance(value, str)
    if dtype == "binary":  # identity of binary is refused; kept for completeness: base64 text
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, TypeError, ValueError):
            return False
        return True
    return False
