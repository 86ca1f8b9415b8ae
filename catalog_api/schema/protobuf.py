"""Spark StructType <-> proto3 message (mapping table in docs/schema-mapping.md).

Spark -> ``.proto`` text; FileDescriptorSet (what the registry stores) -> Spark.
A FileDescriptorSet keeps no comments, so what protobuf types alone cannot say travels
in custom field and message options declared in the generated file itself
(``spark_type``, ``spark_key_type``, ``spark_not_null``, ``spark_comment``,
``spark_metadata``, ``spark_wrapper``). Schemas written by hand need none of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from catalog_api.schema.errors import UnsupportedType
from catalog_api.schema.spark import (
    ArrayType,
    Char,
    DataType,
    DayTimeInterval,
    Decimal,
    MapType,
    Opaque,
    Simple,
    StructField,
    StructType,
    Time,
    Varchar,
    YearMonthInterval,
    child_path,
    element_path,
    key_path,
    parse_atomic,
    value_path,
)
from registry.errors import BadRequest, InvalidSchema
from registry.formats.protobuf import well_known_file

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Field numbers of the custom options, in the range protobuf leaves to organisations (50000-99999).
FIELD_OPTIONS = {
    "spark_type": ("string", 50731),
    "spark_key_type": ("string", 50732),
    "spark_not_null": ("bool", 50733),
    "spark_comment": ("string", 50734),
    "spark_metadata": ("string", 50735),
}
MESSAGE_OPTIONS = {"spark_wrapper": ("bool", 50736)}
RESERVED_NAMES = frozenset(FIELD_OPTIONS) | frozenset(MESSAGE_OPTIONS)

# Spark atomic type -> (proto scalar type, whether the Spark type must be named in spark_type).
_SIMPLE: dict[str, tuple[str, bool]] = {
    "boolean": ("bool", False),
    "byte": ("int32", True),
    "short": ("int32", True),
    "integer": ("int32", False),
    "long": ("int64", False),
    "float": ("float", False),
    "double": ("double", False),
    "string": ("string", False),
    "binary": ("bytes", False),
    "date": ("int32", True),
    "timestamp": ("int64", True),
    "timestamp_ntz": ("int64", True),
}
_MAP_KEYS = frozenset(
    {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",
     "string"}
)
_VALUE = "google.protobuf.Value"
_NULL_VALUE = "google.protobuf.NullValue"
# Reserved for the protobuf implementation; field numbering skips it.
_RESERVED_NUMBERS = range(19000, 20000)


# --- Spark -> .proto -----------------------------------------------------------------------


def to_schema(struct: StructType, name: str, namespace: str | None) -> tuple[str, bytes]:
    """A proto3 file with package ``namespace`` and message ``name``; returns (full message name, .proto text)."""
    if not _IDENT.fullmatch(name):
        raise BadRequest(f"{name!r} is not a valid protobuf message name (letters, digits and _, not first a digit)")
    if name in RESERVED_NAMES:
        raise BadRequest(f"{name!r} is the name of an option in generated protobuf schemas; choose another name")
    if namespace and not all(_IDENT.fullmatch(part) for part in namespace.split(".")):
        raise BadRequest(f"{namespace!r} is not a valid protobuf package (dot-separated identifiers)")
    full = f"{namespace}.{name}" if namespace else name
    writer = _Writer(full)
    body = writer.message(name, struct, "", top=True)
    return full, writer.file(namespace, body).encode()


@dataclass
class _Writer:
    """Builds one .proto file: the top message with every generated message nested in it."""

    top: str
    nested: list[list[str]] = field(default_factory=list)
    nested_names: set[str] = field(default_factory=set)
    top_fields: set[str] = field(default_factory=set)
    uses_options: bool = False
    uses_struct: bool = False

    def file(self, namespace: str | None, top_body: list[str]) -> str:
        """The whole file around the top message's lines, with the imports and options it uses."""
        lines = ['syntax = "proto3";', ""]
        if namespace:
            lines += [f"package {namespace};", ""]
        if self.uses_options:
            lines.append('import "google/protobuf/descriptor.proto";')
        if self.uses_struct:
            lines.append('import "google/protobuf/struct.proto";')
        if self.uses_options or self.uses_struct:
            lines.append("")
        if self.uses_options:
            lines.append("// Spark facts protobuf types cannot express, written by Streamcat's schema conversion.")
            lines.append("extend google.protobuf.FieldOptions {")
            lines += [f"  {kind} {opt} = {number};" for opt, (kind, number) in FIELD_OPTIONS.items()]
            lines += ["}", "extend google.protobuf.MessageOptions {"]
            lines += [f"  {kind} {opt} = {number};" for opt, (kind, number) in MESSAGE_OPTIONS.items()]
            lines += ["}", ""]
        # Generated messages are nested in the top one, so the package holds only the table's message.
        inner = [f"  {line}" if line else "" for message in self.nested for line in [*message, ""]]
        lines += top_body[:1] + inner + top_body[1:]
        return "\n".join(lines) + "\n"

    def message(self, name: str, struct: StructType, path: str, top: bool = False) -> list[str]:
        """The lines of a message with one field per column of ``struct``."""
        json_names: dict[str, str] = {}
        for f in struct.fields:
            here = child_path(path, f.name)
            if not _IDENT.fullmatch(f.name):
                raise UnsupportedType(here, "protobuf field names must be letters, digits and _, not first a digit")
            # protoc refuses two fields whose default JSON names (lowerCamelCase) are equal.
            json_name = _json_name(f.name)
            other = json_names.setdefault(json_name, f.name)
            if other != f.name:
                raise UnsupportedType(
                    here, f"protobuf needs distinct JSON names, and {f.name!r} and {other!r} are both {json_name!r}"
                )
        # protoc declares a map's entry type in the message, named after the field: it shares their namespace.
        symbols = {f.name: f"field {f.name!r}" for f in struct.fields}
        for f in struct.fields:
            if isinstance(f.type, MapType):
                entry = _map_entry_name(f.name)
                mine = f"the entry type of map {f.name!r}"
                clash = symbols.setdefault(entry, mine)
                if not _IDENT.fullmatch(entry) or clash != mine:
                    problem = "is not a valid name" if clash == mine else f"is already {clash}"
                    raise UnsupportedType(child_path(path, f.name), f"protobuf names the entry type of a map after its "
                                                                    f"field, and {entry!r} {problem}")
        if top:
            self.top_fields = set(symbols)
        lines = [f"message {name} {{"]
        for number, f in zip(_field_numbers(), struct.fields, strict=False):
            here = child_path(path, f.name)
            options = {"spark_comment": f.comment, "spark_metadata": _json_text(f.other_metadata)}
            declaration = self.field(f.name, f.type, f.nullable, here, number, options)
            if f.comment is not None:
                lines += [f"  // {line}" for line in _printable(f.comment).splitlines() or [""]]
            lines.append(f"  {declaration}")
        lines.append("}")
        return lines

    def field(self, name: str, dtype: DataType, nullable: bool, path: str, number: int,
              options: dict[str, str | None]) -> str:
        """One field declaration carrying a column (or a collection element in a wrapper)."""
        opts: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        label = ""
        match dtype:
            case ArrayType(element, contains_null):
                label = "repeated "
                kind = self.element(element, contains_null, element_path(path), opts)
                opts["spark_not_null"] = None if nullable else True
            case MapType(key, value, value_contains_null):
                key_kind, key_named = _scalar(key, key_path(path))
                if key_kind not in _MAP_KEYS:
                    raise UnsupportedType(key_path(path), f"protobuf map keys must be integral, bool or string, not "
                                                          f"{key.json()}")
                if key_named:
                    opts["spark_key_type"] = key.json()
                value_kind = self.element(value, value_contains_null, value_path(path), opts)
                kind = f"map<{key_kind}, {value_kind}>"
                opts["spark_not_null"] = None if nullable else True
            case StructType():
                kind = self.nested_message(path, lambda n: self.message(n, dtype, path))
                opts["spark_not_null"] = None if nullable else True
            case Simple("variant"):
                self.uses_struct = True
                kind = _VALUE
                opts["spark_not_null"] = None if nullable else True
            case Simple("void"):
                if not nullable:
                    raise UnsupportedType(path, "a void value is always null, so it cannot be non-nullable")
                self.uses_struct = True
                kind = _NULL_VALUE
            case _:
                kind, named = _scalar(dtype, path)
                if named:
                    opts["spark_type"] = dtype.json()
                label = "optional " if nullable else ""
        return f"{label}{kind} {name} = {number}{self.options(opts)};"

    def element(self, dtype: DataType, contains_null: bool, path: str, opts: dict[str, Any]) -> str:
        """The type of a repeated field's elements or a map's values; a wrapper message where protobuf needs one."""
        if contains_null or isinstance(dtype, (ArrayType, MapType)) or dtype == Simple("void"):
            # A repeated field or map cannot hold null, nor another repeated field or map:
            # such elements go into a message marked as a wrapper around one field, "value".
            def wrapper(name: str) -> list[str]:
                lines = [f"message {name} {{", f"  {self.options_line({'spark_wrapper': True})}"]
                lines.append(f"  {self.field('value', dtype, contains_null, path, 1, {})}")
                return [*lines, "}"]

            return self.nested_message(path, wrapper, suffix="Wrapper")
        if isinstance(dtype, StructType):
            return self.nested_message(path, lambda n: self.message(n, dtype, path))
        if dtype == Simple("variant"):
            self.uses_struct = True
            return _VALUE
        kind, named = _scalar(dtype, path)
        if named:  # on the repeated or map field, where it describes the elements or values
            opts["spark_type"] = dtype.json()
        return kind

    def nested_message(self, path: str, build: Callable[[str], list[str]], suffix: str = "") -> str:
        """Declare a message for ``path`` (built by ``build(name)``) and return its absolute type name."""
        base = "_".join(part[:1].upper() + part[1:] for part in _plain_parts(path)) + suffix
        name, n = base, 1
        while name in self.nested_names or name in self.top_fields:
            n += 1
            name = f"{base}_{n}"
        self.nested_names.add(name)
        slot = len(self.nested)
        self.nested.append([])
        self.nested[slot] = build(name)
        return f".{self.top}.{name}"

    def options(self, opts: dict[str, Any]) -> str:
        """A field's option list, `` [(spark_type) = "byte", ...]``, or nothing."""
        present = {k: v for k, v in opts.items() if v is not None}
        if not present:
            return ""
        self.uses_options = True
        return " [" + ", ".join(f"({self.option_name(k)}) = {_literal(v)}" for k, v in present.items()) + "]"

    def options_line(self, opts: dict[str, Any]) -> str:
        """A message option statement."""
        self.uses_options = True
        return " ".join(f"option ({self.option_name(k)}) = {_literal(v)};" for k, v in opts.items())

    def option_name(self, option: str) -> str:
        """The absolute name of one of our options: a column of the same name would hide the short one."""
        package = self.top.rpartition(".")[0]
        return f".{package}.{option}" if package else f".{option}"


def _scalar(dtype: DataType, path: str) -> tuple[str, bool]:
    """The proto scalar type of a Spark atomic type, and whether spark_type must name the Spark type."""
    match dtype:
        case Simple(name) if name in _SIMPLE:
            return _SIMPLE[name]
        case Decimal() | Char() | Varchar():
            return "string", True
        case Time() | DayTimeInterval():
            return "int64", True
        case YearMonthInterval():
            return "int32", True
        case Opaque(_, description):
            raise UnsupportedType(path, f"protobuf has no type for {description}")
    raise UnsupportedType(path, f"protobuf has no scalar type for {dtype.json()}")


def _field_numbers() -> Iterator[int]:
    number = 0
    while True:
        number += 1
        if number not in _RESERVED_NUMBERS:
            yield number


def _json_name(name: str) -> str:
    # protoc's ToJsonName: drop underscores, upper-casing the letter after each.
    out: list[str] = []
    upper = False
    for c in name:
        if c == "_":
            upper = True
        else:
            out.append(c.upper() if upper else c)
            upper = False
    return "".join(out)


def _map_entry_name(name: str) -> str:
    # protoc's MapEntryName: CamelCase of the field name (ASCII only) plus "Entry".
    out: list[str] = []
    upper = True
    for c in name:
        if c == "_":
            upper = True
        else:
            out.append(c.upper() if upper and "a" <= c <= "z" else c)
            upper = False
    return "".join(out) + "Entry"


def _plain_parts(path: str) -> list[str]:
    # Column names are identifiers by now, so the path needs no unquoting.
    return [part for part in path.split(".") if _IDENT.fullmatch(part)]


def _json_text(metadata: dict[str, Any]) -> str | None:
    return json.dumps(metadata, sort_keys=True, ensure_ascii=False) if metadata else None


def _printable(text: str) -> str:
    return "".join(c if c == "\n" or (c.isprintable() and c != "\r") else " " for c in text)


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    # Every byte outside printable ASCII is an octal escape; protoc reads them back as UTF-8 bytes.
    out = []
    for b in str(value).encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


# --- FileDescriptorSet -> Spark ------------------------------------------------------------


def to_struct(schema: bytes, type_name: str) -> StructType:
    """The Spark schema of message ``type_name`` in a serialized FileDescriptorSet."""
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(schema)
    except (DecodeError, RuntimeWarning) as e:
        raise InvalidSchema(f"Protobuf schema is not a FileDescriptorSet: {e}") from None
    pool = _pool(fds)
    try:
        message = pool.FindMessageTypeByName(type_name)
    except KeyError:
        raise BadRequest(f"message {type_name!r} is not in the Protobuf schema") from None
    return _Reader().struct(message, "", frozenset())


def _pool(fds: descriptor_pb2.FileDescriptorSet) -> descriptor_pool.DescriptorPool:
    """A descriptor pool holding every file of the set, dependencies first."""
    pool = descriptor_pool.DescriptorPool()
    files = {f.name: f for f in fds.file}
    added: set[str] = set()

    def add(name: str, chain: tuple[str, ...]) -> None:
        if name in added:
            return
        if name in chain:
            raise InvalidSchema(f"Protobuf files import each other in a cycle: {' -> '.join((*chain, name))}")
        proto = files[name] if name in files else _well_known_file(name)
        for dependency in proto.dependency:
            add(dependency, (*chain, name))
        try:
            pool.Add(proto)
        except (TypeError, KeyError, ValueError) as e:
            raise InvalidSchema(f"invalid Protobuf file {name}: {e}") from None
        added.add(name)

    for name in files:
        add(name, ())
    return pool


def _well_known_file(name: str) -> descriptor_pb2.FileDescriptorProto:
    # Descriptor sets sent without --include_imports may still use the well-known types.
    proto = well_known_file(name)
    if proto is None:
        raise InvalidSchema(f"the Protobuf schema imports {name}, which it does not include")
    return proto


_WELL_KNOWN: dict[str, DataType] = {
    "google.protobuf.Timestamp": Simple("timestamp"),
    "google.protobuf.Duration": DayTimeInterval("day", "second"),
    "google.protobuf.DoubleValue": Simple("double"),
    "google.protobuf.FloatValue": Simple("float"),
    "google.protobuf.Int64Value": Simple("long"),
    "google.protobuf.UInt64Value": Decimal(20, 0),
    "google.protobuf.Int32Value": Simple("integer"),
    "google.protobuf.UInt32Value": Simple("long"),
    "google.protobuf.BoolValue": Simple("boolean"),
    "google.protobuf.StringValue": Simple("string"),
    "google.protobuf.BytesValue": Simple("binary"),
    "google.protobuf.Value": Simple("variant"),
    "google.protobuf.Struct": Simple("variant"),
    "google.protobuf.ListValue": Simple("variant"),
}
_T = FieldDescriptor
_PLAIN: dict[int, tuple[str, DataType]] = {
    _T.TYPE_BOOL: ("bool", Simple("boolean")),
    _T.TYPE_INT32: ("int32", Simple("integer")),
    _T.TYPE_SINT32: ("sint32", Simple("integer")),
    _T.TYPE_SFIXED32: ("sfixed32", Simple("integer")),
    _T.TYPE_INT64: ("int64", Simple("long")),
    _T.TYPE_SINT64: ("sint64", Simple("long")),
    _T.TYPE_SFIXED64: ("sfixed64", Simple("long")),
    # Unsigned values need the next wider Spark type to keep every value.
    _T.TYPE_UINT32: ("uint32", Simple("long")),
    _T.TYPE_FIXED32: ("fixed32", Simple("long")),
    _T.TYPE_UINT64: ("uint64", Decimal(20, 0)),
    _T.TYPE_FIXED64: ("fixed64", Decimal(20, 0)),
    _T.TYPE_FLOAT: ("float", Simple("float")),
    _T.TYPE_DOUBLE: ("double", Simple("double")),
    _T.TYPE_STRING: ("string", Simple("string")),
    _T.TYPE_BYTES: ("bytes", Simple("binary")),
}


class _Reader:
    """Reads messages of one descriptor pool, resolving the Spark options by name per file."""

    def __init__(self) -> None:
        self._option_cache: dict[tuple[str, str], dict[int, str]] = {}

    def struct(self, message: Descriptor, path: str, seen: frozenset[str]) -> StructType:
        """The struct of a message's fields, in declaration order."""
        if message.full_name in seen:
            raise UnsupportedType(path, f"message {message.full_name} contains itself; Spark types cannot be recursive")
        seen = seen | {message.full_name}
        fields = []
        for f in message.fields:
            here = child_path(path, f.name)
            opts = self.options(f.GetOptions(), message.file, "google.protobuf.FieldOptions")
            dtype, nullable = self.field(f, opts, here, seen)
            metadata: dict[str, Any] = {}
            if isinstance(opts.get("spark_metadata"), str):
                try:
                    extra = json.loads(opts["spark_metadata"])
                except json.JSONDecodeError:
                    extra = None
                if isinstance(extra, dict):
                    metadata.update(extra)
            if isinstance(opts.get("spark_comment"), str):
                metadata["comment"] = opts["spark_comment"]
            fields.append(StructField(f.name, dtype, nullable, metadata))
        return StructType(tuple(fields))

    def field(self, f: FieldDescriptor, opts: dict[str, Any], path: str,
              seen: frozenset[str]) -> tuple[DataType, bool]:
        """A field's Spark type and nullability."""
        not_null = opts.get("spark_not_null") is True
        if f.is_repeated:
            entry = f.message_type
            if entry is not None and entry.GetOptions().map_entry:
                key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
                key = self.value(key_field, opts.get("spark_key_type"), key_path(path), seen)
                value, value_contains_null = self.element(value_field, opts, value_path(path), seen)
                return MapType(key, value, value_contains_null), not not_null
            element, contains_null = self.element(f, opts, element_path(path), seen)
            return ArrayType(element, contains_null), not not_null
        dtype = self.value(f, opts.get("spark_type"), path, seen)
        if dtype == Simple("void"):
            return dtype, True
        return dtype, f.has_presence and not f.is_required and not not_null

    def element(self, f: FieldDescriptor, opts: dict[str, Any], path: str,
                seen: frozenset[str]) -> tuple[DataType, bool]:
        """The elements of a repeated field or the values of a map: unwrapped, with whether they may be null."""
        message = f.message_type
        if message is not None and len(message.fields) == 1:
            message_opts = self.options(message.GetOptions(), message.file, "google.protobuf.MessageOptions")
            if message_opts.get("spark_wrapper") is True:
                inner = message.fields[0]
                inner_opts = self.options(inner.GetOptions(), message.file, "google.protobuf.FieldOptions")
                return self.field(inner, inner_opts, path, seen)
        return self.value(f, opts.get("spark_type"), path, seen), False

    def value(self, f: FieldDescriptor, declared: Any, path: str, seen: frozenset[str]) -> DataType:
        """The Spark type of one value of a field (ignoring repetition)."""
        if f.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
            known = _WELL_KNOWN.get(f.message_type.full_name)
            return known if known is not None else self.struct(f.message_type, path, seen)
        if f.type == _T.TYPE_ENUM:
            return Simple("void") if f.enum_type.full_name == _NULL_VALUE else Simple("string")
        kind, default = _PLAIN[f.type]
        return _override(declared, kind) or default

    def options(self, options: Any, file: FileDescriptor, extendee: str) -> dict[str, Any]:
        """The Spark options set in ``options`` (of type ``extendee``), found by the names declared in ``file``."""
        known = FIELD_OPTIONS if extendee == "google.protobuf.FieldOptions" else MESSAGE_OPTIONS
        numbers = self._option_numbers(file, extendee)
        found: dict[str, Any] = {}
        unknown_fields = UnknownFieldSet(options)
        for i in range(len(unknown_fields)):
            unknown = unknown_fields[i]
            name = numbers.get(unknown.field_number)
            if name is None or name not in known:
                continue
            kind = known[name][0]
            if kind == "bool" and isinstance(unknown.data, int):
                found[name] = bool(unknown.data)
            elif kind == "string" and isinstance(unknown.data, bytes):
                found[name] = unknown.data.decode("utf-8", errors="replace")
        return found

    def _option_numbers(self, file: FileDescriptor, extendee: str) -> dict[int, str]:
        cached = self._option_cache.get((file.name, extendee))
        if cached is None:
            cached = {
                extension.number: name
                for name, extension in file.extensions_by_name.items()
                if name in RESERVED_NAMES and extension.containing_type.full_name == extendee
            }
            self._option_cache[(file.name, extendee)] = cached
        return cached


def _override(declared: Any, kind: str) -> DataType | None:
    """The Spark type a spark_type option names, if it is one that this proto type carries."""
    if not isinstance(declared, str):
        return None
    try:
        dtype = parse_atomic(declared, "")
        written, _ = _scalar(dtype, "")
    except BadRequest:  # UnsupportedType included: an option we did not write is only a hint
        return None
    return dtype if written == kind else None
