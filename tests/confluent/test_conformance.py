"""Confluent behaviours found missing by running upstream's scenarios: a Protobuf file of imports only,
and the configured level of a subject whose policy was set through the Pravega API."""

from __future__ import annotations

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.client import RegistryClient
from registry.model import Compatibility
from tests.confluent.helpers import Raw, avro, enc, proto_classes
from tests.registry.helpers import avro_record, field, group

TEST_PROTO = 'syntax = "proto3";\npackage test;\nmessage TestMessage { string text = 1; int64 n = 2; }\n'
#: A file that declares nothing: it re-exports test.proto to whoever imports it (upstream's dep.proto shape).
PUBLIC_PROTO = 'syntax = "proto3";\npackage test;\nimport public "test.proto";\n'
DEPENDENCY_PROTO = ('syntax = "proto3";\npackage test;\nimport "public.proto";\n'
                    "message DependencyMessage { bool is_active = 1; TestMessage test_message = 2; }\n")


def test_a_protobuf_file_of_imports_only_is_a_schema(raw: Raw, sr: SchemaRegistryClient, ctx: str) -> None:
    def subject(name: str) -> str:
        return f":.{ctx}:{name}"

    sr.register_schema(subject("test.proto"), Schema(TEST_PROTO, "PROTOBUF"))
    imports_only = Schema(PUBLIC_PROTO, "PROTOBUF", [SchemaReference("test.proto", subject("test.proto"), 1)])
    public_id = sr.register_schema(subject("public.proto"), imports_only)
    assert sr.register_schema(subject("public.proto"), imports_only) == public_id, "registering again: the same id"
    assert sr.lookup_schema(subject("public.proto"), imports_only).schema_id == public_id
    assert 'import public "test.proto";' in str(sr.get_schema(public_id).schema_str)
    # ... and a message that uses what it re-exports
    dependency = Schema(DEPENDENCY_PROTO, "PROTOBUF",
                        [SchemaReference("public.proto", subject("public.proto"), 1)])
    dependency_id = sr.register_schema(subject("dependency-value"), dependency)
    assert [r.name for r in sr.get_schema(dependency_id).references or []] == ["public.proto"]

    # confluent-kafka's own serializer registers the files it imports, this one included, and round-trips
    (message_class,) = proto_classes({"test.proto": TEST_PROTO, "public.proto": PUBLIC_PROTO,
                                      "dependency.proto": DEPENDENCY_PROTO}, "test.DependencyMessage")
    message = message_class(is_active=True, test_message={"text": "hi", "n": 7})
    serializer = ProtobufSerializer(message_class, sr, {"use.deprecated.format": False,
                                                        "subject.name.strategy": lambda *_: subject("events-value")})
    context = SerializationContext("events", MessageField.VALUE)
    data = serializer(message, context)
    assert int.from_bytes(data[1:5], "big") == dependency_id, "the same schema: the same id"
    assert ProtobufDeserializer(message_class, {"use.deprecated.format": False})(data, context) == message


def test_a_policy_set_through_the_pravega_api_is_the_subjects_level(server_url: str, raw: Raw, ctx: str) -> None:
    pravega = RegistryClient(server_url, ctx)
    # the policy set is the inherited level's, BACKWARD: it is the subject's own all the same
    pravega.create_group("orders", group(policy="Backward"))
    pravega.add_schema("orders", avro_record("Order", field("id", "string")))
    orders = enc(f":.{ctx}:orders")
    assert raw.ok("GET", f"/config/{orders}") == {"compatibilityLevel": "BACKWARD"}
    pravega.update_compatibility("orders", Compatibility.of("Forward"))
    assert raw.ok("GET", f"/config/{orders}") == {"compatibilityLevel": "FORWARD"}
    # removing the subject's level through the Confluent API: it inherits again, and says so
    raw.ok("DELETE", f"/config/{orders}")
    assert raw.error("GET", f"/config/{orders}")[1] == 40408
    assert pravega.get_group("orders").compatibility.policy == "Backward"
    raw.ok("PUT", f"/config/{orders}", {"compatibility": "BACKWARD"})
    assert raw.ok("GET", f"/config/{orders}") == {"compatibilityLevel": "BACKWARD"}

    # a subject the Confluent API created by registering has none until one is set
    users = enc(f":.{ctx}:users-value")
    raw.ok("POST", f"/subjects/{users}/versions", {"schema": avro("User", ("name", "string"))})
    assert raw.error("GET", f"/config/{users}")[1] == 40408
    assert raw.ok("GET", f"/config/{users}", defaultToGlobal="true") == {"compatibilityLevel": "BACKWARD"}
    pravega.update_compatibility("users-value", Compatibility.of("Full"))
    assert raw.ok("GET", f"/config/{users}") == {"compatibilityLevel": "FULL"}
