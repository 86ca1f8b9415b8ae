"""Bad input gets Confluent's 4xx codes in Confluent's error body, never a 5xx."""

from __future__ import annotations

import itertools
import json

import pytest
import requests

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.confluent.helpers import CONTENT_TYPE, Raw, avro, enc
from tests.support.net import serve_in_thread

MALFORMED = [
    ({"schema": "{not json"}, "not valid JSON"),
    ({"schema": json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]})}, "nope"),
    ({"schema": json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int",
                                                                        "default": "x"}]})}, "Default"),
    ({"schema": "syntax = \"proto3\"; message M { strin a = 1; }", "schemaType": "PROTOBUF"}, "strin"),
    ({"schema": "bm90IGEgZGVzY3JpcHRvcg==", "schemaType": "PROTOBUF"}, "Protobuf"),
    ({"schema": "$$$", "schemaType": "PROTOBUF"}, "Protobuf"),
    ({"schema": json.dumps({"type": 5}), "schemaType": "JSON"}, "type"),
    ({"schema": "[1, 2]", "schemaType": "JSON"}, "object"),
    ({"schema": avro("R", ("a", "int")), "schemaType": "XML"}, "XML"),
    ({"schema": "syntax = \"proto3\"; service S {}", "schemaType": "PROTOBUF"}, "message or an enum"),
]


@pytest.mark.parametrize(("body", "named"), MALFORMED)
def test_malformed_schemas_are_42201(raw: Raw, ctx: str, body: dict[str, str], named: str) -> None:
    status, code, message = raw.error("POST", f"/subjects/{enc(f':.{ctx}:s')}/versions", body)
    assert (status, code) == (422, 42201)
    assert named in message
    # the same for a lookup and a compatibility test
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:t')}/versions", {"schema": avro("T", ("a", "int"))})
    assert raw.error("POST", f"/subjects/{enc(f':.{ctx}:t')}", body)[1] == 42201
    assert raw.error("POST", f"/compatibility/subjects/{enc(f':.{ctx}:t')}/versions/latest", body)[1] == 42201


def test_broken_references_are_42201(raw: Raw, ctx: str) -> None:
    path = f"/subjects/{enc(f':.{ctx}:orders')}/versions"
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:json')}/versions", {"schema": "{}", "schemaType": "JSON"})
    order = json.dumps({"type": "record", "name": "O", "fields": [{"name": "a", "type": "Address"}]})
    for reference in (
        {"name": "Address", "subject": "nobody", "version": 1},
        {"name": "Address", "subject": "json", "version": 7},
        {"name": "Address", "subject": "json", "version": 1},  # a JSON schema, not Avro
        {"name": "", "subject": "json", "version": 1},
        {"name": "Address", "subject": ":.bad context:x", "version": 1},
    ):
        status, code, message = raw.error("POST", path, {"schema": order, "references": [reference]})
        assert (status, code) == (422, 42201) or code == 42208, message
    proto = {"schema": 'syntax = "proto3"; import "dep.proto"; message M { D d = 1; }', "schemaType": "PROTOBUF"}
    assert raw.error("POST", path, proto)[1] == 42201
    wrong_version = {"schema": order, "references": [{"name": "A", "subject": "json", "version": "x"}]}
    assert raw.error("POST", path, wrong_version)[0] == 422


def test_unknown_subjects_versions_and_ids(raw: Raw, ctx: str) -> None:
    nobody = enc(f":.{ctx}:nobody")
    for method, path in [
        ("GET", f"/subjects/{nobody}/versions"),
        ("GET", f"/subjects/{nobody}/versions/1"),
        ("GET", f"/subjects/{nobody}/versions/latest/schema"),
        ("GET", f"/subjects/{nobody}/versions/1/referencedby"),
        ("DELETE", f"/subjects/{nobody}"),
        ("DELETE", f"/subjects/{nobody}/versions/1"),
    ]:
        assert raw.error(method, path)[:2] == (404, 40401), path
    assert raw.error("POST", f"/subjects/{nobody}", {"schema": avro("R", ("a", "int"))})[1] == 40401
    assert raw.error("POST", f"/compatibility/subjects/{nobody}/versions/1", {"schema": avro("R", ("a", "int"))})[
        1
    ] == 40401

    subject = enc(f":.{ctx}:known")
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": avro("R", ("a", "int"))})
    assert raw.error("GET", f"/subjects/{subject}/versions/2")[:2] == (404, 40402)
    assert raw.error("DELETE", f"/subjects/{subject}/versions/9")[1] == 40402
    for bad in ("0", "-2", "abc", "1.5", "99999999999", "²"):
        assert raw.error("GET", f"/subjects/{subject}/versions/{enc(bad)}")[:2] == (422, 42202), bad
    for schema_id in ("0", "-1", "abc", "99999999", "2147483648", "99999999999999999999"):
        assert raw.error("GET", f"/schemas/ids/{schema_id}")[:2] == (404, 40403), schema_id
        assert raw.error("GET", f"/schemas/ids/{schema_id}/subjects")[1] == 40403
    assert raw.error("GET", "/subjects", subjectPrefix=":.bad context:")[1] == 42208
    assert raw.error("GET", f"/subjects/{enc(':.ctx')}/versions")[1] == 42208
    assert raw.error("GET", f"/subjects/{enc('x' * 300)}/versions")[1] == 42208


def test_bad_levels_and_modes(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:s")
    for body in ({"compatibility": "SOMETIMES"}, {"compatibility": ""}, {}, {"compatibility": 5},
                 {"compatibility": "BACKWARD", "defaultRuleSet": {"domainRules": [{"name": "r"}]}}):
        status, code, _ = raw.error("PUT", f"/config/{subject}", body)
        assert status == 422, body
        assert code in (42203, 422, 42210), body  # 42210: a rule set Confluent refuses
    assert raw.error("PUT", "/config", {"compatibility": "MAYBE"})[1] == 42203
    for body in ({"mode": "WRITEONLY"}, {}, {"mode": None}):
        assert raw.error("PUT", f"/mode/{subject}", body)[1] == 42204, body
    assert raw.error("PUT", "/mode", {"mode": "nope"})[1] == 42204
    # levels are case-insensitive, as Confluent's clients upper-case them anyway
    assert raw.ok("PUT", f"/config/{subject}", {"compatibility": "forward"}) == {"compatibility": "FORWARD"}


def test_bodies_that_are_not_schemas(raw: Raw, ctx: str) -> None:
    path = f"/subjects/{enc(f':.{ctx}:s')}/versions"
    for body in ("not json", "[]", "null", json.dumps({"schemaType": "AVRO"}), json.dumps({"schema": 5}),
                 json.dumps({"schema": "{}", "references": {"a": 1}}), '{"schema": "' + "[" * 100 + '"}',
                 json.dumps({"schema": avro("R", ("a", "int")), "metadata": {"properties": {"owner": 1}}}),
                 json.dumps({"schema": avro("R", ("a", "int")), "ruleSet": {"domainRules": [{"name": "r"}]}})):
        status, code, _ = raw.error("POST", path, body)
        assert status == 422, body
        assert code in (422, 42201, 42210), body  # 42210: a rule set Confluent refuses (a rule without a type)
    # unknown fields are ignored, as Confluent's clients expect of a server
    assert raw.ok("POST", path, {"schema": avro("R", ("a", "int")), "futureField": 1, "metadata": None})["id"] > 0


def test_oversize_bodies_are_413(tmp_path, database_url: str) -> None:
    settings = Settings(database_url=database_url, warehouse=str(tmp_path), max_body_bytes=64 * 1024)
    with serve_in_thread(create_app(settings)) as url:
        raw = Raw(url)
        big = {"schema": json.dumps({"type": "record", "name": "R", "doc": "x" * 100_000, "fields": []})}
        status, code, message = raw.error("POST", "/subjects/big/versions", big)
        assert (status, code) == (413, 413)
        assert "limit" in message


def test_no_request_is_a_server_error(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:sweep")
    raw.ok("POST", f"/subjects/{subject}/versions", {"schema": avro("R", ("a", "int"))})
    paths = ["/subjects", f"/subjects/{subject}", f"/subjects/{subject}/versions", f"/subjects/{subject}/versions/1",
             f"/subjects/{subject}/versions/latest/schema", f"/subjects/{subject}/versions/1/referencedby",
             "/schemas", "/schemas/ids/1", "/schemas/ids/1/versions", f"/compatibility/subjects/{subject}/versions",
             f"/config/{subject}", f"/mode/{subject}", "/contexts", "/associations/resources/a/b"]
    queries = [{}, {"deleted": "maybe"}, {"offset": "x"}, {"limit": "-5"}, {"format": "\u2603"},
               {"subjectPrefix": "%"}, {"normalize": "yes"}, {"permanent": "TRUE"}]
    bodies = [None, "{", {"schema": None}, {"schema": "{}", "schemaType": None, "references": None},
              {"schema": "x", "id": -5, "version": "latest"}, {"mode": 1}, {"compatibility": []}]
    for path, query, body in itertools.product(paths, queries, bodies):
        for method in ("GET", "POST", "PUT", "DELETE"):
            if method == "DELETE" and path.startswith("/subjects") and query.get("permanent"):
                continue
            response = raw.call(method, path, body, **query)
            assert response.status_code < 500, (method, path, query, body, response.text)
            if response.status_code >= 400 and response.status_code != 405:
                assert set(response.json()) == {"error_code", "message"}, (method, path, response.text)


def test_media_types(raw: Raw, ctx: str) -> None:
    subject = enc(f":.{ctx}:media")
    for accepted in ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                     "application/json"):
        response = requests.get(f"{raw.base}/subjects", headers={"Accept": accepted}, timeout=10)
        assert response.headers["Content-Type"].split(";")[0] == accepted
    response = requests.get(f"{raw.base}/subjects", timeout=10)
    assert response.headers["Content-Type"].split(";")[0] == CONTENT_TYPE
    for sent in ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                 "application/json"):
        body = json.dumps({"schema": avro("R", ("a", "int"))})
        answer = requests.post(f"{raw.base}/subjects/{subject}/versions", data=body,
                               headers={"Content-Type": sent}, timeout=10)
        assert answer.status_code == 200, answer.text
    missing = requests.get(f"{raw.base}/associations/resources/ns/topic", timeout=10)
    assert missing.status_code == 404
    assert missing.json()["error_code"] == 404
