"""Avro schema resolution checks: the avro package's checker, made to say precisely what broke and where.

The verdicts come from ``avro.compatibility.ReaderWriterCompatibilityChecker`` (avro 1.12.2): its promotion
table, array and map recursion, type mismatches, memoization of (reader, writer) pairs, field lookup by name
and alias, enum symbol and fixed size checks. :class:`_ReasonChecker` subclasses it to fix what it gets wrong
or leaves out:

Reasons
    The package returns its messages and locations as two unordered sets, so a location cannot be paired with
    its message. Here every reason is one ``(path, message)`` pair, and the list is sorted by path.

Paths
    ``$`` is the top-level schema; ``.zip`` a record field (the reader's field name); ``[]`` the items of an
    array; ``{}`` the values of a map; ``<T>`` the branch of a union that carries a ``T`` (a named type's full
    name, otherwise the type: ``<int>``, ``<array>``). So ``$.address<a.Address>.zip`` is field ``zip`` of the
    ``a.Address`` branch of the union in field ``address``. A named type used in several places is reported
    in each place; a problem inside a recursive type is reported once, where the recursion is first entered
    (a pair whose check is in progress counts as compatible, as in the package).

Unions
    The package drops the location when it descends into a writer union, and for a reader union it only says
    "lacking writer type" even when the reader has that branch and something inside it broke. Here, following
    the specification ("the first schema in the reader's union that matches the writer's schema is
    recursively resolved against it"), one reader branch that *matches* the writer (same primitive type or a
    promotion of it, arrays and maps whose items and values match, named types of the same kind whose names
    match, fixed also of the same size) is resolved and its reasons are reported under ``<T>``. A branch of
    the writer's own type is preferred to an earlier one reached by promotion, as Java's resolver does:
    otherwise ``["string", "bytes"]`` would read its own bytes as strings and a union of a ``uuid`` string and
    a ``decimal`` could not read itself. When no branch matches but one has the writer's kind and name, that
    branch's reasons are reported; otherwise ``union lacks branch T``. Picking a branch by match and then
    resolving it, rather than accepting any branch that happens to be compatible, is what readers do, so
    "compatible" here means a reader succeeds.

Names
    The specification matches named types by unqualified name ("both schemas are records with the same
    (unqualified) name"), and lets a reader's aliases rename the writer's type; an alias without a dot is
    relative to the namespace of the type that declares it. The package compares unqualified names too, but
    compares the writer's full name with the reader's aliases as written, so an alias ``Old`` in namespace
    ``a`` never matched a writer named ``a.Old``. Here aliases are qualified first, as the specification
    (and Java's ``Schema.getAliases``) does. Field aliases are plain names and are used as the package uses
    them.

Missing fields
    A reader field absent from the writer needs a field default. The package accepted such a field when its
    type is an enum with a default and then compared the enum with the whole writer record; an enum default
    only stands in for unknown symbols, not for a missing field, so here that is an error too.

Logical types
    The specification resolves on the underlying type and says implementations ignore unknown or invalid
    logical types, so adding or removing a logical type (``long`` to ``timestamp-millis``, ``bytes`` to
    ``decimal``) is compatible. But when both sides carry a valid logical type, the same bytes would be
    silently read with another meaning, so these are reported as incompatible:

    - two different logical types (``timestamp-millis`` vs ``timestamp-micros``, ``date`` vs ``time-millis``,
      ``decimal`` vs ``big-decimal``), also across a promotion (``int`` ``date`` read as ``long``
      ``timestamp-millis``);
    - two decimals with different scales (every value would be scaled by a power of ten);
    - a decimal whose precision narrows (values written may no longer fit).

    Valid means: accepted by the avro package (``date``, ``time-millis``, ``time-micros``,
    ``timestamp-millis``, ``timestamp-micros``, ``uuid`` on string, ``decimal``), or one of the
    specification's logical types the package does not know, on the type the specification requires
    (``local-timestamp-*``, ``timestamp-nanos``, ``big-decimal``, ``duration``, ``uuid`` on fixed 16).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from avro.compatibility import (
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityResult,
    SchemaCompatibilityType,
    SchemaIncompatibilityType,
    check_fixed_size,
    check_reader_enum_contains_writer_enum,
    merge,
)
from avro.schema import (
    ArraySchema,
    EnumSchema,
    Field,
    FixedSchema,
    LogicalSchema,
    MapSchema,
    NamedSchema,
    RecordSchema,
    Schema,
    UnionSchema,
)

from registry.formats.base import Incompatibility

__all__ = ["check_avro"]

_COMPATIBLE = SchemaCompatibilityType.compatible
_INCOMPATIBLE = SchemaCompatibilityType.incompatible

# Logical types of the specification that avro 1.12.2 does not build a LogicalSchema for, with the type
# (and, for fixed, the size) the specification requires of them.
_SPEC_ONLY_LOGICAL_TYPES: dict[str, tuple[str, int | None]] = {
    "timestamp-nanos": ("long", None),
    "local-timestamp-millis": ("long", None),
    "local-timestamp-micros": ("long", None),
    "local-timestamp-nanos": ("long", None),
    "big-decimal": ("bytes", None),
    "duration": ("fixed", 12),
    "uuid": ("fixed", 16),
}

# Marks a message string that holds one encoded (path, message) reason; see _ReasonChecker.
_REASON_MARK = "\x1e"


def _reason(path: str, message: str, kind: SchemaIncompatibilityType) -> SchemaCompatibilityResult:
    """An incompatible result holding one reason, its path relative to the schema pair being checked."""
    return SchemaCompatibilityResult(
        compatibility=_INCOMPATIBLE,
        incompatibilities=[kind],
        messages={_REASON_MARK + json.dumps([path, message])},
        locations={path or "/"},
    )


def _reasons(result: SchemaCompatibilityResult) -> Iterator[tuple[str, str]]:
    """The encoded (path, message) pairs a result carries."""
    for text in result.messages:
        if text.startswith(_REASON_MARK):
            path, message = json.loads(text[len(_REASON_MARK) :])
            yield str(path), str(message)


def _prefixed(result: SchemaCompatibilityResult, prefix: str) -> SchemaCompatibilityResult:
    """``result`` with every reason's path moved under ``prefix`` (memoized results stay relative)."""
    if result.compatibility is not _INCOMPATIBLE or not prefix:
        return result
    pairs = list(_reasons(result))
    return SchemaCompatibilityResult(
        compatibility=_INCOMPATIBLE,
        incompatibilities=list(result.incompatibilities),
        messages={_REASON_MARK + json.dumps([prefix + path, message]) for path, message in pairs},
        locations={prefix + path for path, _ in pairs} or {prefix},
    )


def _kind(schema: Schema) -> str:
    # Protocol "error" types are records for resolution; the package knows no "error" type.
    return "record" if schema.type == "error" else str(schema.type)


def _label(schema: Schema) -> str:
    """How a union branch is named in a path: a named type's full name, else its type."""
    return str(schema.fullname) if isinstance(schema, NamedSchema) else _kind(schema)


def _describe(schema: Schema) -> str:
    """A schema's type for messages: ``int``, ``array``, ``record a.B``."""
    return f"{_kind(schema)} {schema.fullname}" if isinstance(schema, NamedSchema) else _kind(schema)


def _qualified_aliases(schema: NamedSchema) -> set[str]:
    """A named type's aliases as full names; a dotless alias is relative to the type's namespace."""
    aliases = schema.props.get("aliases")
    if not isinstance(aliases, list):
        return set()
    namespace = str(schema.fullname).rpartition(".")[0]
    return {
        alias if "." in alias or not namespace else f"{namespace}.{alias}"
        for alias in aliases
        if isinstance(alias, str)
    }


def _names_match(reader: NamedSchema, writer: NamedSchema) -> bool:
    """The specification's rule: same unqualified name, or the writer's full name is one of the reader's aliases."""
    return bool(reader.name == writer.name) or writer.fullname in _qualified_aliases(reader)


def _same_kind_and_name(reader: Schema, writer: Schema) -> bool:
    """Whether ``reader`` has the writer's kind and, for named types, a matching name, whatever its size or contents."""
    if _kind(reader) != _kind(writer):
        return False
    if isinstance(reader, NamedSchema) and isinstance(writer, NamedSchema):
        return _names_match(reader, writer)
    return True


def _logical_type(schema: Schema) -> str | None:
    """The logical type in force on ``schema``; None when it has none or an unknown or invalid one."""
    if isinstance(schema, LogicalSchema):
        return str(schema.logical_type)
    name = schema.props.get("logicalType")
    required = _SPEC_ONLY_LOGICAL_TYPES.get(name) if isinstance(name, str) else None
    if required is None or schema.type != required[0]:
        return None
    if required[1] is not None and not (isinstance(schema, FixedSchema) and schema.size == required[1]):
        return None
    return str(name)


def _logical_reasons(reader: Schema, writer: Schema) -> SchemaCompatibilityResult:
    """Logical types that would make the reader silently misread the writer's values (see the module doc)."""
    read_as, written_as = _logical_type(reader), _logical_type(writer)
    if read_as is None or written_as is None:
        return SchemaCompatibilityResult(_COMPATIBLE)
    kind = SchemaIncompatibilityType.type_mismatch
    if read_as != written_as:
        return _reason("", f"logical type changed from {written_as} to {read_as}", kind)
    result = SchemaCompatibilityResult(_COMPATIBLE)
    if read_as == "decimal":
        r_scale, w_scale = reader.get_prop("scale"), writer.get_prop("scale")
        r_precision, w_precision = reader.get_prop("precision"), writer.get_prop("precision")
        if r_scale != w_scale:
            result = merge(result, _reason("", f"decimal scale changed from {w_scale} to {r_scale}", kind))
        if isinstance(r_precision, int) and isinstance(w_precision, int) and r_precision < w_precision:
            result = merge(result, _reason("", f"decimal precision narrowed from {w_precision} to {r_precision}", kind))
    return result


class _ReasonChecker(ReaderWriterCompatibilityChecker):
    """The avro package's checker, returning paired, path-located reasons and fixed where it strays from the spec.

    The package's ``merge`` builds a new result from the messages and locations sets only, so a reason must
    live in ``messages`` to survive its merges: each is stored there as one string holding the pair. Paths are
    relative to the pair being checked and get their prefix when handed to the parent, so a memoized result is
    right wherever the same pair recurs.
    """

    def get_compatibility(
        self,
        reader: Schema,
        writer: Schema,
        reference_token: str = ReaderWriterCompatibilityChecker.ROOT_REFERENCE_TOKEN,
        location: list[str] | None = None,
    ) -> SchemaCompatibilityResult:
        """Resolve one pair; the base class calls this for array items and map values."""
        suffix = {"items": "[]", "values": "{}"}.get(reference_token, "")
        return self._child(reader, writer, suffix)

    def _child(self, reader: Schema, writer: Schema, suffix: str) -> SchemaCompatibilityResult:
        # The base get_compatibility memoizes, and counts a pair whose check is in progress as compatible.
        return _prefixed(super().get_compatibility(reader, writer), suffix)

    def calculate_compatibility(self, reader: Schema, writer: Schema, location: list[str]) -> SchemaCompatibilityResult:
        """Whether ``reader`` can read what ``writer`` writes, with reasons when it cannot."""
        if isinstance(writer, UnionSchema):
            return self._writer_union(reader, writer)
        if isinstance(reader, UnionSchema):
            return self._reader_union(reader, writer)
        if isinstance(reader, NamedSchema) and isinstance(writer, NamedSchema) and _kind(reader) == _kind(writer):
            result = self._named(reader, writer)
        elif "error" in (reader.type, writer.type):
            result = self._type_changed(reader, writer)
        else:
            result = super().calculate_compatibility(reader, writer, location)
            if any(not text.startswith(_REASON_MARK) for text in result.messages):
                # In the cases left to the base class the only reason it states itself is a type mismatch;
                # restate it with its path, keeping the reasons of items or values it merged in.
                own = self._type_changed(reader, writer)
                result = SchemaCompatibilityResult(
                    _INCOMPATIBLE,
                    list(result.incompatibilities),
                    {text for text in result.messages if text.startswith(_REASON_MARK)} | own.messages,
                    result.locations | own.locations,
                )
        if result.compatibility is _COMPATIBLE or _kind(reader) == _kind(writer):
            result = merge(result, _logical_reasons(reader, writer))
        return result

    def _type_changed(self, reader: Schema, writer: Schema) -> SchemaCompatibilityResult:
        message = f"type changed from {_describe(writer)} to {_describe(reader)}"
        return _reason("", message, SchemaIncompatibilityType.type_mismatch)

    def _matches(self, reader: Schema, writer: Schema) -> bool:
        """The specification's shallow "match" used to pick a reader union branch."""
        if isinstance(reader, UnionSchema) or isinstance(writer, UnionSchema):
            return True
        if _kind(reader) != _kind(writer):
            if isinstance(reader, NamedSchema) or isinstance(writer, NamedSchema):
                return False
            # Unnamed types of different kinds: the base class decides these without recursing, by its promotions.
            return super().calculate_compatibility(reader, writer, []).compatibility is _COMPATIBLE
        if isinstance(reader, ArraySchema) and isinstance(writer, ArraySchema):
            return self._matches(reader.items, writer.items)
        if isinstance(reader, MapSchema) and isinstance(writer, MapSchema):
            return self._matches(reader.values, writer.values)
        if isinstance(reader, NamedSchema) and isinstance(writer, NamedSchema):
            same_size = not isinstance(reader, FixedSchema) or reader.size == getattr(writer, "size", None)
            return _names_match(reader, writer) and same_size
        return True

    def _writer_union(self, reader: Schema, writer: UnionSchema) -> SchemaCompatibilityResult:
        # Every branch the writer may write must be readable. When the reader is a union too, the reader-union
        # step names the branch, so it is not named twice.
        result = SchemaCompatibilityResult(_COMPATIBLE)
        for branch in writer.schemas:
            suffix = "" if isinstance(reader, UnionSchema) else f"<{_label(branch)}>"
            result = merge(result, self._child(reader, branch, suffix))
        return result

    def _reader_union(self, reader: UnionSchema, writer: Schema) -> SchemaCompatibilityResult:
        branches: list[Schema] = list(reader.schemas)
        exact = [b for b in branches if _same_kind_and_name(b, writer)]
        chosen = next((b for b in exact if self._matches(b, writer)), None)
        if chosen is None:
            chosen = next((b for b in branches if self._matches(b, writer)), None)
        if chosen is None and exact:
            # No branch matches, but one of the writer's kind and name says better why than "lacks branch".
            chosen = exact[0]
        if chosen is None:
            message = f"union lacks branch {_label(writer)}"
            return _reason("", message, SchemaIncompatibilityType.missing_union_branch)
        return self._child(chosen, writer, f"<{_label(chosen)}>")

    def _named(self, reader: NamedSchema, writer: NamedSchema) -> SchemaCompatibilityResult:
        result = SchemaCompatibilityResult(_COMPATIBLE)
        if not _names_match(reader, writer):
            message = f"name mismatch: reader {reader.fullname} vs writer {writer.fullname}"
            result = merge(result, _reason("", message, SchemaIncompatibilityType.name_mismatch))
        if isinstance(reader, RecordSchema) and isinstance(writer, RecordSchema):
            return merge(result, self._fields(reader, writer))
        if isinstance(reader, EnumSchema) and isinstance(writer, EnumSchema):
            if check_reader_enum_contains_writer_enum(reader, writer, []).compatibility is _INCOMPATIBLE:
                missing = ", ".join(s for s in writer.symbols if s not in reader.symbols)
                message = f"enum {reader.name} lacks symbols writer writes: {missing}"
                result = merge(result, _reason("", message, SchemaIncompatibilityType.missing_enum_symbols))
            return result
        if (
            isinstance(reader, FixedSchema)
            and isinstance(writer, FixedSchema)
            and check_fixed_size(reader, writer, []).compatibility is _INCOMPATIBLE
        ):
            message = f"fixed {reader.name} size {writer.size} in the writer != {reader.size} in the reader"
            result = merge(result, _reason("", message, SchemaIncompatibilityType.fixed_size_mismatch))
        return result

    def _fields(self, reader: RecordSchema, writer: RecordSchema) -> SchemaCompatibilityResult:
        result = SchemaCompatibilityResult(_COMPATIBLE)
        # fields_dict is rebuilt on every access: take it once, not once per reader field.
        by_name = writer.fields_dict
        for field in reader.fields:
            written = by_name.get(field.name) or _by_alias(by_name, field)
            if written is not None:
                result = merge(result, self._child(field.type, written.type, f".{field.name}"))
            elif not field.has_default:
                message = f"field {field.name} has no default in the reader and is missing in the writer"
                kind = SchemaIncompatibilityType.reader_field_missing_default_value
                result = merge(result, _reason(f".{field.name}", message, kind))
        return result


def _by_alias(by_name: dict[str, Field], field: Field) -> Field | None:
    aliases = field.props.get("aliases")
    if not isinstance(aliases, list):
        return None
    return next((by_name[a] for a in aliases if a in by_name), None)


def _sorted(pairs: Iterable[tuple[str, str]]) -> list[Incompatibility]:
    return [Incompatibility("$" + path, message) for path, message in sorted(set(pairs))]


def check_avro(reader: Schema, writer: Schema) -> list[Incompatibility]:
    """Reasons why ``reader`` cannot resolve data written with ``writer`` (empty: it can), sorted by path."""
    result = _ReasonChecker().get_compatibility(reader, writer)
    if result.compatibility is not _INCOMPATIBLE:
        return []
    return _sorted(_reasons(result))
