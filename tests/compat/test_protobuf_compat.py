"""Protobuf wire compatibility: a table of schema changes judged in both directions, a check of the
scalar type rules against the protobuf runtime itself, and properties over generated schemas."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.formats import ParsedSchema, get_format
from registry.formats.base import Incompatibility
from registry.formats.protobuf_compat import check_protobuf

FDP = descriptor_pb2.FieldDescriptorProto
PROTO2 = 'syntax = "proto2";\n'
PROTO3 = 'syntax = "proto3";\n'
EDITION = 'edition = "2023";\n'

#: (path of one reason, fragment of its message); None means compatible.
Expect = tuple[str, str] | None


@dataclass(frozen=True)
class Case:
    """An old and a new schema, and what the checker must say in each direction."""

    name: str
    old: str
    new: str
    backward: Expect  # new schema reading data written with the old one
    forward: Expect  # old schema reading data written with the new one
    old_type: str = "M"
    new_type: str = "M"


def field(number: int, name: str, message: str = "M") -> str:
    """The path the checker gives a field."""
    return f"message {message} field {number} ({name})"


WIRE = "incompatible wire types"

CASES = [
    Case(
        "identical",
        PROTO3 + "message M { int32 a = 1; string b = 2; }",
        PROTO3 + "message M { int32 a = 1; string b = 2; }",
        None,
        None,
    ),
    Case(
        "field added",
        PROTO3 + "message M { int32 a = 1; }",
        PROTO3 + "message M { int32 a = 1; string b = 2; }",
        None,
        None,
    ),
    Case(
        "field removed",
        PROTO3 + "message M { int32 a = 1; string b = 2; }",
        PROTO3 + "message M { int32 a = 1; }",
        None,
        None,
    ),
    Case(
        "int32 to string",
        PROTO3 + "message M { int32 a = 1; }",
        PROTO3 + "message M { string a = 1; }",
        (field(1, "a"), WIRE),
        (field(1, "a"), WIRE),
    ),
    Case(
        "field number reused with another type",
        PROTO3 + "message M { int32 a = 1; }",
        PROTO3 + "message M { reserved 'a'; string b = 1; }",
        (field(1, "b"), "type changed from int32 (writer) to string (reader)"),
        (field(1, "a"), "type changed from string (writer) to int32 (reader)"),
    ),
    Case("int32 to int64", PROTO3 + "message M { int32 a = 1; }", PROTO3 + "message M { int64 a = 1; }", None, None),
    Case("uint64 to bool", PROTO3 + "message M { uint64 a = 1; }", PROTO3 + "message M { bool a = 1; }", None, None),
    Case(
        "sint32 to sint64", PROTO3 + "message M { sint32 a = 1; }", PROTO3 + "message M { sint64 a = 1; }", None, None
    ),
    Case(
        "int32 to sint32",
        PROTO3 + "message M { int32 a = 1; }",
        PROTO3 + "message M { sint32 a = 1; }",
        (field(1, "a"), "varint vs zigzag varint"),
        (field(1, "a"), "zigzag varint vs varint"),
    ),
    Case(
        "fixed32 to sfixed32",
        PROTO3 + "message M { fixed32 a = 1; }",
        PROTO3 + "message M { sfixed32 a = 1; }",
        None,
        None,
    ),
    Case(
        "fixed32 to int32",
        PROTO3 + "message M { fixed32 a = 1; }",
        PROTO3 + "message M { int32 a = 1; }",
        (field(1, "a"), WIRE),
        (field(1, "a"), WIRE),
    ),
    Case(
        "double to float",
        PROTO3 + "message M { double a = 1; }",
        PROTO3 + "message M { float a = 1; }",
        (field(1, "a"), WIRE),
        (field(1, "a"), WIRE),
    ),
    Case(
        "fixed32 to float, same wire type but another meaning",
        PROTO3 + "message M { fixed32 a = 1; }",
        PROTO3 + "message M { float a = 1; }",
        (field(1, "a"), WIRE),
        (field(1, "a"), WIRE),
    ),
    Case("string to bytes", PROTO3 + "message M { string a = 1; }", PROTO3 + "message M { bytes a = 1; }", None, None),
    Case(
        "message to bytes",
        PROTO3 + "message M { I a = 1; } message I { int32 x = 1; }",
        PROTO3 + "message M { bytes a = 1; }",
        None,
        None,
    ),
    Case(
        "message to string",
        PROTO3 + "message M { I a = 1; } message I { int32 x = 1; }",
        PROTO3 + "message M { string a = 1; }",
        (field(1, "a"), WIRE),
        (field(1, "a"), WIRE),
    ),
    Case(
        "open enum to int32",
        PROTO3 + "message M { E e = 1; } enum E { Z = 0; A = 1; }",
        PROTO3 + "message M { int32 e = 1; }",
        None,
        None,
    ),
    Case(
        "closed enum to int32",
        PROTO2 + "message M { optional E e = 1; } enum E { A = 1; B = 2; }",
        PROTO2 + "message M { optional int32 e = 1; }",
        None,
        (field(1, "e"), "the reader's enum is closed"),
    ),
    Case(
        "closed enum gains a value",
        PROTO2 + "message M { optional E e = 1; } enum E { A = 1; B = 2; }",
        PROTO2 + "message M { optional E e = 1; } enum E { A = 1; B = 2; C = 3; }",
        None,
        (field(1, "e") + " > enum E value 3 (C)", "missing from the reader's closed enum"),
    ),
    Case(
        "closed enum loses a value",
        PROTO2 + "message M { repeated E e = 1; } enum E { A = 1; B = 2; }",
        PROTO2 + "message M { repeated E e = 1; } enum E { A = 1; }",
        (field(1, "e") + " > enum E value 2 (B)", "missing from the reader's closed enum"),
        None,
    ),
    Case(
        "open enum gains a value",
        PROTO3 + "message M { E e = 1; } enum E { Z = 0; A = 1; }",
        PROTO3 + "message M { E e = 1; } enum E { Z = 0; A = 1; B = 2; }",
        None,
        None,
    ),
    Case(
        "enum value renumbered",
        PROTO3 + "message M { E e = 1; } enum E { Z = 0; A = 1; }",
        PROTO3 + "message M { E e = 1; } enum E { Z = 0; A = 2; }",
        (field(1, "e") + " > enum E value A", "numbered 1 by the writer but 2 by the reader"),
        (field(1, "e") + " > enum E value A", "numbered 2 by the writer but 1 by the reader"),
    ),
    Case(
        "required field added",
        PROTO2 + "message M { optional int32 a = 1; }",
        PROTO2 + "message M { optional int32 a = 1; required int32 b = 2; }",
        (field(2, "b"), "required in the reader but missing from the writer"),
        None,
    ),
    Case(
        "required field removed",
        PROTO2 + "message M { optional int32 a = 1; required int32 b = 2; }",
        PROTO2 + "message M { optional int32 a = 1; }",
        None,
        (field(2, "b"), "required in the reader but missing from the writer"),
    ),
    Case(
        "optional to required",
        PROTO2 + "message M { optional int32 a = 1; }",
        PROTO2 + "message M { required int32 a = 1; }",
        (field(1, "a"), "required in the reader but optional in the writer"),
        None,
    ),
    Case(
        "required to optional",
        PROTO2 + "message M { required int32 a = 1; }",
        PROTO2 + "message M { optional int32 a = 1; }",
        None,
        (field(1, "a"), "required in the reader but optional in the writer"),
    ),
    Case(
        "required to repeated",
        PROTO2 + "message M { required string a = 1; }",
        PROTO2 + "message M { repeated string a = 1; }",
        None,
        (field(1, "a"), "required in the reader but repeated in the writer"),
    ),
    Case(
        "singular to repeated, proto3 packs it",
        PROTO3 + "message M { int32 a = 1; }",
        PROTO3 + "message M { repeated int32 a = 1; }",
        None,
        (field(1, "a"), "cannot parse packed values"),
    ),
    Case(
        "singular to repeated, proto2 does not pack",
        PROTO2 + "message M { optional int32 a = 1; }",
        PROTO2 + "message M { repeated int32 a = 1; }",
        None,
        None,
    ),
    Case(
        "singular to packed repeated in proto2",
        PROTO2 + "message M { optional sint64 a = 1; }",
        PROTO2 + "message M { repeated sint64 a = 1 [packed = true]; }",
        None,
        (field(1, "a"), "repeated and packed in the writer but singular in the reader"),
    ),
    Case(
        "packed to unpacked",
        PROTO2 + "message M { repeated fixed32 a = 1 [packed = true]; }",
        PROTO2 + "message M { repeated fixed32 a = 1 [packed = false]; }",
        None,
        None,
    ),
    Case(
        "repeated int32 to repeated int64 across packing",
        PROTO3 + "message M { repeated int32 a = 1; }",
        PROTO3 + "message M { repeated int64 a = 1 [packed = false]; }",
        None,
        None,
    ),
    Case(
        "string singular to repeated",
        PROTO3 + "message M { string a = 1; }",
        PROTO3 + "message M { repeated string a = 1; }",
        None,
        None,
    ),
    Case(
        "message singular to repeated",
        PROTO3 + "message M { I a = 1; } message I { int32 x = 1; }",
        PROTO3 + "message M { repeated I a = 1; } message I { int32 x = 1; }",
        None,
        None,
    ),
    Case(
        "single field into a new oneof",
        PROTO3 + "message M { int32 a = 1; string b = 2; }",
        PROTO3 + "message M { oneof o { int32 a = 1; } string b = 2; }",
        None,
        None,
    ),
    Case(
        "two fields into a new oneof",
        PROTO3 + "message M { int32 a = 1; string b = 2; }",
        PROTO3 + "message M { oneof o { int32 a = 1; string b = 2; } }",
        ("message M oneof o", "the reader keeps only the last one parsed"),
        None,
    ),
    Case(
        "field into an existing oneof",
        PROTO3 + "message M { oneof o { int32 a = 1; } string b = 2; }",
        PROTO3 + "message M { oneof o { int32 a = 1; string b = 2; } }",
        ("message M oneof o", "2 (b) outside any oneof"),
        None,
    ),
    Case(
        "new field added to a oneof",
        PROTO3 + "message M { oneof o { int32 a = 1; } }",
        PROTO3 + "message M { oneof o { int32 a = 1; string b = 2; } }",
        None,
        None,
    ),
    Case(
        "oneof split in two",
        PROTO3 + "message M { oneof o { int32 a = 1; string b = 2; } }",
        PROTO3 + "message M { oneof o { int32 a = 1; } oneof p { string b = 2; } }",
        None,
        ("message M oneof o", "2 (b) in oneof p"),
    ),
    Case(
        "proto3 optional next to a real oneof",
        PROTO3 + "message M { int32 a = 1; int32 b = 2; string c = 3; }",
        PROTO3 + "message M { optional int32 a = 1; optional int32 b = 2; oneof o { string c = 3; } }",
        None,
        None,
    ),
    Case(
        "proto3 optional fields merged into a oneof",
        PROTO3 + "message M { optional int32 a = 1; optional int32 b = 2; }",
        PROTO3 + "message M { oneof o { int32 a = 1; int32 b = 2; } }",
        ("message M oneof o", "1 (a) outside any oneof, 2 (b) outside any oneof"),
        None,
    ),
    Case(
        "message and package renamed",
        PROTO3 + "package shop; message Order { Customer c = 1; } message Customer { string name = 1; }",
        PROTO3 + "package store.v2; message Purchase { Client c = 1; } message Client { string name = 1; }",
        None,
        None,
        old_type="shop.Order",
        new_type="store.v2.Purchase",
    ),
    Case(
        "nested message field changed",
        PROTO3
        + "package shop; message Order { int64 id = 1; Customer customer = 3; } message Customer { string name = 1; }",
        PROTO3
        + "package shop; message Order { int64 id = 1; Customer customer = 3; } message Customer { int64 name = 1; }",
        (field(3, "customer", "shop.Order") + " > " + field(1, "name", "shop.Customer"), WIRE),
        (field(3, "customer", "shop.Order") + " > " + field(1, "name", "shop.Customer"), WIRE),
        old_type="shop.Order",
        new_type="shop.Order",
    ),
    Case(
        "nested type declared inside the message",
        PROTO3 + "message M { message In { int32 x = 1; } In i = 1; }",
        PROTO3 + "message M { message In { double x = 1; } In i = 1; }",
        (field(1, "i") + " > " + field(1, "x", "M.In"), WIRE),
        (field(1, "i") + " > " + field(1, "x", "M.In"), WIRE),
    ),
    Case(
        "recursive message unchanged",
        PROTO3 + "message Node { int32 v = 1; repeated Node kids = 2; }",
        PROTO3 + "message Node { int32 v = 1; repeated Node kids = 2; }",
        None,
        None,
        old_type="Node",
        new_type="Node",
    ),
    Case(
        "change below a recursive message",
        PROTO3 + "message T { Node root = 1; } message Node { repeated Node kids = 1; Leaf leaf = 2; } "
        "message Leaf { int32 x = 1; }",
        PROTO3 + "message T { Node root = 1; } message Node { repeated Node kids = 1; Leaf leaf = 2; } "
        "message Leaf { string x = 1; }",
        (f"{field(1, 'root', 'T')} > {field(2, 'leaf', 'Node')} > {field(1, 'x', 'Leaf')}", WIRE),
        (f"{field(1, 'root', 'T')} > {field(2, 'leaf', 'Node')} > {field(1, 'x', 'Leaf')}", WIRE),
        old_type="T",
        new_type="T",
    ),
    Case(
        "imported Timestamp to int64",
        PROTO3 + 'import "google/protobuf/timestamp.proto"; message M { google.protobuf.Timestamp t = 1; }',
        PROTO3 + "message M { int64 t = 1; }",
        (field(1, "t"), "type changed from message google.protobuf.Timestamp (writer) to int64 (reader)"),
        (field(1, "t"), "type changed from int64 (writer) to message google.protobuf.Timestamp (reader)"),
    ),
    Case(
        "imported Timestamp to a look-alike message",
        PROTO3 + 'import "google/protobuf/timestamp.proto"; message M { google.protobuf.Timestamp t = 1; }',
        PROTO3 + "message M { Stamp t = 1; } message Stamp { int64 seconds = 1; int32 nanos = 2; }",
        None,
        None,
    ),
    Case(
        "imported Timestamp to a look-alike with another nanos type",
        PROTO3 + 'import "google/protobuf/timestamp.proto"; message M { google.protobuf.Timestamp t = 1; }',
        PROTO3 + "message M { Stamp t = 1; } message Stamp { int64 seconds = 1; string nanos = 2; }",
        (field(1, "t") + " > " + field(2, "nanos", "Stamp"), WIRE),
        (field(1, "t") + " > " + field(2, "nanos", "google.protobuf.Timestamp"), WIRE),
    ),
    Case(
        "map value type changed",
        PROTO3 + "message M { map<string, int32> m = 1; }",
        PROTO3 + "message M { map<string, string> m = 1; }",
        (field(1, "m") + " > map value", WIRE),
        (field(1, "m") + " > map value", WIRE),
    ),
    Case(
        "map key type changed",
        PROTO3 + "message M { map<string, int32> m = 1; }",
        PROTO3 + "message M { map<int32, int32> m = 1; }",
        (field(1, "m") + " > map key", "from string (writer) to int32 (reader)"),
        (field(1, "m") + " > map key", "from int32 (writer) to string (reader)"),
    ),
    Case(
        "map key int32 to int64",
        PROTO3 + "message M { map<int32, string> m = 1; }",
        PROTO3 + "message M { map<int64, string> m = 1; }",
        None,
        None,
    ),
    Case(
        "map to repeated entry message",
        PROTO3 + "message M { map<string, int32> m = 1; }",
        PROTO3 + "message M { repeated Pair m = 1; } message Pair { string key = 1; int32 value = 2; }",
        None,
        None,
    ),
    Case(
        "map value message changed",
        PROTO3 + "message M { map<string, V> m = 1; } message V { int32 x = 1; }",
        PROTO3 + "message M { map<string, V> m = 1; } message V { float x = 1; }",
        (field(1, "m") + " > map value > " + field(1, "x", "V"), WIRE),
        (field(1, "m") + " > map value > " + field(1, "x", "V"), WIRE),
    ),
    Case(
        "group to message",
        PROTO2 + "message M { optional group G = 1 { optional int32 x = 1; } }",
        PROTO2 + "message M { optional G g = 1; } message G { optional int32 x = 1; }",
        (field(1, "g"), "group vs length-delimited message"),
        (field(1, "g"), "length-delimited message vs group"),
    ),
    Case(
        "editions: legacy required field added",
        EDITION + "message M { int32 a = 1; }",
        EDITION + "message M { int32 a = 1; int32 b = 2 [features.field_presence = LEGACY_REQUIRED]; }",
        (field(2, "b"), "required in the reader but missing from the writer"),
        None,
    ),
    Case(
        "editions: closed enum gains a value",
        EDITION + "message M { E e = 1; } enum E { option features.enum_type = CLOSED; A = 0; }",
        EDITION + "message M { E e = 1; } enum E { option features.enum_type = CLOSED; A = 0; B = 1; }",
        None,
        (field(1, "e") + " > enum E value 1 (B)", "closed enum"),
    ),
    Case(
        "editions: repeated is packed by default",
        EDITION + "message M { uint32 a = 1; }",
        EDITION + "message M { repeated uint32 a = 1; }",
        None,
        (field(1, "a"), "packed"),
    ),
    Case(
        "editions: expanded repeated",
        EDITION + "message M { uint32 a = 1; }",
        EDITION + "message M { repeated uint32 a = 1 [features.repeated_field_encoding = EXPANDED]; }",
        None,
        None,
    ),
    Case(
        "editions: delimited message is a group",
        EDITION + "message M { I i = 1; } message I { int32 x = 1; }",
        EDITION + "message M { I i = 1 [features.message_encoding = DELIMITED]; } message I { int32 x = 1; }",
        (field(1, "i"), "length-delimited message vs group"),
        (field(1, "i"), "group vs length-delimited message"),
    ),
]


@cache
def compile_schema(text: str, type_name: str) -> ParsedSchema:
    """The .proto text compiled by protoc, as the registry stores it (cached: protoc is slow)."""
    return get_format("Protobuf").parse(text.encode(), type_name)


def assert_verdict(reasons: list[Incompatibility], expected: Expect, direction: str) -> None:
    """Fail unless ``reasons`` is empty (compatible) or holds a reason matching ``expected``."""
    if expected is None:
        assert reasons == [], f"{direction} should be compatible, got {[str(r) for r in reasons]}"
        return
    path, fragment = expected
    assert any(r.path == path and fragment in r.message for r in reasons), (
        f"{direction}: expected a reason at {path!r} mentioning {fragment!r}, got {[str(r) for r in reasons]}"
    )


def test_the_table_is_large_and_names_are_unique() -> None:
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_schema_change(case: Case) -> None:
    fmt = get_format("Protobuf")
    old = compile_schema(case.old, case.old_type)
    new = compile_schema(case.new, case.new_type)
    assert_verdict(fmt.check(new, old), case.backward, "backward")
    assert_verdict(fmt.check(old, new), case.forward, "forward")


def test_unknown_root_type_is_reported() -> None:
    schema = compile_schema(PROTO3 + "package p; message M { int32 a = 1; }", "p.M")
    reasons = check_protobuf(schema.parsed, "p.Missing", schema.parsed, "p.M")
    assert reasons == [Incompatibility("message p.Missing", "the reader schema has no message p.Missing")]


def test_descriptor_set_missing_an_import_is_reported() -> None:
    schema = compile_schema(
        PROTO3 + 'import "google/protobuf/timestamp.proto"; message M { google.protobuf.Timestamp t = 1; }', "M"
    )
    without_import = descriptor_pb2.FileDescriptorSet()
    without_import.file.extend(f for f in schema.parsed.file if f.name == "schema.proto")
    reasons = check_protobuf(schema.parsed, "M", without_import, "M")
    assert len(reasons) == 1
    assert reasons[0].path == "message M"
    assert "writer schema cannot be loaded" in reasons[0].message
    assert "google/protobuf/timestamp.proto" in reasons[0].message


def test_files_out_of_dependency_order_still_load() -> None:
    schema = compile_schema(
        PROTO3 + 'import "google/protobuf/timestamp.proto"; message M { google.protobuf.Timestamp t = 1; }', "M"
    )
    reversed_set = descriptor_pb2.FileDescriptorSet()
    reversed_set.file.extend(reversed(schema.parsed.file))
    assert reversed_set.file[0].name == "schema.proto"
    assert check_protobuf(reversed_set, "M", schema.parsed, "M") == []
    assert check_protobuf(schema.parsed, ".M", reversed_set, "M") == []


def test_an_enum_used_by_two_fields_is_reported_once() -> None:
    old = compile_schema(PROTO2 + "message M { optional E a = 1; optional E b = 2; } enum E { A = 1; }", "M")
    new = compile_schema(PROTO2 + "message M { optional E a = 1; optional E b = 2; } enum E { A = 1; B = 2; }", "M")
    reasons = get_format("Protobuf").check(old, new)
    assert [r.path for r in reasons] == [field(1, "a") + " > enum E value 2 (B)"]


def chain_set(length: int, last_type: int) -> descriptor_pb2.FileDescriptorSet:
    """Messages ``c.M0`` .. ``c.M<length-1>``, each holding the next; the last holds one ``last_type`` field."""
    file = descriptor_pb2.FileDescriptorProto(name="chain.proto", syntax="proto3", package="c")
    for i in range(length):
        msg = file.message_type.add(name=f"M{i}")
        if i + 1 < length:
            msg.field.add(
                name="next", number=1, label=FDP.LABEL_OPTIONAL, type=FDP.TYPE_MESSAGE, type_name=f".c.M{i + 1}"
            )
        else:
            msg.field.add(name="v", number=1, label=FDP.LABEL_OPTIONAL, type=last_type)
    return descriptor_pb2.FileDescriptorSet(file=[file])


def test_deeply_nested_messages_do_not_exhaust_the_stack() -> None:
    # Deeper than Python's default recursion limit.
    reasons = check_protobuf(chain_set(1500, FDP.TYPE_INT32), "c.M0", chain_set(1500, FDP.TYPE_STRING), "c.M0")
    assert len(reasons) == 1
    assert reasons[0].path.startswith("message c.M0 field 1 (next) > message c.M1 field 1 (next) > ")
    assert reasons[0].path.endswith("> message c.M1499 field 1 (v)")


# --- scalar type changes, against the protobuf runtime -----------------------------------------------------------

SCALARS = {
    "int32": FDP.TYPE_INT32,
    "int64": FDP.TYPE_INT64,
    "uint32": FDP.TYPE_UINT32,
    "uint64": FDP.TYPE_UINT64,
    "bool": FDP.TYPE_BOOL,
    "sint32": FDP.TYPE_SINT32,
    "sint64": FDP.TYPE_SINT64,
    "fixed32": FDP.TYPE_FIXED32,
    "sfixed32": FDP.TYPE_SFIXED32,
    "fixed64": FDP.TYPE_FIXED64,
    "sfixed64": FDP.TYPE_SFIXED64,
    "float": FDP.TYPE_FLOAT,
    "double": FDP.TYPE_DOUBLE,
    "string": FDP.TYPE_STRING,
    "bytes": FDP.TYPE_BYTES,
}
#: The groups protobuf's "Updating a message type" documents as reading each other.
DOCUMENTED_GROUPS = [
    {"int32", "int64", "uint32", "uint64", "bool"},
    {"sint32", "sint64"},
    {"fixed32", "sfixed32"},
    {"fixed64", "sfixed64"},
    {"float"},
    {"double"},
    {"string", "bytes"},
]
NUMERIC = [name for name in SCALARS if name not in ("string", "bytes")]


def one_field_set(
    type_: int, label: int = FDP.LABEL_OPTIONAL, packed: bool | None = None
) -> descriptor_pb2.FileDescriptorSet:
    """A proto2 file with ``message M { <label> <type> v = 1; }``, built without protoc."""
    file = descriptor_pb2.FileDescriptorProto(name="one.proto", syntax="proto2")
    f = file.message_type.add(name="M").field.add(name="v", number=1, type=type_, label=label)
    if packed is not None:
        f.options.packed = packed
    return descriptor_pb2.FileDescriptorSet(file=[file])


def message_class(fds: descriptor_pb2.FileDescriptorSet) -> Any:
    """The runtime class of message ``M`` in ``fds``."""
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("M"))


def sample(name: str) -> Any:
    """A value to write into a field of the scalar type ``name``."""
    # 1 survives every documented cast (bool included), so a changed value means a changed meaning.
    return {"bool": True, "string": "1", "bytes": b"1", "float": 1.0, "double": 1.0}.get(name, 1)


def same_value(read: Any, written: Any) -> bool:
    """Whether the reader got the written value back (text and bytes compare by content)."""

    def norm(v: Any) -> Any:
        return v.decode() if isinstance(v, bytes) else v

    return bool(norm(read) == norm(written))


@pytest.mark.parametrize(("writer", "reader"), list(itertools.product(SCALARS, SCALARS)))
def test_scalar_type_change_matches_docs_and_runtime(writer: str, reader: str) -> None:
    writer_set, reader_set = one_field_set(SCALARS[writer]), one_field_set(SCALARS[reader])
    compatible = check_protobuf(reader_set, "M", writer_set, "M") == []
    documented = any(writer in g and reader in g for g in DOCUMENTED_GROUPS)
    assert compatible == documented
    written = sample(writer)
    parsed = message_class(reader_set).FromString(message_class(writer_set)(v=written).SerializeToString())
    if reader == "bool":
        # Any non-zero varint reads as true, so a bool reader cannot show a changed meaning (sint zigzag).
        assert not compatible or parsed.HasField("v")
    else:
        assert compatible == (parsed.HasField("v") and same_value(parsed.v, written))


@pytest.mark.parametrize("type_name", NUMERIC)
@pytest.mark.parametrize("packed", [True, False])
def test_repeated_writer_singular_reader_matches_runtime(type_name: str, packed: bool) -> None:
    writer_set = one_field_set(SCALARS[type_name], FDP.LABEL_REPEATED, packed)
    reader_set = one_field_set(SCALARS[type_name])
    reasons = check_protobuf(reader_set, "M", writer_set, "M")
    written = sample(type_name)
    parsed = message_class(reader_set).FromString(message_class(writer_set)(v=[written, written]).SerializeToString())
    assert (reasons == []) == (not packed)
    assert (reasons == []) == parsed.HasField("v")
    # The other way round a repeated reader accepts the singular value, packed or not.
    assert check_protobuf(writer_set, "M", reader_set, "M") == []


# --- generated schemas -------------------------------------------------------------------------------------------

MAP_KEYS = [SCALARS[n] for n in SCALARS if n not in ("float", "double", "bytes")]
PACKABLE = {SCALARS[n] for n in NUMERIC}


@dataclass
class Generated:
    """A generated file, with what later edits need: its messages (no map entries) and enums."""

    fds: descriptor_pb2.FileDescriptorSet
    syntax: str
    messages: list[str]
    enums: list[str]

    def file(self) -> descriptor_pb2.FileDescriptorProto:
        """The one generated file."""
        return self.fds.file[0]

    def message(self, full_name: str) -> descriptor_pb2.DescriptorProto:
        """The message proto called ``full_name`` (with leading dot), to edit in place."""
        parts = full_name.lstrip(".").split(".")[1:]  # drop the package
        found = next(m for m in self.file().message_type if m.name == parts[0])
        for part in parts[1:]:
            found = next(m for m in found.nested_type if m.name == part)
        return found


PACKAGE = "gen"
#: What both ``@st.composite`` and ``st.data()`` hand out for drawing values.
Draw = Callable[[st.SearchStrategy[Any]], Any]


def add_field(draw: Draw, gen: Generated, owner: str, number: int, oneof_ok: bool) -> bool:
    """Add a random field ``f<number>`` to message ``owner``; return whether it may join a oneof."""
    msg = gen.message(owner)
    kinds = ["scalar", "message", "map"] + (["enum"] if gen.enums else [])
    kind = draw(st.sampled_from(kinds))
    f = msg.field.add(name=f"f{number}", number=number)
    if kind == "map":
        entry = msg.nested_type.add(name=f"F{number}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, label=FDP.LABEL_OPTIONAL, type=draw(st.sampled_from(MAP_KEYS)))
        value = entry.field.add(name="value", number=2, label=FDP.LABEL_OPTIONAL)
        set_value_type(draw, gen, value, draw(st.sampled_from([k for k in kinds if k != "map"])))
        f.label, f.type, f.type_name = FDP.LABEL_REPEATED, FDP.TYPE_MESSAGE, f"{owner}.F{number}Entry"
        return False
    set_value_type(draw, gen, f, kind)
    labels = ["optional", "repeated"] + (["required"] if gen.syntax == "proto2" else ["proto3_optional"])
    label = draw(st.sampled_from(labels))
    if label == "repeated":
        f.label = FDP.LABEL_REPEATED
        if gen.syntax == "proto2" and f.type in PACKABLE and draw(st.booleans()):
            f.options.packed = True
        return False
    if label == "required":
        f.label = FDP.LABEL_REQUIRED
        return False
    f.label = FDP.LABEL_OPTIONAL
    if label == "proto3_optional":
        f.proto3_optional = True
        f.oneof_index = len(msg.oneof_decl)
        msg.oneof_decl.add(name=f"_f{number}")
        return False
    return oneof_ok


def set_value_type(draw: Draw, gen: Generated, f: descriptor_pb2.FieldDescriptorProto, kind: str) -> None:
    """Give ``f`` a random type of ``kind``: a scalar, one of the enums, or one of the messages."""
    if kind == "scalar":
        f.type = draw(st.sampled_from(sorted(SCALARS.values())))
    elif kind == "enum":
        f.type, f.type_name = FDP.TYPE_ENUM, draw(st.sampled_from(gen.enums))
    else:
        f.type, f.type_name = FDP.TYPE_MESSAGE, draw(st.sampled_from(gen.messages))


@st.composite
def generated_schemas(draw: st.DrawFn, syntax: str | None = None) -> Generated:
    """A file of nested messages (possibly recursive), enums, repeated fields, maps, oneofs and optionals."""
    syntax = syntax or draw(st.sampled_from(["proto2", "proto3"]))
    file = descriptor_pb2.FileDescriptorProto(name="gen.proto", package=PACKAGE, syntax=syntax)
    gen = Generated(descriptor_pb2.FileDescriptorSet(file=[file]), syntax, [f".{PACKAGE}.M"], [])
    for i in range(draw(st.integers(0, 2))):
        enum = gen.file().enum_type.add(name=f"E{i}")
        # Zero first: proto3 requires it, and so do enums used as map values in proto2.
        numbers = [0, *draw(st.lists(st.integers(1, 50), unique=True, max_size=3))]
        for j, n in enumerate(numbers):
            enum.value.add(name=f"E{i}_V{j}", number=n)
        gen.enums.append(f".{PACKAGE}.E{i}")
    gen.file().message_type.add(name="M")
    for i in range(draw(st.integers(0, 3))):
        parent = draw(st.sampled_from(gen.messages))
        gen.message(parent).nested_type.add(name=f"N{i}")
        gen.messages.append(f"{parent}.N{i}")
    for owner in list(gen.messages):
        in_oneof = []
        for number in draw(st.lists(st.integers(1, 30), unique=True, max_size=5)):
            if add_field(draw, gen, owner, number, oneof_ok=True) and draw(st.booleans()):
                in_oneof.append(number)
        if in_oneof:
            msg = gen.message(owner)
            # Real oneofs must precede the synthetic ones of proto3 optionals.
            for f in msg.field:
                if f.HasField("oneof_index"):
                    f.oneof_index += 1
            synthetic = list(msg.oneof_decl)
            del msg.oneof_decl[:]
            msg.oneof_decl.add(name="choice")
            msg.oneof_decl.extend(synthetic)
            for f in msg.field:
                if f.number in in_oneof:
                    f.oneof_index = 0
    return gen


def renamed(fds: descriptor_pb2.FileDescriptorSet, package: str) -> descriptor_pb2.FileDescriptorSet:
    """The same file under another package: every type reference moves with it."""
    copy = descriptor_pb2.FileDescriptorSet()
    copy.CopyFrom(fds)
    copy.file[0].package = package

    def walk(messages: Any) -> None:
        for m in messages:
            for f in m.field:
                if f.type_name.startswith(f".{PACKAGE}."):
                    f.type_name = f".{package}." + f.type_name[len(PACKAGE) + 2 :]
            walk(m.nested_type)

    walk(copy.file[0].message_type)
    return copy


FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(generated_schemas())
def test_generated_schema_is_compatible_with_itself(gen: Generated) -> None:
    assert check_protobuf(gen.fds, "gen.M", gen.fds, "gen.M") == []
    moved = renamed(gen.fds, "other.pkg")
    assert check_protobuf(moved, "other.pkg.M", gen.fds, "gen.M") == []
    assert check_protobuf(gen.fds, "gen.M", moved, "other.pkg.M") == []


@FAST
@given(generated_schemas(syntax="proto3"), st.data())
def test_adding_a_field_in_proto3_is_compatible_both_ways(gen: Generated, data: st.DataObject) -> None:
    old = descriptor_pb2.FileDescriptorSet()
    old.CopyFrom(gen.fds)
    owner = data.draw(st.sampled_from(gen.messages))
    number = max((f.number for f in gen.message(owner).field), default=0) + 1
    add_field(data.draw, gen, owner, number, oneof_ok=False)
    assert check_protobuf(gen.fds, "gen.M", old, "gen.M") == []
    assert check_protobuf(old, "gen.M", gen.fds, "gen.M") == []


@FAST
@given(generated_schemas(syntax="proto3"), st.data())
def test_removing_a_field_in_proto3_is_compatible_both_ways(gen: Generated, data: st.DataObject) -> None:
    owners = [m for m in gen.messages if gen.message(m).field]
    if not owners:
        return
    old = descriptor_pb2.FileDescriptorSet()
    old.CopyFrom(gen.fds)
    msg = gen.message(data.draw(st.sampled_from(owners)))
    index = data.draw(st.integers(0, len(msg.field) - 1))
    gone = msg.field[index]
    siblings = [f for f in msg.field if f.HasField("oneof_index") and f.oneof_index == gone.oneof_index]
    if gone.HasField("oneof_index") and len(siblings) == 1:
        # The oneof would be left empty, which descriptors forbid: drop it and renumber the rest.
        emptied = gone.oneof_index
        del msg.oneof_decl[emptied]
        for f in msg.field:
            if f.HasField("oneof_index") and f.oneof_index > emptied:
                f.oneof_index -= 1
    del msg.field[index]
    assert check_protobuf(gen.fds, "gen.M", old, "gen.M") == []
    assert check_protobuf(old, "gen.M", gen.fds, "gen.M") == []
