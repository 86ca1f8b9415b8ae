"""Schema references: Avro named types, JSON Schema ``$ref`` and Protobuf imports of other subjects."""

from __future__ import annotations

import json

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.confluent.helpers import Raw, avro, enc

ADDRESS = avro("Address", ("street", "string"))
ADDRESS_V2 = avro("Address", ("street", "string"), {"name": "zip", "type": "string", "default": ""})
ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "acme",
                    "fields": [{"name": "id", "type": "string"}, {"name": "to", "type": "Address"}]})


def _ref(ctx: str, version: int = 1, qualified: bool = False) -> dict[str, object]:
    # A reference names a subject of the referring schema's context; answers qualify it.
    subject = f":.{ctx}:address" if qualified else "address"
    return {"name": "acme.Address", "subject": subject, "version": version}


def test_avro_references(raw: Raw, ctx: str, server_url: str) -> None:
    address = enc(f":.{ctx}:address")
    orders = enc(f":.{ctx}:orders")
    address_id = raw.ok("POST", f"/subjects/{address}/versions", {"schema": ADDRESS})["id"]
    body = {"schema": ORDER, "references": [_ref(ctx)]}
    order_id = raw.ok("POST", f"/subjects/{orders}/versions", body)["id"]
    assert raw.ok("POST", f"/subjects/{orders}/versions", body) == {"id": order_id}
    version = raw.ok("GET", f"/subjects/{orders}/versions/1")
    assert version["schema"] == ORDER
    assert version["references"] == [_ref(ctx, qualified=True)]
    # the qualified spelling is the same reference: the same schema
    assert raw.ok("POST", f"/subjects/{orders}/versions", {"schema": ORDER, "references": [_ref(ctx, 1, True)]}) == {
        "id": order_id
    }
    assert "schemaType" not in version
    assert raw.ok("POST", f"/subjects/{orders}", body)["version"] == 1
    assert raw.ok("GET", f"/subjects/{address}/versions/1/referencedby") == [order_id]
    assert raw.ok("GET", f"/subjects/{address}/versions/latest/referencedby") == [order_id]

    # the same text with other references is another schema
    raw.ok("POST", f"/subjects/{address}/versions", {"schema": ADDRESS_V2})
    other = raw.ok("POST", f"/subjects/{orders}/versions", {"schema": ORDER, "references": [_ref(ctx, 2)]})["id"]
    assert other != order_id
    assert raw.ok("GET", f"/subjects/{orders}/versions") == [1, 2]

    # a referenced version cannot be deleted while a live schema uses it
    status, code, message = raw.error("DELETE", f"/subjects/{address}/versions/1")
    assert (status, code) == (422, 42206)
    assert str(order_id) in message
    assert raw.error("DELETE", f"/subjects/{address}")[1] == 42206
    raw.ok("DELETE", f"/subjects/{orders}/versions/1")
    assert raw.ok("GET", f"/subjects/{address}/versions/1/referencedby") == []
    assert raw.ok("DELETE", f"/subjects/{address}/versions/1") == 1
    # the deleted schema stays readable by id, with its references
    assert raw.ok("GET", f"/schemas/ids/{order_id}")["references"] == [_ref(ctx, qualified=True)]
    assert raw.ok("GET", f"/schemas/ids/{address_id}")["schema"] == ADDRESS

    # data written with the referencing schema reads back with the stock deserializer
    client = SchemaRegistryClient({"url": server_url})
    topic = SerializationContext("orders", MessageField.VALUE)
    serializer = AvroSerializer(client, None, conf={
        "auto.register.schemas": False, "use.latest.version": True,
        "subject.name.strategy": lambda _c, _r: f":.{ctx}:orders",
    })
    data = serializer({"id": "o1", "to": {"street": "Main", "zip": "1"}}, topic)
    assert AvroDeserializer(client)(data, topic) == {"id": "o1", "to": {"street": "Main", "zip": "1"}}


def test_avro_compatibility_resolves_references(raw: Raw, ctx: str) -> None:
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:address')}/versions", {"schema": ADDRESS})
    raw.ok("PUT", f"/config/{enc(f':.{ctx}:address')}", {"compatibility": "NONE"})
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:address')}/versions",
           {"schema": avro("Address", ("street", "long"))})
    orders = enc(f":.{ctx}:orders")
    raw.ok("POST", f"/subjects/{orders}/versions", {"schema": ORDER, "references": [_ref(ctx)]})
    # the new order reads Address v2, whose street changed type: refused, by path
    status, code, message = raw.error("POST", f"/subjects/{orders}/versions",
                                      {"schema": ORDER, "references": [_ref(ctx, 2)]})
    assert (status, code) == (409, 409)
    assert "$.to.street" in message


def test_json_schema_references(raw: Raw, ctx: str) -> None:
    customer = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:customer')}/versions",
           {"schema": json.dumps(customer), "schemaType": "JSON"})
    invoice = json.dumps({"type": "object", "title": "Invoice",
                          "properties": {"customer": {"$ref": "customer.json"}, "total": {"type": "number"}}})
    reference = {"name": "customer.json", "subject": "customer", "version": 1}
    subject = enc(f":.{ctx}:invoices")
    schema_id = raw.ok("POST", f"/subjects/{subject}/versions",
                       {"schema": invoice, "schemaType": "JSON", "references": [reference]})["id"]
    shown = raw.ok("GET", f"/schemas/ids/{schema_id}")
    qualified = dict(reference, subject=f":.{ctx}:customer")
    assert (shown["schema"], shown["schemaType"], shown["references"]) == (invoice, "JSON", [qualified])
    resolved = json.loads(raw.ok("GET", f"/schemas/ids/{schema_id}", format="resolved")["schema"])
    assert resolved["$defs"]["customer.json"]["$id"] == "customer.json"

    # compatibility looks through the reference: customer v2 drops a property the invoice reads
    narrower = dict(customer, properties={"name": {"type": "integer"}})
    raw.ok("PUT", f"/config/{enc(f':.{ctx}:customer')}", {"compatibility": "NONE"})
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:customer')}/versions",
           {"schema": json.dumps(narrower), "schemaType": "JSON"})
    changed = {"schema": invoice, "schemaType": "JSON", "references": [dict(reference, version=2)]}
    answer = raw.ok("POST", f"/compatibility/subjects/{subject}/versions/latest", changed, verbose="true")
    assert answer["is_compatible"] is False
    assert any("$.customer.name" in m for m in answer["messages"])


def test_protobuf_references_by_text(raw: Raw, ctx: str, sr: SchemaRegistryClient) -> None:
    money = 'syntax = "proto3";\npackage m;\nmessage Money { int64 units = 1; string currency = 2; }\n'
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:money')}/versions", {"schema": money, "schemaType": "PROTOBUF"})
    price = ('syntax = "proto3";\npackage p;\nimport "m/money.proto";\nimport "google/protobuf/wrappers.proto";\n'
             "message Price { m.Money amount = 1; google.protobuf.StringValue note = 2; }\n")
    reference = {"name": "m/money.proto", "subject": "money", "version": 1}
    schema_id = raw.ok("POST", f"/subjects/{enc(f':.{ctx}:prices')}/versions",
                       {"schema": price, "schemaType": "PROTOBUF", "references": [reference]})["id"]
    shown = sr.get_schema(schema_id)
    assert shown.references[0].name == "m/money.proto"
    assert 'import "m/money.proto";' in shown.schema_str
    # what it answers registers again as the same schema
    again = {"schema": shown.schema_str, "schemaType": "PROTOBUF", "references": [reference]}
    assert raw.ok("POST", f"/subjects/{enc(f':.{ctx}:prices')}/versions", again) == {"id": schema_id}
    registered = sr.register_schema(f":.{ctx}:prices2", Schema(price, "PROTOBUF", [
        SchemaReference("m/money.proto", f":.{ctx}:money", 1)]))
    assert registered == schema_id  # the qualified name of the same subject: the same reference
