"""Confluent's semantics on the registry's engine: levels for every format, listings, normalize."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.confluent.helpers import Raw, avro, enc

PROTO_V1 = (
    'syntax = "proto3";\npackage lv;\nmessage Event { string id = 1; int64 at = 2; }\nmessage Other { int32 x = 1; }\n'
)
JSON_V1 = {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": False}


def _register(raw: Raw, subject: str, schema: str, kind: str = "AVRO") -> dict[str, int]:
    return raw.ok("POST", f"/subjects/{enc(subject)}/versions", {"schema": schema, "schemaType": kind})


@pytest.mark.parametrize(
    ("level", "accepts_added_required", "accepts_removed"),
    [
        ("BACKWARD", False, True),
        ("FORWARD", True, False),
        ("FULL", False, False),
        ("NONE", True, True),
    ],
)
def test_avro_levels(raw: Raw, ctx: str, level: str, accepts_added_required: bool, accepts_removed: bool) -> None:
    subject = f":.{ctx}:s"
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": level})
    _register(raw, subject, avro("R", ("a", "string"), ("b", "int")))
    added = {"schema": avro("R", ("a", "string"), ("b", "int"), ("c", "int"))}
    removed = {"schema": avro("R", ("a", "string"))}
    for body, expected in ((added, accepts_added_required), (removed, accepts_removed)):
        answer = raw.ok("POST", f"/compatibility/subjects/{enc(subject)}/versions/latest", body)
        assert answer["is_compatible"] is expected, (level, body)


def test_transitive_levels_check_every_version(raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:t"
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "NONE"})
    _register(raw, subject, avro("R", ("a", "string")))
    _register(raw, subject, avro("R", ("a", "int")))
    candidate = {"schema": avro("R", ("a", "int"), {"name": "b", "type": "int", "default": 0})}
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "BACKWARD"})
    assert raw.ok("POST", f"/compatibility/subjects/{enc(subject)}/versions", candidate)["is_compatible"]
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "BACKWARD_TRANSITIVE"})
    verdict = raw.ok("POST", f"/compatibility/subjects/{enc(subject)}/versions", candidate, verbose="true")
    assert verdict["is_compatible"] is False
    assert any("version 1" in m and "$.a" in m for m in verdict["messages"])
    # against one chosen version, the level's direction only
    assert raw.ok("POST", f"/compatibility/subjects/{enc(subject)}/versions/2", candidate)["is_compatible"]
    assert raw.ok("POST", f"/compatibility/subjects/{enc(subject)}/versions/-1", candidate)["is_compatible"]


def test_protobuf_levels_name_the_message_and_field(raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:proto"
    _register(raw, subject, PROTO_V1, "PROTOBUF")
    changed = PROTO_V1.replace("int64 at = 2;", "string at = 2;")
    status, code, message = raw.error("POST", f"/subjects/{enc(subject)}/versions",
                                       {"schema": changed, "schemaType": "PROTOBUF"})
    assert (status, code) == (409, 409)
    assert "lv.Event" in message
    assert "field 2" in message
    # every message of the file is checked, not only the first
    other = PROTO_V1.replace("int32 x = 1;", "string x = 1;")
    status, code, message = raw.error("POST", f"/subjects/{enc(subject)}/versions",
                                       {"schema": other, "schemaType": "PROTOBUF"})
    assert code == 409
    assert "lv.Other" in message
    added = PROTO_V1.replace("int64 at = 2;", "int64 at = 2; repeated string tags = 3;")
    assert _register(raw, subject, added, "PROTOBUF")["id"] > 0


def test_json_schema_levels_name_the_path(raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:json"
    _register(raw, subject, json.dumps(JSON_V1), "JSON")
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "FORWARD"})
    wider = dict(JSON_V1, properties={"id": {"type": ["string", "integer"]}})
    status, code, message = raw.error("POST", f"/subjects/{enc(subject)}/versions",
                                       {"schema": json.dumps(wider), "schemaType": "JSON"})
    assert (status, code) == (409, 409)
    assert "$.id" in message
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "BACKWARD"})
    assert _register(raw, subject, json.dumps(wider), "JSON")["id"] > 0


def test_another_schema_type_in_a_subject(raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:mixed"
    _register(raw, subject, avro("R", ("a", "int")))
    _status, code, message = raw.error("POST", f"/subjects/{enc(subject)}/versions",
                                       {"schema": json.dumps(JSON_V1), "schemaType": "JSON"})
    assert code == 409
    assert "JSON" in message
    # once no live version is left, the subject takes any type
    raw.ok("DELETE", f"/subjects/{enc(subject)}")
    assert _register(raw, subject, json.dumps(JSON_V1), "JSON")["id"] > 0
    assert raw.ok("GET", f"/subjects/{enc(subject)}/versions/latest")["schemaType"] == "JSON"


def test_versions_latest_and_deleted(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:v")
    optional = {"name": "f0", "type": ["null", "int"], "default": None}
    first, second = avro("R", ("a", "int")), avro("R", ("a", "int"), optional)
    ids = [_register(raw, f":.{ctx}:v", schema)["id"] for schema in (first, second)]
    assert raw.ok("GET", f"/subjects/{subject}/versions/latest")["id"] == ids[1]
    assert raw.ok("GET", f"/subjects/{subject}/versions/-1")["version"] == 2
    raw.ok("DELETE", f"/subjects/{subject}/versions/latest")
    assert raw.ok("GET", f"/subjects/{subject}/versions/latest")["version"] == 1
    assert raw.error("GET", f"/subjects/{subject}/versions/2")[1] == 40402
    assert raw.ok("GET", f"/subjects/{subject}/versions/2", deleted="true")["id"] == ids[1]
    assert raw.ok("GET", f"/subjects/{subject}/versions/latest", deleted="true")["version"] == 2
    assert raw.call("GET", f"/subjects/{subject}/versions/1/schema").text == avro("R", ("a", "int"))
    assert raw.ok("POST", f"/subjects/{subject}", {"schema": second}, deleted="true")["version"] == 2
    assert raw.error("POST", f"/subjects/{subject}", {"schema": second})[1] == 40403


def test_listings_and_pagination(raw: Raw, ctx: str) -> None:
    names = [f"p{i:02d}" for i in range(12)]
    for name in names:
        _register(raw, f":.{ctx}:{name}", avro("R", ("a", "int")))
        _register(raw, f":.{ctx}:{name}", avro("R", ("a", "int"), {"name": "b", "type": "int", "default": 1}))
    prefix = f":.{ctx}:"
    listed = raw.ok("GET", "/subjects", subjectPrefix=prefix)
    assert listed == [prefix + n for n in names]
    assert raw.ok("GET", "/subjects", subjectPrefix=prefix, offset=5, limit=3) == [prefix + n for n in names[5:8]]
    assert raw.ok("GET", "/subjects", subjectPrefix=prefix + "p1") == [prefix + n for n in names[10:]]
    assert prefix + "p00" in raw.ok("GET", "/subjects")  # every context by default
    assert prefix + "p00" not in raw.ok("GET", "/subjects", subjectPrefix="p")  # the default context only
    schemas = raw.ok("GET", "/schemas", subjectPrefix=prefix)
    assert [(s["subject"], s["version"]) for s in schemas] == [(prefix + n, v) for n in names for v in (1, 2)]
    latest = raw.ok("GET", "/schemas", subjectPrefix=prefix, latestOnly="true", offset=2, limit=2)
    assert [(s["subject"], s["version"]) for s in latest] == [(prefix + "p02", 2), (prefix + "p03", 2)]
    schema_id = schemas[0]["id"]
    assert raw.ok("GET", f"/schemas/ids/{schema_id}/subjects", subject=prefix + "p03") == [prefix + "p03"]
    assert len(raw.ok("GET", f"/schemas/ids/{schema_id}/versions", limit=5)) == 5
    assert raw.ok("GET", "/contexts").count(f".{ctx}") == 1
    assert raw.ok("GET", "/contexts")[0] == "."
    assert raw.ok("GET", f"/schemas/ids/{schema_id}", fetchMaxId="true")["maxId"] >= schema_id


def test_normalize(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:n")
    spaced = '{"fields": [{"type": "int", "name": "a"}], "name": "R", "type": "record"}'
    first = raw.ok("POST", f"/subjects/{subject}/versions", {"schema": spaced}, normalize="true")["id"]
    stored = raw.ok("GET", f"/schemas/ids/{first}")["schema"]
    assert json.loads(stored) == json.loads(spaced)
    assert stored != spaced
    # identity is the canonical form either way: reordered keys are the same schema
    assert raw.ok("POST", f"/subjects/{subject}/versions", {"schema": avro("R", ("a", "int"), namespace="")}) == {
        "id": first
    }
    raw.ok("PUT", f"/config/{subject}", {"normalize": True})
    assert raw.ok("GET", f"/config/{subject}", defaultToGlobal="true")["normalize"] is True


def test_concurrent_registrations_get_distinct_numbers(raw: Raw, ctx: str) -> None:
    subject = f":.{ctx}:busy"
    raw.ok("PUT", f"/config/{enc(subject)}", {"compatibility": "NONE"})
    schemas = [avro("R", (f"f{i % 8}", "int")) for i in range(24)]  # 8 distinct schemas, each thrice

    def register(schema: str) -> int:
        return Raw(raw.base).ok("POST", f"/subjects/{enc(subject)}/versions", {"schema": schema})["id"]

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(register, schemas))
    assert len(set(ids)) == 8
    assert all(ids[i] == ids[i % 8] for i in range(24))
    assert raw.ok("GET", f"/subjects/{enc(subject)}/versions") == list(range(1, 9))
