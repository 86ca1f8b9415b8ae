"""confluent-kafka's own serializers and deserializers, with Streamcat as their registry.

No Kafka broker is involved: the serializers are called with a SerializationContext, as a
producer would call them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from confluent_kafka.serialization import SerializationError as KafkaSerializationError

from tests.confluent.helpers import Raw, avro, enc, proto_classes

COMMON = """
syntax = "proto3";
package shop.common;
message Address { string street = 1; string city = 2; }
"""
ORDERS_V1 = """
syntax = "proto3";
package shop;
import "shop/common.proto";
import "google/protobuf/timestamp.proto";
message Order {
  string id = 1;
  shop.common.Address ship_to = 2;
  google.protobuf.Timestamp placed_at = 3;
}
"""
ORDERS_V2 = ORDERS_V1.replace("placed_at = 3;", "placed_at = 3;\n  repeated string notes = 4;")
ORDERS_BROKEN = ORDERS_V1.replace("string id = 1;", "int64 id = 1;")


def _context(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _strategy(ctx: str) -> Any:
    """Subjects ``:.ctx:<topic>-value``: the default strategy, inside the test's context."""
    return lambda serialization, _record: f":.{ctx}:{serialization.topic}-value"


def test_avro_round_trip_evolution_and_auto_register(server_url: str, ctx: str) -> None:
    client = SchemaRegistryClient({"url": server_url})
    topic = _context("users")
    v1 = avro("User", ("name", "string"))
    v2 = avro("User", ("name", "string"), {"name": "age", "type": "int", "default": -1})
    conf = {"subject.name.strategy": _strategy(ctx)}
    reader = AvroDeserializer(client)

    first = AvroSerializer(client, v1, conf=conf)({"name": "ada"}, topic)
    assert first is not None
    assert first[0] == 0
    assert reader(first, topic) == {"name": "ada"}
    second = AvroSerializer(client, v2, conf=conf)({"name": "bob", "age": 7}, topic)
    assert reader(second, topic) == {"name": "bob", "age": 7}
    # a reader on v2 reads v1 data with the default filled in
    as_v2 = AvroDeserializer(client, schema_str=v2)
    assert as_v2(first, topic) == {"name": "ada", "age": -1}
    assert client.get_versions(f":.{ctx}:users-value") == [1, 2]

    # auto.register.schemas off: a registered schema is looked up, an unknown one is an error
    lookup = AvroSerializer(client, v1, conf={**conf, "auto.register.schemas": False})
    assert reader(lookup({"name": "cy"}, topic), topic) == {"name": "cy"}
    v3 = avro("User", ("name", "string"), {"name": "nick", "type": "string", "default": ""})
    with pytest.raises((SchemaRegistryError, KafkaSerializationError)):
        AvroSerializer(client, v3, conf={**conf, "auto.register.schemas": False})({"name": "x"}, topic)
    # use.latest.version writes with the newest registered schema
    latest = AvroSerializer(client, v2, conf={**conf, "auto.register.schemas": False, "use.latest.version": True})
    assert reader(latest({"name": "dee", "age": 3}, topic), topic) == {"name": "dee", "age": 3}
    # an incompatible schema is refused, naming the field
    broken = avro("User", ("name", "long"))
    with pytest.raises(SchemaRegistryError) as refused:
        AvroSerializer(client, broken, conf=conf)({"name": 1}, topic)
    assert refused.value.error_code == 409
    assert "name" in refused.value.error_message


def test_protobuf_with_an_imported_message(server_url: str, ctx: str) -> None:
    client = SchemaRegistryClient({"url": server_url})
    topic = _context("orders")
    files = {"shop/common.proto": COMMON, "shop/orders.proto": ORDERS_V1}
    (order_v1,) = proto_classes(files, "shop.Order")
    (order_v2,) = proto_classes({**files, "shop/orders.proto": ORDERS_V2}, "shop.Order")
    conf = {
        "use.deprecated.format": False,
        "subject.name.strategy": _strategy(ctx),
        "reference.subject.name.strategy": lambda _serialization, dependency: f":.{ctx}:{dependency.name}",
    }
    message = order_v1(id="o-1")
    message.ship_to.street = "1 Main St"
    message.placed_at.seconds = 1_700_000_000
    data = ProtobufSerializer(order_v1, client, conf)(message, topic)
    assert data is not None
    assert data[0] == 0

    # the import became a subject of its own, referenced by the orders subject
    subject = f":.{ctx}:orders-value"
    assert sorted(client.get_subjects(subject_prefix=f":.{ctx}:")) == sorted([f":.{ctx}:shop/common.proto", subject])
    registered = client.get_latest_version(subject)
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [
        ("shop/common.proto", f":.{ctx}:shop/common.proto", 1)
    ]
    assert 'import "shop/common.proto";' in registered.schema.schema_str
    common = client.get_latest_version(f":.{ctx}:shop/common.proto")
    assert client.get_referenced_by(f":.{ctx}:shop/common.proto", 1) == [registered.schema_id]
    assert common.schema.schema_type == "PROTOBUF"

    read_v1 = ProtobufDeserializer(order_v1, {"use.deprecated.format": False}, client)
    assert read_v1(data, topic) == message

    # a compatible evolution: v2 registers as version 2; each reader reads both
    newer = order_v2(id="o-2", notes=["fragile"])
    newer.ship_to.city = "Springfield"
    data_v2 = ProtobufSerializer(order_v2, client, conf)(newer, topic)
    assert client.get_versions(subject) == [1, 2]
    read_v2 = ProtobufDeserializer(order_v2, {"use.deprecated.format": False}, client)
    assert read_v2(data_v2, topic) == newer
    assert read_v2(data, topic).id == "o-1"
    assert read_v1(data_v2, topic).ship_to.city == "Springfield"

    # auto.register.schemas off finds what is registered
    lookup = ProtobufSerializer(order_v1, client, {**conf, "auto.register.schemas": False})
    assert read_v1(lookup(message, topic), topic) == message

    # an incompatible change is refused, naming the message and field
    (broken,) = proto_classes({**files, "shop/orders.proto": ORDERS_BROKEN}, "shop.Order")
    with pytest.raises(SchemaRegistryError) as refused:
        ProtobufSerializer(broken, client, conf)(broken(id=5), topic)
    assert refused.value.error_code == 409
    assert "Order" in refused.value.error_message
    assert "field 1" in refused.value.error_message


def test_protobuf_schema_formats(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:text")
    text = 'syntax = "proto3";\npackage p;\nmessage M { string a = 1; map<string, int64> counts = 2; }\n'
    schema_id = raw.ok("POST", f"/subjects/{subject}/versions", {"schema": text, "schemaType": "PROTOBUF"})["id"]
    shown = raw.ok("GET", f"/schemas/ids/{schema_id}")
    assert shown["schemaType"] == "PROTOBUF"
    assert "map<string, int64> counts = 2;" in shown["schema"]
    serialized = raw.ok("GET", f"/schemas/ids/{schema_id}", format="serialized")["schema"]
    # the serialized form registers as the same schema (same id), as the text does
    again = raw.ok("POST", f"/subjects/{subject}/versions", {"schema": serialized, "schemaType": "PROTOBUF"})
    assert again == {"id": schema_id}
    assert raw.ok("POST", f"/subjects/{subject}/versions", {"schema": shown["schema"], "schemaType": "PROTOBUF"}) == {
        "id": schema_id
    }
    raw_text = raw.call("GET", f"/schemas/ids/{schema_id}/schema")
    assert raw_text.text == shown["schema"]


def test_json_schema_round_trip_evolution_and_auto_register(server_url: str, ctx: str) -> None:
    client = SchemaRegistryClient({"url": server_url})
    topic = _context("payments")
    v1 = json.dumps({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Payment",
        "type": "object",
        "properties": {"id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["id"],
        "additionalProperties": False,
    })
    v2 = json.loads(v1)
    v2["properties"]["currency"] = {"type": "string"}
    v2 = json.dumps(v2)
    conf = {"subject.name.strategy": _strategy(ctx)}
    payment = {"id": "p1", "amount": 9.5}

    data = JSONSerializer(v1, client, conf=conf)(payment, topic)
    assert JSONDeserializer(v1, schema_registry_client=client)(data, topic) == payment
    newer = {"id": "p2", "currency": "EUR"}
    data_v2 = JSONSerializer(v2, client, conf=conf)(newer, topic)
    assert JSONDeserializer(None, schema_registry_client=client)(data_v2, topic) == newer
    assert client.get_versions(f":.{ctx}:payments-value") == [1, 2]
    assert client.get_latest_version(f":.{ctx}:payments-value").schema.schema_type == "JSON"

    lookup = JSONSerializer(v1, client, conf={**conf, "auto.register.schemas": False})
    assert JSONDeserializer(v1, schema_registry_client=client)(lookup(payment, topic), topic) == payment

    # closed content model: dropping a property under BACKWARD is refused, by path
    narrower = json.loads(v2)
    narrower["properties"]["amount"] = {"type": "integer"}
    with pytest.raises(SchemaRegistryError) as refused:
        JSONSerializer(json.dumps(narrower), client, conf=conf)({"id": "x"}, topic)
    assert refused.value.error_code == 409
    assert "$.amount" in refused.value.error_message
