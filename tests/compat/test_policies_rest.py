"""Evolutions through the REST API, one group per format and policy, accepted and refused as the rules say."""

from __future__ import annotations

import json

import pytest

from registry.client import RegistryClient, schema_info
from registry.errors import IncompatibleSchema
from registry.model import Compatibility, GroupProperties, Rule, SchemaInfo, SerializationFormat

# Each format's sequence: v0; v1 adds an optional field (compatible both ways); v2 adds a
# required field (not backward); v3 drops a field that had no default (not forward).
AVRO = [
    {"type": "record", "name": "U", "fields": [{"name": "id", "type": "long"}]},
    {
        "type": "record",
        "name": "U",
        "fields": [{"name": "id", "type": "long"}, {"name": "a", "type": "string", "default": ""}],
    },
    {
        "type": "record",
        "name": "U",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "a", "type": "string", "default": ""},
            {"name": "b", "type": "int"},
        ],
    },
    {"type": "record", "name": "U", "fields": [{"name": "a", "type": "string", "default": ""}]},
]
# JSON Schema content models are open here: an undeclared property may hold anything, so a
# property added later must accept anything too ({}) to stay compatible both ways.
JSON = [
    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    {"type": "object", "properties": {"id": {"type": "integer"}, "a": {}}, "required": ["id"]},
    {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "a": {}, "b": {"type": "integer"}},
        "required": ["id", "b"],
    },
    {"type": "object", "properties": {"a": {}}, "required": []},
]
PROTO = [
    'syntax = "proto2"; message U { required int64 id = 1; }',
    'syntax = "proto2"; message U { required int64 id = 1; optional string a = 2; }',
    'syntax = "proto2"; message U { required int64 id = 1; optional string a = 2; required int32 b = 3; }',
    'syntax = "proto2"; message U { optional string a = 2; }',
]


def schemas(fmt: str) -> list[SchemaInfo]:
    if fmt == "Avro":
        return [schema_info("Avro", json.dumps(s)) for s in AVRO]
    if fmt == "Json":
        return [schema_info("Json", json.dumps(s), "U") for s in JSON]
    return [schema_info("Protobuf", s, "U") for s in PROTO]


# policy -> which of v1, v2, v3 (each tried on top of the accepted ones) is accepted
EXPECTED: dict[str, tuple[bool, bool, bool]] = {
    "AllowAny": (True, True, True),
    "Backward": (True, False, True),
    "Forward": (True, True, False),
    "Full": (True, False, False),
    "BackwardTransitive": (True, False, True),
    "ForwardTransitive": (True, True, False),
    "FullTransitive": (True, False, False),
}


@pytest.mark.parametrize("fmt", ["Avro", "Json", "Protobuf"])
@pytest.mark.parametrize("policy", list(EXPECTED))
def test_evolution_sequence(client: RegistryClient, fmt: str, policy: str) -> None:
    client.create_group("g", GroupProperties(SerializationFormat(fmt), Compatibility.of(policy)))
    v0, *rest = schemas(fmt)
    client.add_schema("g", v0)
    for schema, accepted in zip(rest, EXPECTED[policy], strict=True):
        if accepted:
            client.add_schema("g", schema)
        else:
            with pytest.raises(IncompatibleSchema) as caught:
                client.add_schema("g", schema)
            assert caught.value.reasons, "a refusal names what broke"


@pytest.mark.parametrize("fmt", ["Avro", "Json", "Protobuf"])
def test_deny_all_takes_only_the_first(client: RegistryClient, fmt: str) -> None:
    client.create_group("g", GroupProperties(SerializationFormat(fmt), Compatibility.of("DenyAll")))
    v0, v1, *_ = schemas(fmt)
    client.add_schema("g", v0)
    with pytest.raises(IncompatibleSchema):
        client.add_schema("g", v1)


@pytest.mark.parametrize("fmt", ["Avro", "Json", "Protobuf"])
def test_backward_till_and_forward_till(client: RegistryClient, fmt: str) -> None:
    v0, v1, v2, v3 = schemas(fmt)
    client.create_group("g", GroupProperties(SerializationFormat(fmt), Compatibility.of("AllowAny")))
    first = client.add_schema("g", v0)
    second = client.add_schema("g", v1)
    # v3 drops `id`, which v0 and v1 require: forward-incompatible with both. ForwardTill(v1)
    # refuses it; BackwardTill(v1) accepts it (v3 reads v0 and v1 data: `a` is optional).
    client.update_compatibility("g", Compatibility("Advanced", None, Rule("till", second)))
    with pytest.raises(IncompatibleSchema):
        client.add_schema("g", v3)
    client.update_compatibility("g", Compatibility("Advanced", Rule("till", second), None))
    client.add_schema("g", v3)
    # v2 requires `b`, which no earlier version writes: BackwardTill(v0) refuses it.
    client.update_compatibility("g", Compatibility("Advanced", Rule("till", first), None))
    with pytest.raises(IncompatibleSchema):
        client.add_schema("g", v2)
