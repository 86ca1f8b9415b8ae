"""What the Protobuf wire format lets a field's type change into, and how to name types in reasons.

The groups follow protobuf's "Updating a message type" rules: types that share an encoding
parse each other's bytes (values that do not fit are cast as C++ would), ``string`` and
``bytes`` are both length-delimited (a ``string`` reader needs valid UTF-8, which we accept
as the writer's promise), and an embedded message may be read as ``bytes`` and back.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor

_F = FieldDescriptor

#: How each field type is encoded; two types with the same encoding read each other's values.
ENCODING: dict[int, str] = {
    _F.TYPE_INT32: "varint",
    _F.TYPE_INT64: "varint",
    _F.TYPE_UINT32: "varint",
    _F.TYPE_UINT64: "varint",
    _F.TYPE_BOOL: "varint",
    _F.TYPE_ENUM: "varint",
    _F.TYPE_SINT32: "zigzag varint",
    _F.TYPE_SINT64: "zigzag varint",
    _F.TYPE_FIXED32: "fixed 32-bit integer",
    _F.TYPE_SFIXED32: "fixed 32-bit integer",
    _F.TYPE_FLOAT: "32-bit float",
    _F.TYPE_FIXED64: "fixed 64-bit integer",
    _F.TYPE_SFIXED64: "fixed 64-bit integer",
    _F.TYPE_DOUBLE: "64-bit float",
    _F.TYPE_STRING: "length-delimited UTF-8 text",
    _F.TYPE_BYTES: "length-delimited bytes",
    _F.TYPE_MESSAGE: "length-delimited message",
    _F.TYPE_GROUP: "group",
}

#: Pairs (writer type, reader type) of different encodings that still read correctly.
_LENGTH_DELIMITED_PAIRS = {
    (_F.TYPE_STRING, _F.TYPE_BYTES),
    (_F.TYPE_BYTES, _F.TYPE_STRING),
    (_F.TYPE_MESSAGE, _F.TYPE_BYTES),
    (_F.TYPE_BYTES, _F.TYPE_MESSAGE),
}

_SCALAR_NAMES: dict[int, str] = {
    _F.TYPE_INT32: "int32",
    _F.TYPE_INT64: "int64",
    _F.TYPE_UINT32: "uint32",
    _F.TYPE_UINT64: "uint64",
    _F.TYPE_BOOL: "bool",
    _F.TYPE_SINT32: "sint32",
    _F.TYPE_SINT64: "sint64",
    _F.TYPE_FIXED32: "fixed32",
    _F.TYPE_SFIXED32: "sfixed32",
    _F.TYPE_FLOAT: "float",
    _F.TYPE_FIXED64: "fixed64",
    _F.TYPE_SFIXED64: "sfixed64",
    _F.TYPE_DOUBLE: "double",
    _F.TYPE_STRING: "string",
    _F.TYPE_BYTES: "bytes",
}

#: Numeric types that repeated fields may pack into one length-delimited record.
PACKABLE = frozenset(t for t, e in ENCODING.items() if not e.startswith(("length-delimited", "group")))


def wire_compatible(writer_type: int, reader_type: int) -> bool:
    """Whether a reader of ``reader_type`` parses values written as ``writer_type``.

    Only the encoding is judged here; messages, groups and enums need their contents compared too.
    """
    if ENCODING[writer_type] == ENCODING[reader_type]:
        return True
    return (writer_type, reader_type) in _LENGTH_DELIMITED_PAIRS


def is_map(field: FieldDescriptor) -> bool:
    """Whether ``field`` is a ``map<K, V>`` (a repeated field of a generated map entry message)."""
    return bool(field.is_repeated and field.message_type is not None and field.message_type.GetOptions().map_entry)


def type_label(field: FieldDescriptor) -> str:
    """The field's type as a .proto file spells it: ``int32``, ``message shop.Customer``, ``map<string, int32>``."""
    if is_map(field):
        entry = field.message_type
        key, value = entry.fields_by_number[1], entry.fields_by_number[2]
        return f"map<{_short_label(key)}, {_short_label(value)}>"
    if field.type == _F.TYPE_MESSAGE:
        return f"message {field.message_type.full_name}"
    if field.type == _F.TYPE_GROUP:
        return f"group {field.message_type.full_name}"
    if field.type == _F.TYPE_ENUM:
        return f"enum {field.enum_type.full_name}"
    return _SCALAR_NAMES[field.type]


def _short_label(field: FieldDescriptor) -> str:
    if field.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        return str(field.message_type.full_name)
    if field.type == _F.TYPE_ENUM:
        return str(field.enum_type.full_name)
    return _SCALAR_NAMES[field.type]
