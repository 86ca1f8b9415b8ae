"""Reference support in the formats, and ``.proto`` text that compiles back to the same descriptor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from registry.errors import InvalidSchema
from registry.formats.avro import AvroFormat
from registry.formats.base import Reference
from registry.formats.jsonschema import JsonSchemaFormat
from registry.formats.protobuf import ProtobufFormat, compile_with, protoc_include_dir
from registry.formats.protobuf_text import proto_text
from tests.confluent.helpers import avro

PROTO2 = r'''
syntax = "proto2";
package legacy.v1;
option java_package = "com.example.legacy";
option java_multiple_files = true;
option optimize_for = CODE_SIZE;
import "google/protobuf/any.proto";

message Thing {
  option deprecated = true;
  required string name = 1 [default = "it's \"quoted\"\n\001"];
  optional bytes blob = 2 [default = "\000\377ab"];
  optional double ratio = 3 [default = inf];
  optional float nanny = 4 [default = nan];
  optional Kind kind = 5 [default = SMALL];
  repeated int32 packed_ints = 6 [packed = true];
  optional int64 json = 7 [json_name = "custom_json", deprecated = true];
  optional group Inner = 8 { optional int32 depth = 1; }
  map<string, Thing> children = 9;
  oneof choice { string text = 10; google.protobuf.Any any = 11; }
  extensions 100 to 199, 1000 to max;
  reserved 20, 30 to 40;
  reserved "gone", "older";
  enum Kind {
    option allow_alias = true; SMALL = 0; TINY = 0; BIG = 1 [deprecated = true]; reserved 5 to 9; reserved "HUGE";
  }
  message Nested { optional sint32 s = 1; optional fixed64 f = 2; optional sfixed32 sf = 3; }
}
extend Thing { optional string note = 100; }
service Things {
  rpc Get(Thing) returns (Thing);
  rpc Watch(stream Thing) returns (stream Thing) { option deprecated = true; }
}
'''

PROTO3 = """
syntax = "proto3";
package modern;
import "google/protobuf/timestamp.proto";
message Event {
  string id = 1;
  optional string maybe = 2;
  google.protobuf.Timestamp at = 3;
  map<int32, string> labels = 4;
  repeated Event children = 5;
  Nested.Deep deep = 6;
  message Nested { message Deep { uint32 n = 1; } enum Level { LOW = 0; HIGH = 1; } Level level = 1; }
}
enum Color { RED = 0; GREEN = 1; }
"""


def _round_trip(text: str) -> None:
    first = ProtobufFormat().parse(text.encode(), "", [])
    own = first.parsed.file[-1]
    printed = proto_text(own)
    again = ProtobufFormat().parse(printed.encode(), "", [])
    assert again.canonical == first.canonical, printed
    assert proto_text(again.parsed.file[-1]) == printed


@pytest.mark.parametrize("text", [PROTO2, PROTO3], ids=["proto2", "proto3"])
def test_proto_text_compiles_back_to_the_same_descriptor(text: str) -> None:
    _round_trip(text)


# descriptor.proto is left out: its extension declarations are source-only options, which leave an
# empty options message in the descriptor that no text can give back.
@pytest.mark.parametrize(
    "name", ["any", "api", "duration", "empty", "field_mask", "struct", "timestamp", "type", "wrappers"]
)
def test_well_known_files_round_trip(name: str) -> None:
    text = (Path(protoc_include_dir()) / "google" / "protobuf" / f"{name}.proto").read_text()
    _round_trip(text)


def test_text_and_descriptor_forms_are_one_schema() -> None:
    fmt = ProtobufFormat()
    text = fmt.parse(PROTO3.encode(), "", [])
    own = descriptor_pb2.FileDescriptorProto()
    own.CopyFrom(text.parsed.file[-1])
    own.name = "anything.proto"
    for field in own.message_type[0].field:
        field.ClearField("json_name")  # as generated code's descriptors have them
    descriptor = fmt.parse(own.SerializeToString(), "", [])
    assert descriptor.canonical == text.canonical
    # and the Pravega API's form of the same text is the same content
    assert fmt.parse(PROTO3.encode(), "modern.Event").canonical == text.canonical
    assert text.type_name == "modern.Event"


def test_protobuf_references_and_enum_only_files() -> None:
    fmt = ProtobufFormat()
    colors = fmt.parse(b'syntax = "proto3"; package c; enum Color { RED = 0; }', "", [])
    assert colors.type_name == "c.Color"
    assert fmt.parse(colors.data, colors.type_name).canonical == colors.canonical  # stored data parses alone
    main = b'syntax = "proto3"; import "c/color.proto"; message Paint { c.Color color = 1; }'
    paint = fmt.parse(main, "", [Reference("c/color.proto", colors.data, colors.type_name)])
    assert [f.name for f in paint.parsed.file] == ["c/color.proto", "schema.proto"]
    with pytest.raises(InvalidSchema, match=r"c/color\.proto"):
        fmt.parse(main, "", [])
    with pytest.raises(InvalidSchema, match="reference may not be called"):
        fmt.parse(main, "", [Reference("schema.proto", colors.data, colors.type_name)])
    deps = descriptor_pb2.FileDescriptorSet()
    assert compile_with(main.replace(b'import "c/color.proto"; ', b"").replace(b"c.Color", b"int32"), deps).file


def test_avro_references() -> None:
    fmt = AvroFormat()
    address = fmt.parse(avro("Address", ("street", "string")).encode(), "", [])
    person = fmt.parse(avro("Person", ("home", "acme.Address")).encode(), "", [Reference("acme.Address",
                                                                                          address.data)])
    # two references may both bring a type, when they agree
    both = [Reference("acme.Address", address.data), Reference("acme.Person", person.data)]
    couple = fmt.parse(avro("Couple", ("a", "acme.Person"), ("b", "acme.Address")).encode(), "", both)
    assert json.loads(couple.data)["fields"][0]["type"]["fields"][0]["type"]["name"] == "Address"
    assert fmt.parse(couple.data, "").canonical == couple.canonical
    other = fmt.parse(avro("Address", ("zip", "int")).encode(), "", [])
    with pytest.raises(InvalidSchema, match="twice"):
        fmt.parse(avro("X", ("a", "acme.Address")).encode(), "", [Reference("a", address.data),
                                                                  Reference("b", other.data)])
    with pytest.raises(InvalidSchema, match="not a valid Avro schema"):
        fmt.parse(avro("X", ("a", "int")).encode(), "", [Reference("a", b"{oops")])


@pytest.mark.parametrize(
    ("dialect", "holder", "key"),
    [
        ("http://json-schema.org/draft-04/schema#", "definitions", "id"),
        ("http://json-schema.org/draft-07/schema#", "definitions", "$id"),
        ("https://json-schema.org/draft/2020-12/schema", "$defs", "$id"),
    ],
)
def test_json_schema_references_are_bundled(dialect: str, holder: str, key: str) -> None:
    fmt = JsonSchemaFormat()
    point = fmt.parse(json.dumps({"type": "object", "properties": {"x": {"type": "number"}}}).encode(), "", [])
    assert point.type_name == "json"
    shape = {"$schema": dialect, "type": "object", "properties": {"at": {"$ref": "point.json"}}}
    parsed = fmt.parse(json.dumps(shape).encode(), "", [Reference("point.json", point.data)])
    bundled = json.loads(parsed.data)
    assert bundled[holder]["point.json"][key] == "point.json"
    narrower = fmt.parse(
        json.dumps({"type": "object", "properties": {"x": {"type": "integer"}}}).encode(), "", []
    )
    stricter = fmt.parse(json.dumps(shape).encode(), "", [Reference("point.json", narrower.data)])
    reasons = fmt.check(stricter, parsed)
    assert reasons
    assert reasons[0].path == "$.at.x"
    assert fmt.check(parsed, stricter) == []
