"""``.proto`` source text of a FileDescriptorProto, for the answers that must be text.

The Confluent API hands Protobuf schemas out as ``.proto`` text (its clients parse text), while
the registry stores descriptors. This prints a file so that protoc compiles the text back into
the same descriptor: types are written fully qualified (``.pkg.Message``), which no nested
declaration can shadow, and maps, groups, oneofs and proto3 ``optional`` are written the way
protoc reads them. Options are printed when the descriptor classes know them; custom options
(extensions of the option messages, unknown to this process) are not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

F = descriptor_pb2.FieldDescriptorProto

_SCALARS = {
    F.TYPE_DOUBLE: "double",
    F.TYPE_FLOAT: "float",
    F.TYPE_INT64: "int64",
    F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32",
    F.TYPE_FIXED64: "fixed64",
    F.TYPE_FIXED32: "fixed32",
    F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes",
    F.TYPE_UINT32: "uint32",
    F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64",
    F.TYPE_SINT32: "sint32",
    F.TYPE_SINT64: "sint64",
}
_LABELS = {F.LABEL_OPTIONAL: "optional", F.LABEL_REQUIRED: "required", F.LABEL_REPEATED: "repeated"}
#: Field and extension range ends at or above this print as ``max``.
_MAX_FIELD_NUMBER = 536_870_911
_INDENT = "  "


def proto_text(file: descriptor_pb2.FileDescriptorProto) -> str:
    """The ``.proto`` source of ``file`` (its name is not part of it)."""
    out = _Printer(file)
    return out.file()


def _quote(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    parts = []
    for byte in raw:
        char = chr(byte)
        if char in "\"'\\":
            parts.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            parts.append(char)
        elif char == "\n":
            parts.append("\\n")
        else:
            parts.append(f"\\{byte:03o}")
    return '"' + "".join(parts) + '"'


def _literal(field: FieldDescriptor, value: object) -> str:
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        named = field.enum_type.values_by_number.get(int(value))  # type: ignore[call-overload]
        return named.name if named is not None else str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, bytes)):
        return _quote(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)


def _options(options: Message, skip: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(name, literal) of every set, known option (a repeated one once per value); a message
    value in protoc's aggregate syntax (``{ field: value ... }``)."""
    found = []
    for field, value in options.ListFields():
        if field.name in skip or field.is_extension:
            continue
        for item in value if field.is_repeated else [value]:
            if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
                found.append((field.name, "{ " + text_format.MessageToString(item, as_one_line=True) + " }"))
            else:
                found.append((field.name, _literal(field, item)))
    return found


def _ranges(ranges: Sequence[tuple[int, int]], inclusive_end: bool) -> str:
    parts = []
    for start, end in ranges:
        last = end if inclusive_end else end - 1
        if last == start:
            parts.append(str(start))
        else:
            parts.append(f"{start} to {'max' if last >= _MAX_FIELD_NUMBER else last}")
    return ", ".join(parts)


def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
    value = field.default_value
    if field.type == F.TYPE_STRING:
        return _quote(value)
    if field.type == F.TYPE_BYTES:
        return '"' + value + '"'  # protoc keeps bytes defaults C-escaped already
    return value


class _Printer:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.file_proto = file
        self.lines: list[str] = []
        self.proto3 = file.syntax == "proto3"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def file(self) -> str:
        f = self.file_proto
        if f.syntax == "editions":
            edition = descriptor_pb2.Edition.Name(f.edition).removeprefix("EDITION_")
            self.emit(0, f'edition = "{edition}";')
        else:
            self.emit(0, f'syntax = "{f.syntax or "proto2"}";')
        if f.package:
            self.emit(0, f"package {f.package};")
        public, weak = set(f.public_dependency), set(f.weak_dependency)
        for index, dependency in enumerate(f.dependency):
            modifier = "public " if index in public else "weak " if index in weak else ""
            self.emit(0, f"import {modifier}{_quote(dependency)};")
        for name, literal in _options(f.options):
            self.emit(0, f"option {name} = {literal};")
        for message in f.message_type:
            self.message(message, 0)
        for enum in f.enum_type:
            self.enum(enum, 0)
        self.extensions(f.extension, 0)
        for service in f.service:
            self.service(service)
        return "\n".join(self.lines) + "\n"

    def message(self, message: descriptor_pb2.DescriptorProto, depth: int, keyword: str = "message") -> None:
        if keyword == "message":
            self.emit(depth, f"message {message.name} {{")
        inner = depth + 1
        for name, literal in _options(message.options, skip=("map_entry",)):
            self.emit(inner, f"option {name} = {literal};")
        nested = {n.name: n for n in message.nested_type}
        groups = {f.type_name.rsplit(".", 1)[-1] for f in message.field if f.type == F.TYPE_GROUP}
        printed_oneofs: set[int] = set()
        for field in message.field:
            in_oneof = field.HasField("oneof_index") and not field.proto3_optional
            if in_oneof:
                if field.oneof_index in printed_oneofs:
                    continue
                printed_oneofs.add(field.oneof_index)
                self.oneof(message, field.oneof_index, nested, inner)
            else:
                self.field(field, nested, inner, in_oneof=False)
        for index in range(len(message.oneof_decl)):
            if index not in printed_oneofs and not any(
                f.HasField("oneof_index") and f.oneof_index == index for f in message.field
            ):
                self.emit(inner, f"oneof {message.oneof_decl[index].name} {{")
                self.emit(inner, "}")
        for child in message.nested_type:
            if child.options.map_entry or child.name in groups:
                continue
            self.message(child, inner)
        for enum in message.enum_type:
            self.enum(enum, inner)
        self.extensions(message.extension, inner)
        for extensions in message.extension_range:
            options = ", ".join(f"{name} = {literal}" for name, literal in _options(extensions.options))
            suffix = f" [{options}]" if options else ""
            self.emit(inner, f"extensions {_ranges([(extensions.start, extensions.end)], False)}{suffix};")
        if message.reserved_range:
            self.emit(inner, f"reserved {_ranges([(r.start, r.end) for r in message.reserved_range], False)};")
        if message.reserved_name:
            self.emit(inner, f"reserved {', '.join(_quote(n) for n in message.reserved_name)};")
        self.emit(depth, "}")

    def oneof(
        self,
        message: descriptor_pb2.DescriptorProto,
        index: int,
        nested: dict[str, descriptor_pb2.DescriptorProto],
        depth: int,
    ) -> None:
        decl = message.oneof_decl[index]
        self.emit(depth, f"oneof {decl.name} {{")
        for name, literal in _options(decl.options):
            self.emit(depth + 1, f"option {name} = {literal};")
        for field in message.field:
            if field.HasField("oneof_index") and field.oneof_index == index and not field.proto3_optional:
                self.field(field, nested, depth + 1, in_oneof=True)
        self.emit(depth, "}")

    def field(
        self,
        field: descriptor_pb2.FieldDescriptorProto,
        nested: dict[str, descriptor_pb2.DescriptorProto],
        depth: int,
        *,
        in_oneof: bool,
    ) -> None:
        entry = nested.get(field.type_name.rsplit(".", 1)[-1]) if field.type_name else None
        if entry is not None and entry.options.map_entry and field.label == F.LABEL_REPEATED:
            key, value = sorted(entry.field, key=lambda f: f.number)
            kind = f"map<{self.type_of(key)}, {self.type_of(value)}>"
            label = ""
        else:
            kind = self.type_of(field)
            label = self.label(field, in_oneof)
        options = []
        if field.HasField("default_value"):
            options.append(f"default = {_default(field)}")
        if field.HasField("json_name") and field.json_name != _json_name(field.name):
            options.append(f"json_name = {_quote(field.json_name)}")
        options += [f"{name} = {literal}" for name, literal in _options(field.options)]
        suffix = f" [{', '.join(options)}]" if options else ""
        if field.type == F.TYPE_GROUP and entry is not None:
            self.emit(depth, f"{label}group {entry.name} = {field.number}{suffix} {{")
            self.message(entry, depth, keyword="group")
            return
        self.emit(depth, f"{label}{kind} {field.name} = {field.number}{suffix};")

    def label(self, field: descriptor_pb2.FieldDescriptorProto, in_oneof: bool) -> str:
        if in_oneof:
            return ""
        if field.proto3_optional:
            return "optional "
        if field.label == F.LABEL_REPEATED:
            return "repeated "
        if self.proto3 or self.file_proto.syntax == "editions":
            return "" if field.label != F.LABEL_REQUIRED else "required "
        return _LABELS[field.label] + " "

    @staticmethod
    def type_of(field: descriptor_pb2.FieldDescriptorProto) -> str:
        scalar = _SCALARS.get(field.type)
        if scalar is not None:
            return scalar
        return field.type_name if field.type_name.startswith(".") else "." + field.type_name

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto, depth: int) -> None:
        self.emit(depth, f"enum {enum.name} {{")
        for name, literal in _options(enum.options):
            self.emit(depth + 1, f"option {name} = {literal};")
        for value in enum.value:
            options = [f"{name} = {literal}" for name, literal in _options(value.options)]
            suffix = f" [{', '.join(options)}]" if options else ""
            self.emit(depth + 1, f"{value.name} = {value.number}{suffix};")
        if enum.reserved_range:
            self.emit(depth + 1, f"reserved {_ranges([(r.start, r.end) for r in enum.reserved_range], True)};")
        if enum.reserved_name:
            self.emit(depth + 1, f"reserved {', '.join(_quote(n) for n in enum.reserved_name)};")
        self.emit(depth, "}")

    def extensions(self, fields: Sequence[descriptor_pb2.FieldDescriptorProto], depth: int) -> None:
        by_extendee: dict[str, list[descriptor_pb2.FieldDescriptorProto]] = {}
        for field in fields:
            by_extendee.setdefault(field.extendee, []).append(field)
        for extendee, extension in by_extendee.items():
            self.emit(depth, f"extend {extendee if extendee.startswith('.') else '.' + extendee} {{")
            for field in extension:
                self.field(field, {}, depth + 1, in_oneof=False)
            self.emit(depth, "}")

    def service(self, service: descriptor_pb2.ServiceDescriptorProto) -> None:
        self.emit(0, f"service {service.name} {{")
        for name, literal in _options(service.options):
            self.emit(1, f"option {name} = {literal};")
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            options = _options(method.options)
            if options:
                self.emit(1, f"rpc {method.name}({request}) returns ({response}) {{")
                for name, literal in options:
                    self.emit(2, f"option {name} = {literal};")
                self.emit(1, "}")
            else:
                self.emit(1, f"rpc {method.name}({request}) returns ({response});")
        self.emit(0, "}")


def _json_name(name: str) -> str:
    """protoc's default JSON name: underscores dropped, the letter after each one upper-cased."""
    out, upper = [], False
    for char in name:
        if char == "_":
            upper = True
        elif upper:
            out.append(char.upper())
            upper = False
        else:
            out.append(char)
    return "".join(out)
