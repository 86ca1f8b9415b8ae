"""Schemas in groups: versions, ids, dedup, policies, soft deletes, find/validate/canRead."""

from __future__ import annotations

import base64

import pytest
import requests
from google.protobuf import descriptor_pb2

from registry.api import models as wire
from registry.client import RegistryClient, schema_info
from registry.errors import FormatMismatch, IncompatibleSchema, InvalidSchema, SchemaNotFound
from registry.ids import SchemaId, TypeName, Version
from registry.model import Compatibility, Rule, SchemaInfo, SerializationFormat, VersionInfo
from tests.registry.helpers import avro_record, field, group

V1 = avro_record("User", field("name", "string"), namespace="app")
V2 = avro_record("User", field("name", "string"), field("age", "int", default=0), namespace="app")
V3_NO_DEFAULT = avro_record(
    "User", field("name", "string"), field("age", "int", default=0), field("zip", "string"), namespace="app"
)
AVRO = SerializationFormat("Avro")


def test_versions_count_up_per_type_and_ids_are_global(client: RegistryClient) -> None:
    client.create_group("users", group())
    v1 = client.add_schema("users", V1)
    v2 = client.add_schema("users", V2)
    assert (v1.type, v1.version, v2.version) == ("app.User", 0, 1)
    assert v2.id != v1.id
    client.create_group("users-copy", group())
    assert client.add_schema("users-copy", V2).id == v2.id, "same content, same id in every group"


def test_re_adding_a_schema_returns_its_version(client: RegistryClient) -> None:
    client.create_group("users", group())
    first = client.add_schema("users", V1)
    client.add_schema("users", V2)
    whitespace_variant = schema_info("Avro", V1.data.decode().replace(",", " ,  "))
    assert client.add_schema("users", whitespace_variant) == first
    assert [s.version.version for s in client.versions("users")] == [0, 1]


def test_incompatible_evolution_is_rejected_naming_the_field(
    server_url: str, client: RegistryClient, namespace: str
) -> None:
    client.create_group("users", group(policy="Backward"))
    client.add_schema("users", V1)
    client.add_schema("users", V2)
    body = wire.SchemaInfo.of(V3_NO_DEFAULT).model_dump(mode="json")
    response = requests.post(f"{server_url}/v1/groups/users/schemas", params={"namespace": namespace}, json=body)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "IncompatibleSchema"
    assert "zip" in error["message"]
    assert any(r["path"] == "$.zip" for r in error["reasons"])
    assert [s.version.version for s in client.versions("users")] == [0, 1], "nothing was added"


def test_transitive_policy_checks_every_version(client: RegistryClient) -> None:
    # v0 has no age; v1 adds it with a default; v2 drops the default. Backward against
    # v1 alone passes (v1 writes age), BackwardTransitive fails on v0.
    no_default = avro_record("User", field("name", "string"), field("age", "int"), namespace="app")
    client.create_group("plain", group(policy="Backward"))
    client.create_group("transitive", group(policy="BackwardTransitive"))
    for name in ("plain", "transitive"):
        client.add_schema(name, V1)
        client.add_schema(name, V2)
    assert client.add_schema("plain", no_default).version == 2
    with pytest.raises(IncompatibleSchema) as caught:
        client.add_schema("transitive", no_default)
    assert any("version 0" in r.message and r.path == "$.age" for r in caught.value.reasons)


def test_forward_policy_checks_the_old_schema_reading_new_data(client: RegistryClient) -> None:
    client.create_group("users", group(policy="Forward"))
    client.add_schema("users", V2)
    # Dropping age breaks forward: v1-as-reader has age without... it has a default, so fine.
    client.add_schema("users", avro_record("User", field("name", "string"), namespace="app"))
    with pytest.raises(IncompatibleSchema):
        client.add_schema("users", avro_record("User", field("name", "int"), namespace="app"))


def test_backward_till_ignores_versions_before_the_floor(client: RegistryClient) -> None:
    client.create_group("users", group(policy="AllowAny"))
    v0 = client.add_schema("users", avro_record("User", field("name", "int"), namespace="app"))
    v1 = client.add_schema("users", V1)
    client.add_schema("users", V2)
    till = Compatibility("Advanced", Rule("till", v1), None)
    client.update_compatibility("users", till)
    with_zip = avro_record(
        "User",
        field("name", "string"),
        field("age", "int", default=0),
        field("zip", "string", default=""),
        namespace="app",
    )
    assert client.add_schema("users", with_zip).version == 3
    client.update_compatibility("users", Compatibility("Advanced", Rule("till", v0), None))
    with pytest.raises(IncompatibleSchema) as caught:
        client.add_schema(
            "users", avro_record("User", field("name", "string"), field("x", "long", default=1), namespace="app")
        )
    assert any("version 0" in r.message for r in caught.value.reasons)


def test_deny_all_takes_the_first_schema_only(client: RegistryClient) -> None:
    client.create_group("frozen", group(policy="DenyAll"))
    client.add_schema("frozen", V1)
    with pytest.raises(IncompatibleSchema, match="DenyAll"):
        client.add_schema("frozen", V2)


def test_one_type_per_group_unless_allowed(client: RegistryClient) -> None:
    other = avro_record("Order", field("id", "long"), namespace="app")
    client.create_group("single", group())
    client.create_group("multi", group(multiple=True))
    for name in ("single", "multi"):
        client.add_schema(name, V1)
    with pytest.raises(IncompatibleSchema, match="multiple types"):
        client.add_schema("single", other)
    client.add_schema("multi", other)
    latest = {s.version.type: s.version.version for s in client.latest_schemas("multi")}
    assert latest == {"app.User": 0, "app.Order": 0}
    assert [s.version.type for s in client.latest_schemas("multi", "app.Order")] == ["app.Order"]


@pytest.mark.parametrize(
    ("policy", "candidates"),
    [
        ("Backward", ["V1", "V2", "V3_NO_DEFAULT", "OTHER_TYPE"]),
        ("DenyAll", ["V1", "V2", "OTHER_TYPE"]),
        ("AllowAny", ["V2", "OTHER_TYPE"]),
    ],
)
def test_validate_answers_what_adding_would(client: RegistryClient, policy: str, candidates: list[str]) -> None:
    other = avro_record("Order", field("id", "long"))
    schemas = {"V1": V1, "V2": V2, "V3_NO_DEFAULT": V3_NO_DEFAULT, "OTHER_TYPE": other}
    client.create_group("users", group(policy=policy))
    client.add_schema("users", V1)
    for name in candidates:
        predicted = client.validate("users", schemas[name]) == []
        try:
            client.add_schema("users", schemas[name])
            added = True
        except IncompatibleSchema:
            added = False
        assert predicted == added, f"{name} under {policy}: validate said {predicted}, add did {added}"


def test_wrong_format_for_the_group_is_417(client: RegistryClient) -> None:
    client.create_group("users", group("Avro"))
    with pytest.raises(FormatMismatch):
        client.add_schema("users", schema_info("Json", '{"type": "object"}', "User"))


def test_any_group_takes_every_format(client: RegistryClient) -> None:
    client.create_group("mixed", group("Any", "AllowAny", multiple=True))
    client.add_schema("mixed", V1)
    client.add_schema("mixed", schema_info("Json", '{"type": "object"}', "Doc"))
    blob = SchemaInfo(TypeName("Blob"), SerializationFormat("Custom", "my.blob"), b"\x00\x01")
    client.add_schema("mixed", blob)
    assert len(client.latest_schemas("mixed")) == 3


def test_find_validate_and_can_read(client: RegistryClient) -> None:
    client.create_group("users", group(policy="Backward"))
    v1 = client.add_schema("users", V1)
    assert client.find_version("users", V1) == v1
    with pytest.raises(SchemaNotFound):
        client.find_version("users", V2)
    assert client.validate("users", V2) == []
    reasons = client.validate("users", V3_NO_DEFAULT)
    assert reasons
    assert reasons[0].path == "$.zip"
    assert client.validate("users", V3_NO_DEFAULT, Compatibility.of("AllowAny")) == []
    assert client.can_read("users", V2) == []
    assert client.can_read("users", avro_record("User", field("name", "long"), namespace="app"))
    assert [s.version for s in client.versions("users")] == [v1], "validate and canRead add nothing"


def test_soft_delete_keeps_ids_readable_and_numbers_unused(client: RegistryClient) -> None:
    client.create_group("users", group(policy="Backward"))
    v1 = client.add_schema("users", V1)
    v2 = client.add_schema("users", V2)
    encoding = client.encoding_id("users", v2)
    client.delete_by_id("users", v2.id)
    assert [s.version for s in client.versions("users")] == [v1]
    assert client.schema_by_id("users", v2.id).data == V2.data, "deleted ids still resolve"
    assert client.encoding_info("users", encoding).version == v2
    again = client.add_schema("users", V2)
    assert (again.version, again.id) == (2, v2.id), "number 1 is never reused; content keeps its id"
    client.delete_by_version("users", AVRO, "app.User", Version(0))
    assert [s.version for s in client.versions("users")] == [again]
    history = client.history("users")
    assert [(h["versionInfo"]["version"], h["deleted"]) for h in history] == [(0, True), (1, True), (2, False)]


def test_schema_by_version_and_by_id(client: RegistryClient) -> None:
    client.create_group("users", group())
    v1 = client.add_schema("users", V1)
    by_version = client.schema_by_version("users", AVRO, "app.User", Version(0))
    assert by_version.data == V1.data
    assert client.schema_by_id("users", v1.id).type == "app.User"
    with pytest.raises(SchemaNotFound):
        client.schema_by_version("users", AVRO, "app.User", Version(5))
    with pytest.raises(SchemaNotFound):
        client.schema_by_id("users", SchemaId(10**9))


def test_history_records_policy_and_time(client: RegistryClient) -> None:
    client.create_group("users", group(policy="Backward"))
    client.add_schema("users", V1)
    client.update_compatibility("users", Compatibility.of("Full"))
    client.add_schema("users", V2)
    history = client.history("users")
    assert [h["compatibility"]["policy"] for h in history] == ["Backward", "Full"]
    assert history[0]["timestamp"] <= history[1]["timestamp"]
    assert '"age"' in history[1]["schemaString"]


def test_added_to_lists_groups_holding_the_schema(client: RegistryClient) -> None:
    for name in ("a", "b", "c"):
        client.create_group(name, group())
    va = client.add_schema("a", V1)
    client.add_schema("b", V2)
    vc = client.add_schema("c", V1)
    assert client.added_to(V1) == {"a": va, "c": vc}
    with pytest.raises(SchemaNotFound):
        client.added_to(V3_NO_DEFAULT)


PROTO = b'syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; string item = 2; }\n'


def test_protobuf_text_is_stored_as_a_descriptor_set(client: RegistryClient) -> None:
    client.create_group("orders", group("Protobuf", "AllowAny"))
    version = client.add_schema("orders", schema_info("Protobuf", PROTO, "shop.Order"))
    stored = client.schema_by_id("orders", version.id)
    fds = descriptor_pb2.FileDescriptorSet.FromString(stored.data)
    assert [m.name for m in fds.file[0].message_type] == ["Order"]
    # The descriptor set itself, as Pravega clients send it, is the same schema.
    assert client.add_schema("orders", schema_info("Protobuf", stored.data, "shop.Order")) == version


def test_protobuf_type_must_be_a_message_of_the_schema(client: RegistryClient) -> None:
    client.create_group("orders", group("Protobuf", "AllowAny"))
    with pytest.raises(InvalidSchema, match=r"shop\.Missing"):
        client.add_schema("orders", schema_info("Protobuf", PROTO, "shop.Missing"))


def test_json_schema_is_checked_against_its_meta_schema(client: RegistryClient) -> None:
    client.create_group("docs", group("Json", "AllowAny"))
    with pytest.raises(InvalidSchema, match="type"):
        client.add_schema("docs", schema_info("Json", '{"type": "objekt"}', "Doc"))
    assert client.add_schema("docs", schema_info("Json", '{"type": "object"}', "Doc")).version == 0


def test_encoding_ids_are_get_or_create_per_codec(client: RegistryClient) -> None:
    from registry.errors import CodecNotRegistered
    from registry.ids import CodecName
    from registry.model import CodecType

    client.create_group("users", group())
    v1 = client.add_schema("users", V1)
    plain = client.encoding_id("users", v1)
    assert RegistryClient(client.url, client.namespace).encoding_id("users", v1) == plain
    with pytest.raises(CodecNotRegistered):
        client.encoding_id("users", v1, CodecName("application/x-gzip"))
    client.add_codec_type("users", CodecType(CodecName("application/x-gzip"), {"level": "6"}))
    gzip = client.encoding_id("users", v1, CodecName("application/x-gzip"))
    assert gzip != plain
    info = client.encoding_info("users", gzip)
    assert (info.version, info.codec.name, info.codec.properties) == (v1, "application/x-gzip", {"level": "6"})
    assert [c.name for c in client.codec_types("users")] == ["application/x-gzip"]
    wrong = VersionInfo(TypeName("app.User"), Version(0), SchemaId(v1.id + 1000))
    with pytest.raises(SchemaNotFound):
        client.encoding_id("users", wrong)


def test_encoding_ids_of_another_group_do_not_resolve(client: RegistryClient) -> None:
    from registry.errors import EncodingNotFound

    client.create_group("a", group())
    client.create_group("b", group())
    encoding = client.encoding_id("a", client.add_schema("a", V1))
    with pytest.raises(EncodingNotFound):
        client.encoding_info("b", encoding)


def test_schema_data_round_trips_as_base64(server_url: str, client: RegistryClient, namespace: str) -> None:
    client.create_group("users", group())
    version = client.add_schema("users", V1)
    body = requests.get(
        f"{server_url}/v1/groups/users/schemas/schema/{version.id}", params={"namespace": namespace}
    ).json()
    assert base64.b64decode(body["schemaData"]) == V1.data
    assert body["serializationFormat"] == {"serializationFormat": "Avro"}
