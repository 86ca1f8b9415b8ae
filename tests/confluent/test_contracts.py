"""Data contracts through the Confluent API: metadata and rule sets stored per version, merged
from configuration, and run by the stock confluent-kafka client's rule executors (CEL,
CEL_FIELD, JSONata, DLQ) against a real server.

No Kafka broker is involved: serializers are called with a SerializationContext, as a producer
calls them, and the DLQ action is handed a producer that records what it is asked to send.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.schema_registry.rules.cel.cel_field_executor import CelFieldExecutor
from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction
from confluent_kafka.schema_registry.rules.jsonata.jsonata_executor import JsonataExecutor
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from tests.confluent.helpers import Raw, avro, enc

ORDER = avro("Order", ("id", "string"), ("qty", "int"), {"name": "note", "type": "string", "confluent:tags": ["PII"]})


def _rule(name: str, kind: str, mode: str, kind_type: str, expr: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "mode": mode, "type": kind_type, "expr": expr, **extra}


def _rules() -> RuleRegistry:
    registry = RuleRegistry()
    for executor in (CelExecutor(), CelFieldExecutor(), JsonataExecutor()):
        registry.register_executor(executor)
    return registry


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _strategy(subject: str) -> Any:
    return lambda _serialization, _record: subject


# -- storage, identity, merge -------------------------------------------------------------------------


def test_contracts_are_stored_per_version_and_part_of_the_schema(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:orders-value")
    positive = {"domainRules": [_rule("qtyPositive", "CONDITION", "WRITE", "CEL", "message.qty > 0")]}
    body = {"schema": ORDER, "metadata": {"properties": {"owner": "shop"}}, "ruleSet": positive}
    first = raw.ok("POST", f"/subjects/{subject}/versions", body)["id"]
    assert raw.ok("POST", f"/subjects/{subject}/versions", body)["id"] == first  # the same contract: idempotent
    # Without a contract, a registration inherits the latest version's: the same schema again.
    assert raw.ok("POST", f"/subjects/{subject}/versions", {"schema": ORDER})["id"] == first
    assert raw.ok("GET", f"/subjects/{subject}/versions") == [1]

    stricter = {"domainRules": [_rule("qtySmall", "CONDITION", "WRITE", "CEL", "message.qty < 100")]}
    second = raw.ok("POST", f"/subjects/{subject}/versions", {"schema": ORDER, "ruleSet": stricter})["id"]
    assert second != first
    assert raw.ok("GET", f"/subjects/{subject}/versions") == [1, 2]

    version = raw.ok("GET", f"/subjects/{subject}/versions/2")
    # Metadata not given is inherited from version 1; the rule set given replaces it.
    assert version["metadata"] == {"properties": {"owner": "shop"}}
    assert [r["name"] for r in version["ruleSet"]["domainRules"]] == ["qtySmall"]
    by_id = raw.ok("GET", f"/schemas/ids/{first}")
    assert by_id["ruleSet"]["domainRules"][0] == {**positive["domainRules"][0], "disabled": False}
    listed = raw.ok("GET", "/schemas", subjectPrefix=f":.{ctx}:")
    assert [bool(v.get("ruleSet")) for v in listed] == [True, True]

    # A lookup without a contract finds the newest version of the text; with one, that version.
    assert raw.ok("POST", f"/subjects/{subject}", {"schema": ORDER})["version"] == 2
    assert raw.ok("POST", f"/subjects/{subject}", {**body})["version"] == 1

    # The Pravega API shows the same rule set in the version's properties.
    group = raw.ok("GET", "/v1/groups/orders-value/schemas/versions", namespace=ctx)
    shown = [json.loads(v["schemaInfo"]["properties"]["streamcat.ruleSet"]) for v in group["schemas"]]
    assert [r["domainRules"][0]["name"] for r in shown] == ["qtyPositive", "qtySmall"]


def test_invalid_rule_sets_are_refused_with_confluents_code(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:bad-value")
    cases = {
        "Missing rule name": [_rule("", "CONDITION", "WRITE", "CEL", "true")],
        "Illegal initial character": [_rule("1st", "CONDITION", "WRITE", "CEL", "true")],
        "Missing rule type": [_rule("r", "CONDITION", "WRITE", "", "true")],
        "Domain rules can only be WRITE, READ, WRITEREAD": [_rule("r", "CONDITION", "UPGRADE", "CEL", "true")],
        "duplicate name": [_rule("r", "CONDITION", "WRITE", "CEL", "true")] * 2,
        "Multiple actions": [_rule("r", "CONDITION", "WRITE", "CEL", "true", onFailure="DLQ,ERROR")],
    }
    for wanted, rules in cases.items():
        status, code, message = raw.error("POST", f"/subjects/{subject}/versions",
                                          {"schema": ORDER, "ruleSet": {"domainRules": rules}})
        assert (status, code) == (422, 42210), message
        assert wanted in message, (wanted, message)
    assert raw.call("GET", f"/subjects/{subject}/versions").status_code == 404  # nothing half-written


def test_default_and_override_config_merge_into_registrations(raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:merged-value"
    default = {"domainRules": [_rule("audit", "CONDITION", "WRITE", "CEL", "true"),
                               _rule("qtyPositive", "CONDITION", "WRITE", "CEL", "message.qty > 0")]}
    override = {"domainRules": [_rule("mandatory", "CONDITION", "WRITE", "CEL", "message.id != ''")]}
    raw.ok("PUT", f"/config/{enc(subject)}", {
        "defaultRuleSet": default, "overrideRuleSet": override,
        "defaultMetadata": {"properties": {"owner": "default", "team": "shop"}},
        "overrideMetadata": {"properties": {"owner": "platform"}},
    })
    config = raw.ok("GET", f"/config/{enc(subject)}")
    assert config["overrideMetadata"] == {"properties": {"owner": "platform"}}
    assert [r["name"] for r in config["defaultRuleSet"]["domainRules"]] == ["audit", "qtyPositive"]

    mine = {"domainRules": [_rule("qtyPositive", "CONDITION", "WRITE", "CEL", "message.qty >= 1")]}
    raw.ok("POST", f"/subjects/{enc(subject)}/versions",
           {"schema": ORDER, "ruleSet": mine, "metadata": {"properties": {"owner": "me", "app": "x"}}})
    found = raw.ok("GET", f"/subjects/{enc(subject)}/versions/latest")
    # merge(merge(default, specific), override): the request's rule replaces the default of its
    # name, the override comes last; override properties win.
    assert [(r["name"], r["expr"]) for r in found["ruleSet"]["domainRules"]] == [
        ("audit", "true"), ("qtyPositive", "message.qty >= 1"), ("mandatory", "message.id != ''")]
    assert found["metadata"]["properties"] == {"owner": "platform", "team": "shop", "app": "x"}

    raw.ok("DELETE", f"/config/{enc(subject)}")
    assert raw.call("GET", f"/config/{enc(subject)}").json()["error_code"] == 40408


def test_compatibility_group_checks_within_a_major_version(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:grouped-value")
    raw.ok("PUT", f"/config/{subject}", {"compatibility": "BACKWARD", "compatibilityGroup": "major"})
    v1 = avro("Item", ("id", "string"))
    v2 = avro("Item", ("key", "long"))  # not backward compatible with v1
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": v1, "metadata": {"properties": {"major": "1"}}})
    status, code, _ = raw.error("POST", f"/subjects/{subject}/versions",
                                {"schema": v2, "metadata": {"properties": {"major": "1"}}})
    assert (status, code) == (409, 409)
    compatible = raw.ok("POST", f"/compatibility/subjects/{subject}/versions",
                        {"schema": v2, "metadata": {"properties": {"major": "2"}}})
    assert compatible == {"is_compatible": True}  # a new major version: nothing to be compatible with
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": v2, "metadata": {"properties": {"major": "2"}}})
    assert raw.ok("POST", f"/compatibility/subjects/{subject}/versions",
                  {"schema": v1, "metadata": {"properties": {"major": "2"}}}) == {"is_compatible": False}
    assert raw.ok("GET", f"/config/{subject}")["compatibilityGroup"] == "major"
    latest_1 = raw.ok("GET", f"/subjects/{subject}/metadata", key="major", value="1")
    assert (latest_1["version"], json.loads(latest_1["schema"])["fields"][0]["name"]) == (1, "id")
    assert raw.error("GET", f"/subjects/{subject}/metadata", key="major", value="3")[:2] == (404, 40402)


# -- the stock client's rule executors ----------------------------------------------------------------


def test_a_cel_condition_refuses_records_on_serialize_and_on_deserialize(server_url: str, ctx: str) -> None:
    sr = SchemaRegistryClient({"url": server_url})
    subject = f":.{ctx}:cel-value"
    rule = Rule("qtyPositive", None, RuleKind.CONDITION, RuleMode.WRITEREAD, "CEL", None, None, "message.qty > 0",
                None, None, False)
    sr.register_schema(subject, Schema(ORDER, "AVRO", [], None, RuleSet(None, [rule])))
    rules = _rules()
    conf = {"auto.register.schemas": False, "use.latest.version": True, "subject.name.strategy": _strategy(subject)}
    serialize = AvroSerializer(sr, ORDER, conf=conf, rule_registry=rules)
    data = serialize({"id": "o1", "qty": 2, "note": "n"}, _ctx("orders"))
    with pytest.raises(SerializationError) as refused:
        serialize({"id": "o2", "qty": 0, "note": "n"}, _ctx("orders"))
    assert "message.qty > 0" in str(refused.value.__cause__)

    # A record written before the rule existed is refused when read.
    plain = f":.{ctx}:plain-value"
    sr.register_schema(plain, Schema(ORDER, "AVRO"))
    old = AvroSerializer(sr, ORDER, conf={"subject.name.strategy": _strategy(plain)})(
        {"id": "o3", "qty": -5, "note": "n"}, _ctx("orders"))
    sr.register_schema(plain, Schema(ORDER, "AVRO", [], None, RuleSet(None, [rule])))
    reader = AvroDeserializer(SchemaRegistryClient({"url": server_url}),
                              conf={"use.latest.version": True, "subject.name.strategy": _strategy(plain)},
                              rule_registry=rules)
    with pytest.raises(SerializationError) as refused:
        reader(old, _ctx("orders"))
    assert "message.qty > 0" in str(refused.value.__cause__)
    checked = AvroDeserializer(sr, conf={"subject.name.strategy": _strategy(subject)}, rule_registry=rules)
    assert checked(data, _ctx("orders")) == {"id": "o1", "qty": 2, "note": "n"}


def test_rules_hold_for_json_schemas_too(server_url: str, ctx: str) -> None:
    sr = SchemaRegistryClient({"url": server_url})
    subject = f":.{ctx}:json-value"
    schema = json.dumps({"type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]})
    rule = Rule("qtyPositive", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None, "message.qty > 0",
                None, None, False)
    sr.register_schema(subject, Schema(schema, "JSON", [], None, RuleSet(None, [rule])))
    conf = {"auto.register.schemas": False, "use.latest.version": True, "subject.name.strategy": _strategy(subject)}
    serialize = JSONSerializer(schema, sr, conf=conf, rule_registry=_rules())
    assert serialize({"qty": 3}, _ctx("orders"))
    with pytest.raises(SerializationError):
        serialize({"qty": -1}, _ctx("orders"))


def test_cel_field_transforms_tagged_fields(server_url: str, ctx: str) -> None:
    sr = SchemaRegistryClient({"url": server_url})
    subject = f":.{ctx}:masked-value"
    rule = Rule("maskPii", None, RuleKind.TRANSFORM, RuleMode.WRITE, "CEL_FIELD", ["PII"], None,
                "typeName == 'STRING' ; 'xxx-' + value", None, None, False)
    sr.register_schema(subject, Schema(ORDER, "AVRO", [], None, RuleSet(None, [rule])))
    conf = {"auto.register.schemas": False, "use.latest.version": True, "subject.name.strategy": _strategy(subject)}
    data = AvroSerializer(sr, ORDER, conf=conf, rule_registry=_rules())({"id": "o1", "qty": 1, "note": "ada"},
                                                                       _ctx("orders"))
    read = AvroDeserializer(sr, conf={"subject.name.strategy": _strategy(subject)})(data, _ctx("orders"))
    assert read == {"id": "o1", "qty": 1, "note": "xxx-ada"}  # the tagged field only


def test_jsonata_migrations_between_major_versions(server_url: str, ctx: str) -> None:
    sr = SchemaRegistryClient({"url": server_url})
    subject = f":.{ctx}:people-value"
    raw = Raw(server_url)
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "BACKWARD", "compatibilityGroup": "application.major"})
    v1 = avro("Person", ("name", "string"), ("age", "int"))
    v2 = avro("Person", ("full_name", "string"), ("age", "int"))
    up = Rule("renameUp", None, RuleKind.TRANSFORM, RuleMode.UPGRADE, "JSONATA", None, None,
              "$merge([$sift($, function($v, $k) {$k != 'name'}), {'full_name': $.name}])", None, None, False)
    down = Rule("renameDown", None, RuleKind.TRANSFORM, RuleMode.DOWNGRADE, "JSONATA", None, None,
                "$merge([$sift($, function($v, $k) {$k != 'full_name'}), {'name': $.full_name}])", None, None, False)
    major = {"application.major": "1"}
    sr.register_schema(subject, Schema(v1, "AVRO", [], Metadata(None, MetadataProperties(major), None), None))
    major2 = Metadata(None, MetadataProperties({"application.major": "2"}), None)
    sr.register_schema(subject, Schema(v2, "AVRO", [], major2, RuleSet([up, down], None)))

    rules = _rules()
    old_writer = AvroSerializer(sr, v1, rule_registry=rules, conf={
        "auto.register.schemas": False, "use.latest.with.metadata": major, "subject.name.strategy": _strategy(subject)})
    data = old_writer({"name": "ada", "age": 36}, _ctx("people"))
    new_reader = AvroDeserializer(sr, rule_registry=rules, conf={
        "use.latest.with.metadata": {"application.major": "2"}, "subject.name.strategy": _strategy(subject)})
    assert new_reader(data, _ctx("people")) == {"full_name": "ada", "age": 36}

    new_writer = AvroSerializer(sr, v2, rule_registry=rules, conf={
        "auto.register.schemas": False, "use.latest.with.metadata": {"application.major": "2"},
        "subject.name.strategy": _strategy(subject)})
    data2 = new_writer({"full_name": "bob", "age": 7}, _ctx("people"))
    old_reader = AvroDeserializer(sr, rule_registry=rules, conf={
        "use.latest.with.metadata": major, "subject.name.strategy": _strategy(subject)})
    assert old_reader(data2, _ctx("people")) == {"name": "bob", "age": 7}


class _RecordingProducer:
    """Stands in for the Kafka producer the DLQ action sends with (no broker runs here)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, Any, dict[str, Any]]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None, headers: Any = None, **_: Any) -> None:
        self.sent.append((topic, value, key, dict(headers or [])))

    def poll(self, _timeout: float) -> int:
        return 0

    def flush(self, *_: Any) -> int:
        return 0


def test_on_failure_dlq_sends_the_refused_record_to_the_rules_topic(server_url: str, ctx: str) -> None:
    sr = SchemaRegistryClient({"url": server_url})
    subject = f":.{ctx}:dlq-value"
    rule = Rule("qtyPositive", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None,
                RuleParams({"dlq.topic": "orders-dlq"}), "message.qty > 0", None, "DLQ", False)
    sr.register_schema(subject, Schema(ORDER, "AVRO", [], None, RuleSet(None, [rule])))
    shown = Raw(server_url).ok("GET", f"/subjects/{enc(subject)}/versions/latest")["ruleSet"]["domainRules"][0]
    assert (shown["onFailure"], shown["params"]) == ("DLQ", {"dlq.topic": "orders-dlq"})

    producer = _RecordingProducer()
    rules = _rules()
    rules.register_action(DlqAction({"producer": producer}))
    conf = {"auto.register.schemas": False, "use.latest.version": True, "subject.name.strategy": _strategy(subject)}
    serialize = AvroSerializer(sr, ORDER, conf=conf, rule_registry=rules)
    serialize({"id": "ok", "qty": 1, "note": "n"}, _ctx("orders"))
    assert producer.sent == []
    # As the client defines DLQ: the record goes to the rule's topic and the call still fails.
    with pytest.raises(SerializationError):
        serialize({"id": "bad", "qty": 0, "note": "n"}, _ctx("orders"))
    [(topic, value, _key, headers)] = producer.sent
    assert topic == "orders-dlq"
    assert json.loads(value)["id"] == "bad"
    assert headers["__rule.name"] == b"qtyPositive"
