"""Confluent framing, against confluent-kafka's own serializers: ours reads theirs, theirs reads ours.

The framing tests use confluent-kafka's in-memory registry client (its ids stand in for ours);
the end-to-end tests point confluent-kafka's stock Schema Registry client at the server's
Confluent API, whose schema ids are Streamcat's global ids.
"""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf.message import Message

from registry.client import RegistryClient, schema_info
from registry.formats import get_format
from registry.ids import SchemaId as StreamcatSchemaId
from registry.model import SchemaInfo
from registry.serde import ConfluentSerializer, Deserializer, SerdeError, Serializer, UnknownSchema
from registry.serde.base import ReadOptions
from registry.serde.confluent import (
    ConfluentReader,
    confluent_encoder,
    decode_message_indexes,
    decode_schema_id,
    encode_message_indexes,
    encode_prefix,
    message_indexes,
    schema_from_confluent,
)
from registry.serde.protobuf import message_class
from tests.serde.schemas import (
    ORDER_PROTO,
    PERSON_SCHEMA,
    USER_V1,
    USER_V2,
    new_group,
    order_schema,
    person_schema,
    user,
)

USERS = SerializationContext("users", MessageField.VALUE)
NESTED_PROTO = b"""
syntax = "proto3";
package test.nested;
message Outer {
  message Middle {
    message Inner { string name = 1; }
    Inner inner = 1;
  }
  Middle middle = 1;
}
message Other { int32 x = 1; }
"""


def _oracle_indexes(indexes: list[int]) -> bytes:
    out = io.BytesIO()
    SchemaId._encode_varints(out, indexes, zigzag=True)
    return out.getvalue()


# -- the framing itself, against confluent-kafka's own encoder ------------------------------------------


@pytest.mark.parametrize("indexes", [[0], [1], [0, 0], [2, 1], [63], [64], [5, 300, 70000], list(range(70))])
def test_message_indexes_are_written_as_confluent_writes_them(indexes: list[int]) -> None:
    encoded = encode_message_indexes(indexes)
    assert encoded == _oracle_indexes(indexes)
    assert decode_message_indexes(b"\x00" * 5 + encoded + b"payload") == (indexes, 5 + len(encoded))


def test_the_first_message_is_one_zero_byte() -> None:
    assert encode_message_indexes([0]) == b"\x00"
    assert decode_message_indexes(b"\x00\x00\x00\x00\x07\x00\x08\x01") == ([0], 6)


@pytest.mark.parametrize("schema_id", [0, 1, 255, 256, 2**31 - 1])
def test_the_prefix_is_confluents(schema_id: int) -> None:
    assert encode_prefix(schema_id) == SchemaId("AVRO", schema_id).id_to_bytes()
    assert encode_prefix(schema_id, [1, 2]) == SchemaId("PROTOBUF", schema_id, message_indexes=[1, 2]).id_to_bytes()
    assert decode_schema_id(encode_prefix(schema_id) + b"x") == schema_id


def test_bad_framing_is_a_clear_error() -> None:
    with pytest.raises(SerdeError, match="shorter than the 5-byte Confluent prefix"):
        decode_schema_id(b"\x00\x00\x01")
    with pytest.raises(SerdeError, match="Confluent framing starts with 0x00"):
        decode_schema_id(b"\x01\x00\x00\x00\x01")
    with pytest.raises(SerdeError, match="ends inside its Protobuf message-index array"):
        decode_message_indexes(b"\x00\x00\x00\x00\x01\x04\x02")
    with pytest.raises(SerdeError, match="message-index array of invalid length"):
        decode_message_indexes(b"\x00\x00\x00\x00\x01\x03")
    with pytest.raises(SerdeError, match="does not fit"):
        encode_prefix(2**31)


def test_message_indexes_name_nested_messages() -> None:
    schema = get_format("Protobuf").parse(NESTED_PROTO, "test.nested.Outer.Middle.Inner")
    assert message_indexes(schema) == [0, 0, 0]
    assert message_indexes(get_format("Protobuf").parse(NESTED_PROTO, "test.nested.Other")) == [1]
    assert message_indexes(get_format("Protobuf").parse(ORDER_PROTO, "test.serde.Order")) == [1]


# -- against confluent-kafka's serializers, on its in-memory registry -----------------------------------


def _resolver(mock: MockSchemaRegistryClient) -> Any:
    def resolve(schema_id: StreamcatSchemaId) -> SchemaInfo:
        found = mock.get_schema(schema_id, fmt="serialized")
        references = [{"name": r.name, "subject": r.subject, "version": r.version} for r in found.references or []]

        def fetch(subject: str, version: int) -> dict[str, Any]:
            return {"schema": mock.get_version(subject, version).schema.schema_str, "references": []}

        body = {"schema": found.schema_str, "schemaType": found.schema_type, "references": references}
        return schema_from_confluent(body, fetch)

    return resolve


def _order_class() -> type[Message]:
    return message_class(get_format("Protobuf").parse(ORDER_PROTO, "test.serde.Order"))


def test_avro_both_ways_on_confluents_registry() -> None:
    mock = MockSchemaRegistryClient({"url": "mock://"})
    theirs = AvroSerializer(mock, USER_V1.data.decode())(user(1), USERS)
    assert theirs is not None
    reader = ConfluentReader(_resolver(mock), None, ReadOptions())
    assert reader.deserialize(theirs) == user(1)
    # and under a newer reader schema: Avro resolution fills the new fields' defaults
    v2 = get_format("Avro").parse(USER_V2.data, "")
    as_v2 = ConfluentReader(_resolver(mock), v2, ReadOptions())
    assert as_v2.deserialize(theirs) == {**user(1), "email": "unknown", "score": None}

    schema_id = decode_schema_id(theirs)
    ours = confluent_encoder(get_format("Avro").parse(USER_V1.data, ""), schema_id)(user(1))
    assert ours == theirs
    assert AvroDeserializer(mock)(ours, USERS) == user(1)


def test_protobuf_both_ways_on_confluents_registry() -> None:
    mock = MockSchemaRegistryClient({"url": "mock://"})
    order = _order_class()(id=7, customer="ada", tags={"a": "b"}, discount=0.5)
    theirs = ProtobufSerializer(type(order), mock, {"use.deprecated.format": False})(order, USERS)
    assert theirs is not None
    assert theirs[5:6] == b"\x02"  # one index: Order is the file's second message
    reader = ConfluentReader(_resolver(mock), None, ReadOptions(as_dict=True))
    record = reader.deserialize(theirs)
    assert (record["id"], record["customer"], record["tags"], record["discount"]) == (7, "ada", {"a": "b"}, 0.5)

    ours = confluent_encoder(get_format("Protobuf").parse(ORDER_PROTO, "test.serde.Order"),
                             decode_schema_id(theirs))(order)
    assert ours == theirs
    parsed = ProtobufDeserializer(type(order), {"use.deprecated.format": False}, mock)(ours, USERS)
    assert parsed == order


def test_json_both_ways_on_confluents_registry() -> None:
    mock = MockSchemaRegistryClient({"url": "mock://"})
    person = {"id": 3, "name": "cy", "tags": ["x"]}
    theirs = JSONSerializer(json.dumps(PERSON_SCHEMA), mock)(person, USERS)
    assert theirs is not None
    assert ConfluentReader(_resolver(mock), None, ReadOptions()).deserialize(theirs) == person
    ours = confluent_encoder(get_format("Json").parse(json.dumps(PERSON_SCHEMA).encode(), "Person"),
                             decode_schema_id(theirs))(person)
    assert JSONDeserializer(json.dumps(PERSON_SCHEMA), schema_registry_client=mock)(ours, USERS) == person


def test_schemas_as_the_confluent_api_answers_them() -> None:
    avro = schema_from_confluent({"schema": USER_V1.data.decode()})
    assert (avro.format.name, avro.type) == ("Avro", "test.serde.User")
    person = schema_from_confluent({"schema": json.dumps(PERSON_SCHEMA), "schemaType": "JSON"})
    assert (person.format.name, person.type) == ("Json", "Person")
    proto = schema_from_confluent({"schema": ORDER_PROTO.decode(), "schemaType": "PROTOBUF"})
    # .proto text is compiled; the type is the file's first message, the indexes pick others
    assert (proto.format.name, proto.type) == ("Protobuf", "test.serde.Line")
    with pytest.raises(SerdeError, match="AVRO, PROTOBUF, JSON"):
        schema_from_confluent({"schema": "{}", "schemaType": "XML"})


# -- end to end: the server's Confluent API and confluent-kafka's stock client ----------------------------


def _subject(client: RegistryClient, group: str) -> str:
    return f":.{client.namespace}:{group}"


def _strategy(subject: str) -> dict[str, Any]:
    return {"subject.name.strategy": lambda _ctx, _record: subject}


def test_we_read_what_confluent_kafka_writes(client: RegistryClient, server_url: str) -> None:
    group = new_group(client, "users")
    sr = SchemaRegistryClient({"url": server_url})
    theirs = AvroSerializer(sr, USER_V1.data.decode(), conf=_strategy(_subject(client, group)))(user(5), USERS)
    assert theirs is not None
    [latest] = client.latest_schemas(group)
    assert decode_schema_id(theirs) == latest.version.id  # the Confluent id is the global schema id
    assert Deserializer(client, group).deserialize(theirs) == user(5)
    # the reader-schema rules are the Pravega events' rules
    client.add_schema(group, USER_V2)
    assert Deserializer(client, group, USER_V2).deserialize(theirs) == {**user(5), "email": "unknown", "score": None}


def test_confluent_kafka_reads_what_we_write(client: RegistryClient, server_url: str) -> None:
    group = new_group(client, "users")
    serializer = ConfluentSerializer(client, group, USER_V1)
    events = serializer.serialize_many([user(1), user(2)])
    assert events[0][:5] == SchemaId("AVRO", serializer.schema_id).id_to_bytes()
    sr = SchemaRegistryClient({"url": server_url})
    assert [AvroDeserializer(sr)(e, USERS) for e in events] == [user(1), user(2)]
    assert sr.get_schema(serializer.schema_id).schema_type == "AVRO"


def test_protobuf_and_json_end_to_end(client: RegistryClient, server_url: str) -> None:
    sr = SchemaRegistryClient({"url": server_url})
    orders = new_group(client, "orders", "Protobuf")
    cls = _order_class()
    order = cls(id=9, customer="bo", discount=1.5)
    theirs = ProtobufSerializer(cls, sr, {"use.deprecated.format": False, **_strategy(_subject(client, orders))})(
        order, USERS)
    assert theirs is not None
    assert Deserializer(client, orders, message_class=cls).deserialize(theirs) == order
    # The Confluent API typed that file by its first message (Line); Order gets a group of its own.
    ours = ConfluentSerializer(client, new_group(client, "orders2", "Protobuf"), order_schema()).serialize(order)
    assert ProtobufDeserializer(cls, {"use.deprecated.format": False}, sr)(ours, USERS) == order

    people = new_group(client, "people", "Json")
    person = {"id": 1, "name": "ada"}
    theirs = JSONSerializer(json.dumps(PERSON_SCHEMA), sr, conf=_strategy(_subject(client, people)))(person, USERS)
    assert Deserializer(client, people).deserialize(theirs) == person
    ours = ConfluentSerializer(client, people, person_schema()).serialize(person)
    assert JSONDeserializer(json.dumps(PERSON_SCHEMA), schema_registry_client=sr)(ours, USERS) == person


def test_one_deserializer_reads_both_framings(client: RegistryClient) -> None:
    group = new_group(client, "users")
    pravega = Serializer(client, group, USER_V1, "application/x-zstd")
    confluent = ConfluentSerializer(client, group, USER_V2)
    v2 = {**user(2), "email": "e", "score": 2.5}
    events = [pravega.serialize(user(1)), confluent.serialize(v2), pravega.serialize(user(3))]
    assert [e[0] for e in events] == [1, 0, 1]
    deserializer = Deserializer(client, group, USER_V2)
    assert list(deserializer.deserialize_many(events)) == [
        {**user(1), "email": "unknown", "score": None}, v2, {**user(3), "email": "unknown", "score": None}]
    assert deserializer.deserialize(events[1]) == v2


def test_bad_confluent_events_are_clear_errors(client: RegistryClient) -> None:
    group = new_group(client, "users")
    event = ConfluentSerializer(client, group, USER_V1).serialize(user(1))
    unknown = b"\x00" + struct.pack(">i", 2**31 - 1) + event[5:]
    with pytest.raises(UnknownSchema, match=rf"schema id {2**31 - 1}, unknown to the registry"):
        Deserializer(client, group).deserialize(unknown)
    with pytest.raises(SerdeError, match=r"cannot decode event with schema id \d+ \(Avro test.serde.User"):
        Deserializer(client, group).deserialize(event[:-2])
    with pytest.raises(SerdeError, match="shorter than the 5-byte Confluent prefix"):
        Deserializer(client, group).deserialize(event[:3])
    strict = schema_info("Avro", json.dumps({**json.loads(USER_V1.data), "fields": [
        *json.loads(USER_V1.data)["fields"], {"name": "country", "type": "string"}]}))
    with pytest.raises(SerdeError, match="reader schema cannot read events with schema id"):
        Deserializer(client, group, strict).deserialize(event)


def test_each_schema_id_is_resolved_once(client: RegistryClient, monkeypatch: pytest.MonkeyPatch) -> None:
    group = new_group(client, "users")
    events = ConfluentSerializer(client, group, USER_V1).serialize_many([user(i) for i in range(20)])
    asked: list[int] = []
    resolve = client.schema_by_global_id

    def counting(schema_id: StreamcatSchemaId) -> SchemaInfo:
        asked.append(schema_id)
        return resolve(schema_id)

    monkeypatch.setattr(client, "schema_by_global_id", counting)
    deserializer = Deserializer(client, group)
    assert [r["id"] for r in deserializer.deserialize_many(events)] == list(range(20))
    assert len(asked) == 1


def test_the_client_caches_schemas_by_global_id(client: RegistryClient) -> None:
    group = new_group(client, "users")
    version = client.add_schema(group, USER_V1)
    first = client.schema_by_global_id(version.id)
    assert (first.format.name, first.type, json.loads(first.data)) == (
        "Avro", "test.serde.User", json.loads(USER_V1.data))
    assert client.schema_by_global_id(version.id) is first
    with pytest.raises(UnknownSchema):
        Deserializer(client, group).deserialize(encode_prefix(2**31 - 2) + b"\x02")


def test_a_confluent_schema_object_is_what_confluent_kafka_registers(client: RegistryClient, server_url: str) -> None:
    # Registered through the Confluent API, read through the Pravega API: the same schema id.
    sr = SchemaRegistryClient({"url": server_url})
    subject = _subject(client, "users")
    schema_id = sr.register_schema(subject, Schema(USER_V1.data.decode(), "AVRO"))
    [latest] = client.latest_schemas("users")
    assert latest.version.id == schema_id
    event = ConfluentSerializer(client, "users", USER_V1, register=False).serialize(user(4))
    assert decode_schema_id(event) == schema_id
