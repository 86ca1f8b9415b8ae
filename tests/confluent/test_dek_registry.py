"""The DEK registry (``/dek-registry/v1``) that ENCRYPT rules need, with the stock
confluent-kafka client's field encryption (Tink, local KMS) against a real server."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from confluent_kafka.schema_registry import Rule, RuleKind, RuleMode, RuleParams, RuleSet, Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
from confluent_kafka.serialization import MessageField, SerializationContext

from catalog_api.server.config import Settings
from tests.confluent.helpers import Raw, avro, enc
from tests.support.auth import Api, add_user, auth_server, migrated

USER = avro("User", ("id", "string"), {"name": "ssn", "type": "string", "confluent:tags": ["PII"]})
TOPIC = SerializationContext("users", MessageField.VALUE)


def _encrypt_rule(kek: str) -> Rule:
    params = {"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "local-kms://streamcat"}
    return Rule("encryptPii", None, RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT", ["PII"], RuleParams(params),
                None, None, "ERROR,NONE", False)


def _rules() -> RuleRegistry:
    LocalKmsDriver.register()
    registry = RuleRegistry()
    registry.register_executor(FieldEncryptionExecutor())
    return registry


def _serde(server_url: str, subject: str, rule_conf: dict[str, Any] | None) -> tuple[AvroSerializer, AvroDeserializer]:
    sr = SchemaRegistryClient({"url": server_url})
    conf = {"auto.register.schemas": False, "use.latest.version": True,
            "subject.name.strategy": lambda _ctx, _name: subject}
    writer = AvroSerializer(sr, USER, conf=conf, rule_conf=rule_conf, rule_registry=_rules())
    reader = AvroDeserializer(sr, conf={"subject.name.strategy": lambda _ctx, _name: subject},
                              rule_conf=rule_conf, rule_registry=_rules())
    return writer, reader


def test_encrypt_round_trips_a_pii_field_and_the_keys_are_visible(server_url: str, raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:users-value"
    SchemaRegistryClient({"url": server_url}).register_schema(
        subject, Schema(USER, "AVRO", [], None, RuleSet(None, [_encrypt_rule("users-kek")])))
    writer, reader = _serde(server_url, subject, {"secret": "local-secret"})
    data = writer({"id": "u1", "ssn": "123-45-6789"}, TOPIC)
    assert data is not None
    assert b"123-45-6789" not in data
    assert reader(data, TOPIC) == {"id": "u1", "ssn": "123-45-6789"}
    # Without the executor, the field reads as the ciphertext the client wrote.
    plain = AvroDeserializer(SchemaRegistryClient({"url": server_url}),
                             conf={"subject.name.strategy": lambda _ctx, _name: subject})(data, TOPIC)
    assert plain["id"] == "u1"
    assert plain["ssn"] != "123-45-6789"

    rule = raw.ok("GET", f"/subjects/{enc(subject)}/versions/latest")["ruleSet"]["domainRules"][0]
    assert (rule["type"], rule["tags"]) == ("ENCRYPT", ["PII"])
    kek = raw.ok("GET", "/dek-registry/v1/keks/users-kek", context=f".{ctx}")
    assert (kek["kmsType"], kek["kmsKeyId"], kek["shared"]) == ("local-kms", "local-kms://streamcat", False)
    assert raw.ok("GET", "/dek-registry/v1/keks", context=f".{ctx}") == ["users-kek"]
    dek = raw.ok("GET", f"/dek-registry/v1/keks/users-kek/deks/{enc(subject)}/versions/1")
    assert (dek["subject"], dek["version"], dek["algorithm"]) == (subject, 1, "AES256_GCM")
    assert base64.b64decode(dek["encryptedKeyMaterial"])  # only the wrapped key: the registry cannot read it
    assert "keyMaterial" not in dek
    assert raw.ok("GET", f"/dek-registry/v1/keks/users-kek/deks/{enc(subject)}/versions") == [1]


def test_soft_and_hard_deletes_of_keys(raw: Raw, ctx: str) -> None:
    context = f".{ctx}"
    subject = enc(f":.{ctx}:keys-value")
    raw.ok("POST", "/dek-registry/v1/keks?context=" + context,
           {"name": "k1", "kmsType": "aws-kms", "kmsKeyId": "arn:aws:kms:eu-west-1:1:key/a"})
    # The same KEK again is the same KEK; another of that name is a conflict.
    raw.ok("POST", "/dek-registry/v1/keks?context=" + context,
           {"name": "k1", "kmsType": "aws-kms", "kmsKeyId": "arn:aws:kms:eu-west-1:1:key/a"})
    assert raw.error("POST", "/dek-registry/v1/keks?context=" + context,
                     {"name": "k1", "kmsType": "aws-kms", "kmsKeyId": "other"})[:2] == (409, 40972)
    wrapped = base64.b64encode(b"wrapped-by-the-client").decode()
    for version in (1, 2):
        raw.ok("POST", f"/dek-registry/v1/keks/k1/deks/{subject}",
               {"version": version, "algorithm": "AES256_GCM", "encryptedKeyMaterial": wrapped})
    assert raw.ok("GET", f"/dek-registry/v1/keks/k1/deks/{subject}")["version"] == 2  # the latest
    assert raw.error("POST", f"/dek-registry/v1/keks/k1/deks/{subject}",
                     {"version": 1, "encryptedKeyMaterial": base64.b64encode(b"other").decode()})[:2] == (409, 40972)
    assert raw.error("POST", f"/dek-registry/v1/keks/k1/deks/{subject}", {"version": 3})[:2] == (422, 42271)

    # A KEK with live DEKs cannot go; a DEK must be soft-deleted before it is deleted for good.
    assert raw.error("DELETE", "/dek-registry/v1/keks/k1", context=context)[:2] == (422, 42272)
    assert raw.error("DELETE", f"/dek-registry/v1/keks/k1/deks/{subject}/versions/2", permanent="true")[:2] == (
        422, 40471)
    raw.call("DELETE", f"/dek-registry/v1/keks/k1/deks/{subject}/versions/2")
    assert raw.ok("GET", f"/dek-registry/v1/keks/k1/deks/{subject}")["version"] == 1
    assert raw.ok("GET", f"/dek-registry/v1/keks/k1/deks/{subject}/versions/2", deleted="true")["deleted"] is True
    assert raw.ok("GET", f"/dek-registry/v1/keks/k1/deks/{subject}/versions", deleted="true") == [1, 2]
    assert raw.call("POST", f"/dek-registry/v1/keks/k1/deks/{subject}/versions/2/undelete").status_code == 204
    assert raw.ok("GET", f"/dek-registry/v1/keks/k1/deks/{subject}")["version"] == 2

    assert raw.call("DELETE", f"/dek-registry/v1/keks/k1/deks/{subject}").status_code == 204
    assert raw.error("GET", f"/dek-registry/v1/keks/k1/deks/{subject}")[:2] == (404, 40470)
    assert raw.call("DELETE", f"/dek-registry/v1/keks/k1/deks/{subject}", permanent="true").status_code == 204
    assert raw.error("GET", f"/dek-registry/v1/keks/k1/deks/{subject}", deleted="true")[:2] == (404, 40470)

    assert raw.error("DELETE", "/dek-registry/v1/keks/k1", context=context, permanent="true")[:2] == (422, 40471)
    assert raw.call("DELETE", "/dek-registry/v1/keks/k1", None, context=context).status_code == 204
    assert raw.error("GET", "/dek-registry/v1/keks/k1", context=context)[:2] == (404, 40470)
    assert raw.ok("GET", "/dek-registry/v1/keks/k1", context=context, deleted="true")["deleted"] is True
    assert raw.call("DELETE", "/dek-registry/v1/keks/k1", None, context=context,
                    permanent="true").status_code == 204
    assert raw.error("GET", "/dek-registry/v1/keks/k1", context=context, deleted="true")[:2] == (404, 40470)


def test_a_shared_kek_lets_clients_encrypt_without_the_kms(server_url: str, raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:shared-value"
    kek = raw.ok("POST", f"/dek-registry/v1/keks?context=.{ctx}", {
        "name": "shared-kek", "kmsType": "local-kms", "kmsKeyId": "local-kms://streamcat", "shared": True,
        "kmsProps": {"secret": "held-by-the-registry"}})
    assert kek["shared"] is True
    assert "kmsProps" not in kek  # the secret is never answered
    SchemaRegistryClient({"url": server_url}).register_schema(
        subject, Schema(USER, "AVRO", [], None, RuleSet(None, [_encrypt_rule("shared-kek")])))
    writer, reader = _serde(server_url, subject, None)  # no KMS secret on the client side
    data = writer({"id": "u2", "ssn": "987-65-4321"}, TOPIC)
    assert data is not None
    assert b"987-65-4321" not in data
    assert reader(data, TOPIC) == {"id": "u2", "ssn": "987-65-4321"}
    dek = raw.ok("GET", f"/dek-registry/v1/keks/shared-kek/deks/{enc(subject)}")
    assert len(base64.b64decode(dek["keyMaterial"])) == 34  # a Tink AesGcmKey of 32 bytes, made by the registry

    # A shared KEK the registry cannot use is refused up front.
    assert raw.error("POST", f"/dek-registry/v1/keks?context=.{ctx}", {
        "name": "cloud", "kmsType": "aws-kms", "kmsKeyId": "arn:x", "shared": True})[:2] == (422, 42271)


def test_keys_need_the_same_grants_as_the_subjects(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'auth.db'}")
    add_user(url, "root", "root-password", "admin")
    add_user(url, "ann", "ann-password")
    with auth_server(Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",))) as base:
        admin = Api(base, auth=("root", "root-password"))
        admin.ok("POST", "/v1/admin/grants", json={"principal": "ann", "permission": "write",
                                                   "resource": "namespace:team"})
        ann = Api(base, auth=("ann", "ann-password"))
        wrapped = base64.b64encode(b"k").decode()
        kek = {"name": "team-kek", "kmsType": "aws-kms", "kmsKeyId": "arn:k"}
        assert Api(base).call("POST", "/dek-registry/v1/keks?context=.team", json=kek).status_code == 401
        assert ann.ok("POST", "/dek-registry/v1/keks?context=.team", json=kek)["name"] == "team-kek"
        body = {"encryptedKeyMaterial": wrapped}
        assert ann.ok("POST", f"/dek-registry/v1/keks/team-kek/deks/{enc(':.team:orders')}", json=body)
        refused = ann.call("POST", f"/dek-registry/v1/keks/team-kek/deks/{enc(':.other:orders')}", json=body)
        assert (refused.status_code, refused.json()["error_code"]) == (403, 403)
        assert ann.call("DELETE", f"/dek-registry/v1/keks/team-kek/deks/{enc(':.team:orders')}").status_code == 403
        assert ann.call("DELETE", "/dek-registry/v1/keks/team-kek?context=.team").status_code == 403
        answer = admin.ok("GET", f"/dek-registry/v1/keks/team-kek/deks/{enc(':.team:orders')}")
        assert answer["subject"] == ":.team:orders"
