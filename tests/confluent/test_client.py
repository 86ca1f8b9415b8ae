"""The unmodified confluent-kafka SchemaRegistryClient against a running server."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.confluent.helpers import Raw, avro, enc

USER_V1 = avro("User", ("name", "string"))
USER_V2 = avro("User", ("name", "string"), {"name": "age", "type": "int", "default": 0})


def _fresh(server_url: str) -> SchemaRegistryClient:
    # The client caches what it registered and read; a new one asks the server again.
    return SchemaRegistryClient({"url": server_url})


def test_register_read_back_and_list(sr: SchemaRegistryClient, server_url: str, ctx: str) -> None:
    subject = f":.{ctx}:users-value"
    first = sr.register_schema(subject, Schema(USER_V1))
    second = sr.register_schema(subject, Schema(USER_V2))
    assert second != first

    fresh = _fresh(server_url)
    assert fresh.register_schema(subject, Schema(USER_V1)) == first  # re-registering returns the id
    assert fresh.get_schema(first).schema_str == USER_V1
    assert fresh.get_schema(second).schema_type == "AVRO"
    latest = fresh.get_latest_version(subject)
    assert (latest.version, latest.schema_id, latest.subject) == (2, second, subject)
    one = fresh.get_version(subject, 1)
    assert (one.version, one.schema_id, one.schema.schema_str) == (1, first, USER_V1)
    assert fresh.get_versions(subject) == [1, 2]
    assert fresh.get_subjects(subject_prefix=f":.{ctx}:") == [subject]
    found = fresh.lookup_schema(subject, Schema(USER_V2))
    assert (found.version, found.schema_id) == (2, second)
    with pytest.raises(SchemaRegistryError) as missing:
        fresh.lookup_schema(subject, Schema(avro("User", ("other", "long"))))
    assert (missing.value.http_status_code, missing.value.error_code) == (404, 40403)

    # Identical content is the same id under any subject.
    other = f":.{ctx}:copy-value"
    assert fresh.register_schema(other, Schema(USER_V1)) == first
    assert sorted(fresh.get_subjects_by_schema_id(first)) == sorted([subject, other])
    assert {(v.subject, v.version) for v in fresh.get_schema_versions(first)} == {(subject, 1), (other, 1)}
    assert set(fresh.get_schema_types()) == {"AVRO", "JSON", "PROTOBUF"}
    assert f".{ctx}" in fresh.get_contexts()


def test_incompatible_registration_names_the_field(sr: SchemaRegistryClient, ctx: str) -> None:
    subject = f":.{ctx}:orders-value"
    sr.register_schema(subject, Schema(USER_V1))
    broken = Schema(avro("User", ("name", "string"), ("zip", "int")))
    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema(subject, broken)
    assert refused.value.http_status_code == 409
    assert refused.value.error_code == 409
    assert "zip" in refused.value.error_message
    assert subject in refused.value.error_message

    assert sr.test_compatibility(subject, broken) is False
    assert sr.test_compatibility(subject, Schema(USER_V2)) is True
    assert sr.test_compatibility_all_versions(subject, broken) is False
    assert sr.test_compatibility(subject, broken, version=1) is False


def test_verbose_compatibility_lists_the_reasons(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:s")
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1})
    body = {"schema": avro("User", ("name", "long"))}
    answer = raw.ok("POST", f"/compatibility/subjects/{subject}/versions/latest", body, verbose="true")
    assert answer["is_compatible"] is False
    assert any("$.name" in message for message in answer["messages"])
    quiet = raw.ok("POST", f"/compatibility/subjects/{subject}/versions", body)
    assert quiet == {"is_compatible": False}
    fresh = raw.ok("POST", f"/compatibility/subjects/{enc(f':.{ctx}:nobody')}/versions", body)
    assert fresh == {"is_compatible": True}


def test_compatibility_levels(sr: SchemaRegistryClient, ctx: str) -> None:
    subject = f":.{ctx}:levels-value"
    sr.register_schema(subject, Schema(USER_V1))
    with pytest.raises(SchemaRegistryError) as unset:
        sr.get_compatibility(subject)
    assert unset.value.error_code == 40408
    assert sr.set_compatibility(subject, "FULL") == {"compatibility": "FULL"}
    assert sr.get_compatibility(subject) == "FULL"
    assert sr.get_config(subject).compatibility_level.value == "FULL"
    # FULL: a new field needs a default both ways; a removed field too.
    with pytest.raises(SchemaRegistryError):
        sr.register_schema(subject, Schema(avro("User", ("name", "string"), ("zip", "int"))))
    sr.set_compatibility(subject, "NONE")
    sr.register_schema(subject, Schema(avro("User", ("zip", "int"))))
    deleted = sr.delete_config(subject)
    assert deleted.compatibility_level.value == "NONE"
    with pytest.raises(SchemaRegistryError):
        sr.get_compatibility(subject)
    assert sr.get_config().compatibility_level.value == "BACKWARD"


def test_subject_config_falls_back_to_the_context_and_the_registry(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:fallback")
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": USER_V1})
    assert raw.ok("GET", f"/config/{subject}", defaultToGlobal="true") == {"compatibilityLevel": "BACKWARD"}
    assert raw.error("GET", f"/config/{subject}")[1] == 40408
    raw.ok("PUT", f"/config/{enc(f':.{ctx}:')}", {"compatibility": "NONE"})
    assert raw.ok("GET", f"/config/{subject}", defaultToGlobal="True") == {"compatibilityLevel": "NONE"}
    # the subject follows its context: an incompatible schema is accepted now
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": avro("User", ("zip", "int"))})
    raw.ok("PUT", f"/config/{subject}", {"compatibility": "FORWARD"})
    raw.ok("DELETE", f"/config/{enc(f':.{ctx}:')}")
    assert raw.ok("GET", f"/config/{subject}") == {"compatibilityLevel": "FORWARD"}
    assert raw.ok("GET", f"/config/{enc(f':.{ctx}:other')}", defaultToGlobal="true") == {
        "compatibilityLevel": "BACKWARD"
    }


def test_soft_then_permanent_deletes(sr: SchemaRegistryClient, raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:deletes"
    sr.register_schema(subject, Schema(USER_V1))
    sr.register_schema(subject, Schema(USER_V2))
    third = sr.register_schema(subject, Schema(avro("User", ("name", "string"))  # a new text, same schema
                                                 .replace('"string"', '"string" ')))
    assert sr.get_versions(subject) == [1, 2]  # same content: no third version
    assert third == sr.get_version(subject, 1).schema_id

    with pytest.raises(SchemaRegistryError) as not_soft:
        sr.delete_version(subject, 1, permanent=True)
    assert not_soft.value.error_code == 40407
    assert sr.delete_version(subject, 1) == 1
    with pytest.raises(SchemaRegistryError) as twice:
        sr.delete_version(subject, 1)
    assert twice.value.error_code == 40406
    assert sr.get_versions(subject) == [2]
    assert sr.get_versions(subject, deleted=True) == [1, 2]
    assert raw.ok("GET", f"/subjects/{enc(subject)}/versions", deleted_only="true") == [1]
    assert sr.delete_version(subject, 1, permanent=True) == 1
    assert sr.get_versions(subject, deleted=True) == [2]

    with pytest.raises(SchemaRegistryError) as subject_not_soft:
        sr.delete_subject(subject, permanent=True)
    assert subject_not_soft.value.error_code == 40405
    assert sr.delete_subject(subject) == [2]
    assert subject not in sr.get_subjects(subject_prefix=f":.{ctx}:")
    assert subject in sr.get_subjects(subject_prefix=f":.{ctx}:", deleted=True)
    assert raw.ok("GET", "/subjects", subjectPrefix=f":.{ctx}:", deletedOnly="TRUE") == [subject]
    # re-registering after a soft delete makes a new version with the same id
    sr = _fresh(raw.base)  # the client remembers what it registered, and would not ask again
    again = sr.register_schema(subject, Schema(USER_V2))
    assert sr.get_versions(subject) == [3]
    assert sr.get_version(subject, 3).schema_id == again
    sr.delete_subject(subject)
    assert sr.delete_subject(subject, permanent=True) == [2, 3]
    with pytest.raises(SchemaRegistryError) as gone:
        sr.get_versions(subject)
    assert gone.value.error_code == 40401
    # a permanently deleted subject starts again at version 1
    _fresh(raw.base).register_schema(subject, Schema(USER_V1))
    assert sr.get_versions(subject) == [1]


def test_numbers_survive_permanent_deletes(sr: SchemaRegistryClient, ctx: str) -> None:
    subject = f":.{ctx}:numbers"
    sr.set_compatibility(subject, "NONE")
    for i in range(4):
        sr.register_schema(subject, Schema(avro("R", (f"f{i}", "int"))))
    sr.delete_version(subject, 2)
    sr.delete_version(subject, 2, permanent=True)
    assert sr.get_versions(subject) == [1, 3, 4]
    assert sr.get_version(subject, 4).schema.schema_str == avro("R", ("f3", "int"))
    sr.register_schema(subject, Schema(avro("R", ("f4", "int"))))
    assert sr.get_versions(subject) == [1, 3, 4, 5]
    sr.delete_version(subject, 5)
    sr.delete_version(subject, 5, permanent=True)
    sr.register_schema(subject, Schema(avro("R", ("f5", "int"))))
    assert sr.get_versions(subject) == [1, 3, 4, 5]  # the highest number is free again, as in Confluent


def test_modes(sr: SchemaRegistryClient, raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:modes"
    sr.register_schema(subject, Schema(USER_V1))
    with pytest.raises(SchemaRegistryError) as unset:
        sr.get_mode(subject)
    assert unset.value.error_code == 40409
    assert sr.update_mode(subject, "READONLY") == "READONLY"
    assert sr.get_mode(subject) == "READONLY"
    with pytest.raises(SchemaRegistryError) as read_only:
        sr.register_schema(subject, Schema(USER_V2))
    assert (read_only.value.http_status_code, read_only.value.error_code) == (422, 42205)
    with pytest.raises(SchemaRegistryError):
        sr.delete_version(subject, 1)
    assert sr.delete_mode(subject) == "READONLY"
    sr.register_schema(subject, Schema(USER_V2))
    assert sr.get_global_mode() == "READWRITE"
    assert raw.ok("GET", f"/mode/{enc(subject)}", defaultToGlobal="true") == {"mode": "READWRITE"}

    # READONLY_OVERRIDE of the context wins over the subject's own mode
    raw.ok("PUT", f"/mode/{enc(subject)}", {"mode": "READWRITE"})
    raw.ok("PUT", f"/mode/{enc(f':.{ctx}:')}", {"mode": "READONLY_OVERRIDE"})
    assert raw.error("POST", f"/subjects/{enc(subject)}/versions", {"schema": USER_V1})[1] == 42205
    raw.ok("DELETE", f"/mode/{enc(f':.{ctx}:')}")
    with pytest.raises(SchemaRegistryError) as bad:
        sr.update_mode(subject, "SOMETIMES")
    assert bad.value.error_code == 42204


def test_import_mode_registers_with_the_given_id_and_version(sr: SchemaRegistryClient, raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:imported")
    taken = sr.register_schema(f":.{ctx}:other", Schema(USER_V1))
    # IMPORT needs an empty subject (or force)
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:busy')}/versions", {"schema": USER_V2})
    assert raw.error("PUT", f"/mode/{enc(f':.{ctx}:busy')}", {"mode": "IMPORT"})[1] == 42205
    assert raw.ok("PUT", f"/mode/{enc(f':.{ctx}:busy')}", {"mode": "IMPORT"}, force="true") == {"mode": "IMPORT"}

    assert raw.error("POST", f"/subjects/{subject}/versions", {"schema": USER_V2, "id": 7_000_001})[1] == 42205
    raw.ok("PUT", f"/mode/{subject}", {"mode": "IMPORT"})
    schema = avro("Imported", ("a", "string"))
    assert raw.ok("POST", f"/subjects/{subject}/versions", {"schema": schema, "id": 7_000_001, "version": 3}) == {
        "id": 7_000_001
    }
    assert raw.ok("GET", f"/subjects/{subject}/versions") == [3]
    assert raw.ok("GET", "/schemas/ids/7000001")["schema"] == schema
    # the same again: idempotent; another schema under a taken id, or an old version number: refused
    assert raw.ok("POST", f"/subjects/{subject}/versions", {"schema": schema, "id": 7_000_001, "version": 3}) == {
        "id": 7_000_001
    }
    other = {"schema": avro("Imported", ("b", "string")), "id": 7_000_001, "version": 4}
    assert raw.error("POST", f"/subjects/{subject}/versions", other)[1] == 42205
    older = {"schema": avro("Imported", ("c", "string")), "id": 7_000_002, "version": 2}
    assert raw.error("POST", f"/subjects/{subject}/versions", older)[1] == 42205
    used = {"schema": USER_V1, "id": 7_000_003, "version": 5}
    assert raw.error("POST", f"/subjects/{subject}/versions", used)[1] == 42205
    # no compatibility checks while importing; ids keep growing past the imported one
    incompatible = {"schema": avro("Imported", ("a", "long")), "id": 7_000_004, "version": 4}
    assert raw.ok("POST", f"/subjects/{subject}/versions", incompatible) == {"id": 7_000_004}
    raw.ok("DELETE", f"/mode/{subject}")
    fresh = sr.register_schema(f":.{ctx}:after", Schema(avro("After", ("x", "int"))))
    assert fresh > 7_000_004 > taken


def test_percent_encoded_subject_names_round_trip(sr: SchemaRegistryClient, ctx: str) -> None:
    names = ["a/b", "with space", "ümlaut-value", "x%2Fy", "dots.and-dashes", "a//b/", "colon:inside", "q?&=#"]
    for name in names:
        subject = f":.{ctx}:{name}"
        schema_id = sr.register_schema(subject, Schema(USER_V1))
        assert sr.get_latest_version(subject).subject == subject
        assert sr.get_version(subject, 1).schema_id == schema_id
    assert sorted(sr.get_subjects(subject_prefix=f":.{ctx}:")) == sorted(f":.{ctx}:{n}" for n in names)
    assert sr.delete_subject(f":.{ctx}:a/b") == [1]
