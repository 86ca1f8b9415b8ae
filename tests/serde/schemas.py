"""Schemas, groups and records the serializer tests share."""

from __future__ import annotations

import json
from typing import Any

from registry.client import RegistryClient, schema_info
from registry.model import SchemaInfo
from tests.registry.helpers import avro_record, field, group

CODECS = ["", "application/x-gzip", "application/x-snappy-framed", "application/x-zstd"]

#: The first bytes every payload of each codec starts with (none: the record itself).
CODEC_MAGIC = {
    "application/x-gzip": b"\x1f\x8b",
    "application/x-snappy-framed": b"\xff\x06\x00\x00sNaPpY",
    "application/x-zstd": b"\x28\xb5\x2f\xfd",
}

USER_V1 = avro_record(
    "User", field("id", "long"), field("name", "string"), field("visits", "int"), namespace="test.serde"
)
USER_V2 = avro_record(
    "User",
    field("id", "long"),
    field("name", "string"),
    field("visits", "long"),  # int -> long is a promotion
    field("email", "string", default="unknown"),
    field("score", ["null", "double"], default=None),
    namespace="test.serde",
)
#: Adds a field without a default: it cannot read USER_V1 data.
USER_STRICT = avro_record(
    "User",
    field("id", "long"),
    field("name", "string"),
    field("visits", "int"),
    field("country", "string"),
    namespace="test.serde",
)

ORDER_PROTO = b"""
syntax = "proto3";
package test.serde;

import "google/protobuf/timestamp.proto";

enum Status {
  NEW = 0;
  PAID = 1;
}

message Line {
  string sku = 1;
  int32 quantity = 2;
  double price = 3;
}

message Order {
  int64 id = 1;
  string customer = 2;
  repeated Line lines = 3;
  map<string, string> tags = 4;
  google.protobuf.Timestamp placed = 5;
  Status status = 6;
  optional double discount = 7;
}
"""
#: Adds a field: old events read under it get the field's default.
ORDER_PROTO_V2 = ORDER_PROTO.replace(
    b"  optional double discount = 7;\n", b"  optional double discount = 7;\n  string note = 8;\n"
)

PERSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Person",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {"zip": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "name"],
}


def order_schema(proto: bytes = ORDER_PROTO) -> SchemaInfo:
    """The Order message schema, sent as .proto text (the registry stores its descriptors)."""
    return schema_info("Protobuf", proto, "test.serde.Order")


def person_schema() -> SchemaInfo:
    """The Person JSON Schema."""
    return schema_info("Json", json.dumps(PERSON_SCHEMA), "Person")


def new_group(client: RegistryClient, name: str, fmt: str = "Avro", policy: str = "Backward") -> str:
    """Create a group of ``fmt`` under ``policy`` and return its name."""
    client.create_group(name, group(fmt, policy))
    return name


def user(i: int) -> dict[str, Any]:
    """A USER_V1 record."""
    return {"id": i, "name": f"user {i}", "visits": i % 7}
