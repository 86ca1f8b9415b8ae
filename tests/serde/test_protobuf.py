"""Protobuf events: generated-style classes, dynamic messages from the registry, dicts."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message

from registry.client import RegistryClient
from registry.formats.protobuf import compile_proto
from registry.serde import Deserializer, SerdeError, Serializer
from registry.serde.protobuf import schema_of
from tests.serde.schemas import CODECS, ORDER_PROTO, ORDER_PROTO_V2, new_group, order_schema


def generated_class(proto: bytes, name: str = "test.serde.Order") -> type[Message]:
    """What protoc-generated code would give: a class in a pool of its own, built from the .proto."""
    pool = descriptor_pool.DescriptorPool()
    for file in compile_proto(proto).file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def sample(cls: type[Message]) -> Message:
    order = cls(id=2**40, customer="ada", tags={"channel": "web"}, status=1, discount=0.25)
    order.lines.add(sku="A-1", quantity=3, price=9.5)
    order.placed.FromSeconds(1_700_000_000)
    return order


@pytest.mark.parametrize("codec", CODECS)
def test_generated_class_messages_round_trip(client: RegistryClient, codec: str) -> None:
    Order = generated_class(ORDER_PROTO)
    group = new_group(client, "orders", "Protobuf")
    serializer = Serializer(client, group, schema_of(Order), codec)
    order = sample(Order)
    event = serializer.serialize(order)
    assert event[5:] == serializer.codec.encode(order.SerializeToString())
    back = Deserializer(client, group, message_class=Order).deserialize(event)
    assert isinstance(back, Order)
    assert back == order


def test_dynamic_messages_from_the_registered_descriptors(client: RegistryClient) -> None:
    group = new_group(client, "orders", "Protobuf")
    serializer = Serializer(client, group, order_schema())
    Order = serializer.message_class
    event = serializer.serialize(sample(Order))
    back = Deserializer(client, group).deserialize(event)
    assert back.DESCRIPTOR.full_name == "test.serde.Order"
    assert back.customer == "ada"
    assert back.lines[0].quantity == 3
    assert back.placed.seconds == 1_700_000_000
    assert back.HasField("discount")
    assert back.SerializeToString(deterministic=True) == sample(Order).SerializeToString(deterministic=True)


def test_dicts_are_written_and_read_back(client: RegistryClient) -> None:
    group = new_group(client, "orders", "Protobuf")
    serializer = Serializer(client, group, order_schema(), "application/x-gzip")
    record = {
        "id": 7,
        "customer": "bob",
        "lines": [{"sku": "B", "quantity": 1, "price": 2.0}],
        "tags": {},
        "placed": "2024-05-01T12:00:00Z",
        "status": "PAID",
    }
    event = serializer.serialize(record)
    back = Deserializer(client, group, as_dict=True).deserialize(event)
    assert back == {**record, "id": 7}  # int64 stays an int; every field is present
    assert isinstance(back["id"], int)


def test_a_newer_reader_sees_defaults_for_fields_old_events_lack(client: RegistryClient) -> None:
    group = new_group(client, "orders", "Protobuf")
    old = Serializer(client, group, order_schema()).serialize({"id": 1, "customer": "c"})
    new = Serializer(client, group, order_schema(ORDER_PROTO_V2)).serialize({"id": 2, "note": "gift"})
    records = list(Deserializer(client, group, order_schema(ORDER_PROTO_V2), as_dict=True).deserialize_many([old, new]))
    assert [(r["id"], r["customer"], r["note"]) for r in records] == [(1, "c", ""), (2, "", "gift")]


def test_messages_of_another_type_are_refused(client: RegistryClient) -> None:
    group = new_group(client, "orders", "Protobuf")
    Line = generated_class(ORDER_PROTO, "test.serde.Line")
    with pytest.raises(SerdeError, match=r"a test\.serde\.Line message cannot be written as test\.serde\.Order"):
        Serializer(client, group, order_schema()).serialize(Line(sku="x"))
    event = Serializer(client, group, order_schema()).serialize({"id": 1})
    with pytest.raises(SerdeError, match=r"cannot be read as test\.serde\.Line"):
        Deserializer(client, group, message_class=Line).deserialize(event)


def test_dicts_that_do_not_fit_are_refused_naming_the_field(client: RegistryClient) -> None:
    group = new_group(client, "orders", "Protobuf")
    with pytest.raises(SerdeError, match="quantity"):
        Serializer(client, group, order_schema()).serialize({"lines": [{"quantity": "three"}]})
    with pytest.raises(SerdeError, match="takes messages or dicts"):
        Serializer(client, group, order_schema()).serialize(["not", "a", "message"])
