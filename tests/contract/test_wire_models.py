"""The wire models: the JSON shapes they give the domain objects, the errors they give bad
requests, and that the clients can use them without the server's dependencies."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any, get_args

import pytest
from flask import Flask

from catalog_api import model as catalog
from catalog_api.api import models as catalog_wire
from catalog_api.changes import CHANGE_OPS
from registry import model as registry
from registry.api import models as wire
from registry.formats.base import Incompatibility
from registry.ids import CodecName, EncodingId, SchemaId, TypeName, Version

VERSION = registry.VersionInfo(TypeName("shop.Order"), Version(3), SchemaId(17))
AVRO = registry.SerializationFormat("Avro")
CUSTOM = registry.SerializationFormat("Custom", "my.format")
SCHEMA = registry.SchemaInfo(TypeName("shop.Order"), AVRO, b'{"type": "int"}', {"owner": "shop"})
TILL = registry.Compatibility("Advanced", registry.Rule("till", VERSION), registry.Rule("all"))
STREAM = catalog.Stream("shop", "orders", "/w/shop/orders", catalog.StreamConfig(2, 1000, None), False, 0, 4, 99)


def _json(model: Any) -> Any:
    return model.model_dump(mode="json")


# -- shapes of the answers (as the removed to_json methods wrote them) -------------------------------------


def test_registry_shapes() -> None:
    assert _json(wire.VersionInfo.of(VERSION)) == {"type": "shop.Order", "version": 3, "id": 17}
    assert _json(wire.SerializationFormat.of(AVRO)) == {"serializationFormat": "Avro"}
    assert _json(wire.SerializationFormat.of(CUSTOM)) == {"serializationFormat": "Custom", "fullTypeName": "my.format"}
    assert _json(wire.SchemaInfo.of(SCHEMA)) == {
        "type": "shop.Order",
        "serializationFormat": {"serializationFormat": "Avro"},
        "schemaData": "eyJ0eXBlIjogImludCJ9",
        "properties": {"owner": "shop"},
    }
    assert _json(wire.Compatibility.of(registry.Compatibility.of("Backward"))) == {"policy": "Backward"}
    assert _json(wire.Compatibility.of(TILL)) == {
        "policy": "Advanced",
        "advanced": {
            "backwardPolicy": {
                "backwardPolicy": {"name": "BackwardTill", "versionInfo": _json(wire.VersionInfo.of(VERSION))}
            },
            "forwardPolicy": {"forwardPolicy": {"name": "ForwardTransitive"}},
        },
    }
    group = registry.GroupProperties(AVRO, registry.Compatibility.of("Full"))
    assert _json(wire.GroupProperties.of(group)) == {
        "serializationFormat": {"serializationFormat": "Avro"},
        "compatibility": {"policy": "Full"},
        "allowMultipleTypes": False,
        "properties": {},
    }
    record = registry.HistoryRecord(SCHEMA, VERSION, registry.Compatibility.of("Full"), 5, None, deleted=True)
    assert "schemaString" not in _json(wire.GroupHistoryRecord.of(record))
    with_text = registry.HistoryRecord(SCHEMA, VERSION, registry.Compatibility.of("Full"), 5, '"int"')
    assert _json(wire.GroupHistoryRecord.of(with_text))["schemaString"] == '"int"'
    assert list(_json(wire.GroupHistoryRecord.of(with_text))) == [
        "schemaInfo",
        "versionInfo",
        "compatibility",
        "timestamp",
        "deleted",
        "schemaString",
    ]


def test_error_shapes() -> None:
    from registry.errors import IncompatibleSchema, SchemaNotFound

    assert _json(wire.Error.of(SchemaNotFound("no such id"))) == {
        "error": {"code": "SchemaNotFound", "message": "no such id"}
    }
    refused = IncompatibleSchema("breaks", [Incompatibility("$.a", "removed")])
    assert _json(wire.Error.of(refused))["error"]["reasons"] == [{"path": "$.a", "message": "removed"}]


def test_catalog_shapes() -> None:
    stream = _json(catalog_wire.Stream.of(STREAM))
    assert stream == {
        "scopeName": "shop",
        "streamName": "orders",
        "location": "/w/shop/orders",
        "scalingPolicy": {"type": "FIXED_NUM_SEGMENTS", "minSegments": 2},
        "retentionPolicy": {"retentionTimeMillis": 1000},
        "streamState": "ACTIVE",
        "truncatedAt": 0,
        "retainedFrom": 0,
        "lastCommit": 4,
        "createdAt": 99,
    }
    chunk = catalog.Chunk("a/1.events", "events", event_count=3, bytes=10, encoding_ids=(1, 2))
    assert _json(catalog_wire.ChunkInfo.of(chunk)) == {
        "path": "a/1.events",
        "kind": "events",
        "segment": 0,
        "eventCount": 3,
        "bytes": 10,
        "encodingIds": [1, 2],
        "minEventTime": None,
        "maxEventTime": None,
        "stats": {},
        "commit": 0,
        "sequence": 0,
        "removedAt": None,
    }
    commit = catalog.Commit(1, False, None, None, 3, 10, 1, 77)
    assert _json(catalog_wire.Commit.of(commit)) == {
        "number": 1,
        "overwrite": False,
        "writerId": None,
        "writerSequence": None,
        "eventCount": 3,
        "bytes": 10,
        "chunkCount": 1,
        "timestamp": 77,
        "properties": {},
        "duplicate": False,
        "kind": "append",
        "readCut": None,
        "baseCut": None,
        "createdAt": 77,
    }
    table = catalog.Table(
        "shop",
        "orders",
        STREAM,
        "avro",
        "shop.orders",
        {"type": "struct", "fields": []},
        VERSION,
        registry.Compatibility.of("Backward"),
        "",
        {},
        2,
    )
    answer = _json(catalog_wire.Table.of(table))
    assert list(answer) == [
        "scopeName",
        "tableName",
        "version",
        "format",
        "group",
        "typeName",
        "schema",
        "schemaVersion",
        "compatibility",
        "comment",
        "properties",
        "primaryKey",
        "stream",
        "partitionSpec",
        "partitionSpecs",
        "checks",
    ]
    assert answer["schema"] == {"type": "struct", "fields": []}
    assert answer["checks"] == []
    assert answer["partitionSpec"] == {"specId": 0, "fields": [], "text": ""}


def test_domain_objects_survive_the_wire() -> None:
    for domain, model in (
        (SCHEMA, wire.SchemaInfo),
        (registry.SchemaInfo(TypeName("T"), CUSTOM, b"\x00\xff"), wire.SchemaInfo),
        (VERSION, wire.VersionInfo),
        (TILL, wire.Compatibility),
        (registry.Compatibility("Advanced", None, registry.Rule("latest")), wire.Compatibility),
        (registry.CodecType(CodecName("gzip"), {"level": "9"}), wire.CodecType),
        (registry.GroupProperties(CUSTOM, registry.Compatibility.of("DenyAll"), True, {"a": ""}), wire.GroupProperties),
        (catalog.Chunk("p", "columnar", 1, 2, 3, (4,), -5, 6, {"min": {"a": None}}, 7), catalog_wire.ChunkInfo),
        (catalog.Chunk("p", "columnar", partition={"specId": 1, "values": [None, True, -3, "eu"]}),
         catalog_wire.ChunkInfo),
    ):
        sent = _json(model.of(domain))  # type: ignore[attr-defined]
        assert model.model_validate(sent, by_name=False).to_domain() == domain
    encoding = registry.EncodingInfo(EncodingId(5), SCHEMA, VERSION, registry.CodecType(CodecName("")))
    sent = _json(wire.EncodingInfo.of(encoding))
    assert wire.EncodingInfo.model_validate(sent).to_domain(EncodingId(5)) == encoding


def test_the_table_changes_are_exactly_the_ops_the_catalog_applies() -> None:
    changes = get_args(get_args(catalog_wire.TableChange)[0])
    ops = [get_args(change.model_fields["op"].annotation)[0] for change in changes]
    assert sorted(ops) == sorted(CHANGE_OPS)


# -- bad requests: 400, naming the field ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"op": "setProperty", "key": "a"}, r"\$\.changes\[0\]\.value: Field required"),
        ({"op": "removeProperty"}, r"\$\.changes\[0\]\.key: Field required"),
        ({"op": "addColumn", "path": ["x"]}, r"\$\.changes\[0\]\.type: Field required"),
        ({"op": "updateColumnNullability", "path": ["x"]}, r"\$\.changes\[0\]\.nullable: Field required"),
        ({"op": "renameColumn", "path": ["x"], "newName": ""}, r"\$\.changes\[0\]\.newName"),
        ({"op": "dropColumn", "path": []}, r"\$\.changes\[0\]\.path"),
        ({"op": "setCompatibility", "compatibility": {"policy": "Sideways"}}, r"compatibility\.policy.*Sideways"),
        ({"op": "explode"}, r"\$\.changes\[0\].*'explode'"),
        ({"key": "a"}, r"\$\.changes\[0\].*op"),
        ({"op": "setComment", "comment": "x", "path": ["a"]}, r"\$\.changes\[0\]\.path"),
    ],
)
def test_a_bad_table_change_is_a_400_naming_the_field(app: Flask, change: dict[str, Any], says: str) -> None:
    with app.test_client() as http:
        http.post("/v1/scopes", json={"scopeName": "s"})
        answer = http.patch("/v1/scopes/s/tables/t", json={"changes": [change]})
    assert answer.status_code == 400, answer.get_json()
    error = answer.get_json()["error"]
    assert error["code"] == "BadRequest"
    assert error["message"].startswith("invalid AlterTableRequest at $.changes[0]")
    assert re.search(says, error["message"]), error["message"]


@pytest.mark.parametrize(
    ("path", "query", "says"),
    [
        ("/v1/groups", "limit=0", "query argument limit"),
        ("/v1/groups", "limit=1e3", "query argument limit"),
        ("/v1/groups", "continuationToken=4294967296", "query argument continuationToken"),
        ("/v1/scopes/s/streams/x/chunks", "streamCut=-1", "query argument streamCut"),
        ("/v1/scopes/s/streams/x/chunks", f"asOfTime={2**62 + 1}", "query argument asOfTime"),
        ("/v1/scopes/s", "cascade=maybe", "query argument cascade"),
    ],
)
def test_a_bad_query_argument_is_a_400_naming_it(app: Flask, path: str, query: str, says: str) -> None:
    method = "DELETE" if "cascade" in query else "GET"
    with app.test_client() as http:
        answer = http.open(f"{path}?{query}", method=method)
    assert answer.status_code == 400
    assert says in answer.get_json()["error"]["message"]


def test_empty_query_arguments_count_as_absent(app: Flask) -> None:
    with app.test_client() as http:
        assert http.get("/v1/groups?limit=&continuationToken=&namespace=").status_code == 200


# -- the clients -----------------------------------------------------------------------------------------


def test_the_clients_import_without_the_server_dependencies() -> None:
    probe = (
        "import sys\n"
        "import registry.client, catalog_api.client\n"
        "server = {'flask', 'werkzeug', 'sqlalchemy'} & {m.split('.')[0] for m in sys.modules}\n"
        "assert not server, server\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)
