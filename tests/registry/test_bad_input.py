"""Bad input to every registry endpoint, on both backends.

Every case must get the expected 4xx (never a 500) with a body of the form
``{"error": {"code": ..., "message": ...}}`` whose message names the problem, and the
failed call must leave the namespace exactly as it was: groups, their properties,
history, versions, codec types and encodings.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import pytest
import requests
from sqlalchemy import Engine, func, select

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.api import models as wire
from registry.client import RegistryClient, schema_info
from registry.db import make_engine
from registry.ids import CodecName
from registry.model import CodecType, VersionInfo
from registry.store.orm import CodecRow, EncodingRow, GroupRow, SchemaRow, VersionRow
from tests.registry.helpers import group
from tests.support.net import serve_in_thread
from tests.support.raw_http import RawResponse, raw_request

AVRO_USER: dict[str, Any] = {
    "type": "record",
    "name": "User",
    "namespace": "bad.input",
    "fields": [{"name": "name", "type": "string"}],
}
#: A compatible next version of AVRO_USER: adding it would succeed.
AVRO_USER_V2: dict[str, Any] = {
    **AVRO_USER,
    "fields": [*AVRO_USER["fields"], {"name": "email", "type": ["null", "string"], "default": None}],
}
PROTO_ORDER = 'syntax = "proto3";\npackage bad.input;\nmessage Order { int64 id = 1; }\n'
JSON_ITEM = '{"title": "Item", "type": "object", "properties": {"sku": {"type": "string"}}}'


def b64(data: str | bytes) -> str:
    """Base64 text of ``data``."""
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def info(fmt: str, data: str | bytes | dict[str, Any], type_name: str = "", full: str | None = None) -> dict[str, Any]:
    """A SchemaInfo body; dict data is serialized as JSON."""
    text = json.dumps(data) if isinstance(data, dict) else data
    serialization: dict[str, Any] = {"serializationFormat": fmt}
    if full is not None:
        serialization["fullTypeName"] = full
    return {"type": type_name, "serializationFormat": serialization, "schemaData": b64(text)}


def avro(schema: dict[str, Any] | str, type_name: str = "") -> dict[str, Any]:
    """An Avro SchemaInfo body."""
    return info("Avro", schema, type_name)


def group_props(fmt: str = "Avro", policy: str = "Backward", **extra: Any) -> dict[str, Any]:
    """GroupProperties JSON; ``extra`` adds or replaces fields."""
    return {"serializationFormat": {"serializationFormat": fmt}, "compatibility": {"policy": policy}, **extra}


def create(name: str = "fresh", **props: Any) -> dict[str, Any]:
    """A CreateGroupRequest body."""
    return {"groupName": name, "groupProperties": group_props(**props)}


def advanced(**rules: Any) -> dict[str, Any]:
    """An Advanced Compatibility JSON with the given ``advanced`` members."""
    return {"policy": "Advanced", "advanced": rules}


def nested(depth: int, inner: str = '"int"') -> str:
    """An Avro array type nested ``depth`` deep."""
    return '{"type": "array", "items": ' * depth + inner + "}" * depth


@dataclass(frozen=True)
class World:
    """A namespace holding one group per format, with a schema, a codec and an encoding id each."""

    url: str
    namespace: str
    avro_version: VersionInfo
    encoding_id: int
    proto_schema_id: int
    proto_encoding_id: int

    @property
    def names(self) -> dict[str, Any]:
        """Placeholders a case's path may use."""
        return {
            "ns": self.namespace,
            "sid": self.avro_version.id,
            "eid": self.encoding_id,
            "psid": self.proto_schema_id,
            "peid": self.proto_encoding_id,
        }


def make_world(url: str, namespace: str) -> World:
    """Groups ``avro``, ``proto``, ``json`` (Backward) and ``custom`` (Custom my.custom, AllowAny)."""
    client = RegistryClient(url, namespace)
    client.create_group("avro", group("Avro", "Backward"))
    client.create_group("proto", group("Protobuf", "Backward"))
    client.create_group("json", group("Json", "Backward"))
    client.create_group("custom", group("Custom", "AllowAny"))
    version = client.add_schema("avro", schema_info("Avro", json.dumps(AVRO_USER)))
    client.add_codec_type("avro", CodecType(CodecName("gzip")))
    encoding = client.encoding_id("avro", version, CodecName("gzip"))
    proto = client.add_schema("proto", schema_info("Protobuf", PROTO_ORDER, "bad.input.Order"))
    client.add_schema("json", schema_info("Json", JSON_ITEM, "Item"))
    return World(url, namespace, version, encoding, proto.id, client.encoding_id("proto", proto))


@dataclass(frozen=True)
class TextBody:
    """A body sent as this text (made from the world), not JSON-encoded again."""

    text: Callable[[World], str]


#: A request body: JSON-encodable, made from the world, or text.
Body = Any


@dataclass(frozen=True)
class Case:
    """One bad request and what the server must answer."""

    name: str
    method: str
    path: str  # may use World.names placeholders; ?namespace= is added unless the path names one
    status: int
    says: str  # regular expression the error message must match, case-insensitively
    body: Body = None
    raw: bytes | None = None
    content_type: str | None = "application/json"


def target(case: Case, world: World) -> str:
    """The request target of ``case``: the path filled in, with the namespace."""
    path = case.path.format(**world.names)
    if "/v1/namespace/" in path or "namespace=" in path:
        return path
    return f"{path}{'&' if '?' in path else '?'}namespace={world.namespace}"


def send(case: Case, world: World) -> RawResponse:
    """Send ``case`` to the server of ``world``."""
    body = case.raw
    if isinstance(case.body, TextBody):
        body = case.body.text(world).encode()
    elif body is None and case.body is not None:
        value = case.body(world) if callable(case.body) else case.body
        body = json.dumps(value).encode()
    content_type = case.content_type if body is not None else None
    return raw_request(world.url, case.method, target(case, world), body, content_type)


def assert_error(response: RawResponse, status: int, says: str) -> None:
    """``response`` is a JSON error with ``status`` whose message matches ``says``."""
    text = response.body.decode("utf-8", "replace")
    assert response.status == status, f"expected {status}, got {response.status}: {text[:500]}"
    assert response.content_type.startswith("application/json"), response.content_type
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"code", "message"} <= set(error) <= {"code", "message", "reasons"}, error
    assert isinstance(error["code"], str), error
    assert error["code"], error
    assert isinstance(error["message"], str), error
    assert re.search(says, error["message"], re.IGNORECASE), f"message does not match {says!r}: {error['message']}"


def api_state(world: World) -> dict[str, Any]:
    """What clients see of the world's namespace: groups with properties, histories, codecs, encodings."""
    session = requests.Session()
    params = {"namespace": world.namespace}

    def get(path: str, **extra: Any) -> Any:
        response = session.get(f"{world.url}{path}", params={**params, **extra}, timeout=30)
        return response.status_code, response.json()

    state: dict[str, Any] = {"groups": get("/v1/groups", limit=1000)}
    listed = state["groups"][1].get("groups", {})
    for name in sorted({*listed, "avro", "proto", "json", "custom"}):
        # The history holds every version ever added, deleted or not.
        for suffix in ("/history", "/codecTypes"):
            state[name + suffix] = get(f"/v1/groups/{name}{suffix}")
    state["encoding"] = get(f"/v1/groups/avro/encodings/{world.encoding_id}")
    state["proto encoding"] = get(f"/v1/groups/proto/encodings/{world.proto_encoding_id}")
    return state


def db_state(engine: Engine, namespace: str) -> dict[str, Any]:
    """Every row the namespace owns, plus the size of the global schema table (no other test writes meanwhile)."""
    with engine.connect() as conn:
        groups = select(GroupRow.id).where(GroupRow.namespace == namespace).scalar_subquery()

        def rows(table: Any, where: Any) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in conn.execute(select(table).where(where).order_by(table.c.id))]

        return {
            "groups": rows(GroupRow.__table__, GroupRow.namespace == namespace),
            "versions": rows(VersionRow.__table__, VersionRow.group_id.in_(groups)),
            "codecs": rows(CodecRow.__table__, CodecRow.group_id.in_(groups)),
            "encodings": rows(EncodingRow.__table__, EncodingRow.group_id.in_(groups)),
            "schemas": tuple(conn.execute(select(func.count(), func.max(SchemaRow.id))).one()),
        }


def snapshot(world: World, engine: Engine) -> dict[str, Any]:
    """Everything a failed call must leave as it was."""
    return {"api": api_state(world), "db": db_state(engine, world.namespace)}


@pytest.fixture(scope="module")
def engine(database_url: str) -> Iterator[Engine]:
    """A direct connection to the server's database, to see what it wrote."""
    found = make_engine(database_url)
    yield found
    found.dispose()


class Worlds:
    """One populated namespace shared by the cases, replaced when a case changed it."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine
        self._current: tuple[World, dict[str, Any]] | None = None

    def get(self) -> tuple[World, dict[str, Any]]:
        """The world and its snapshot as made."""
        if self._current is None:
            world = make_world(self.url, f"bad{uuid.uuid4().hex[:12]}")
            self._current = (world, snapshot(world, self.engine))
        return self._current

    def spoil(self) -> None:
        """Forget the world: the next case gets a new one."""
        self._current = None


@pytest.fixture(scope="module")
def worlds(server_url: str, engine: Engine) -> Worlds:
    """The shared world of the module, per backend."""
    return Worlds(server_url, engine)


# -- the cases ------------------------------------------------------------------------------------


def _version(world: World, **changes: Any) -> dict[str, Any]:
    return {**wire.VersionInfo.of(world.avro_version).model_dump(mode="json"), **changes}


#: Endpoints that take a body, each with a body that would succeed.
BODY_ENDPOINTS: list[tuple[str, str, str, Body]] = [
    ("create group", "POST", "/v1/groups", create()),
    ("compatibility", "PUT", "/v1/groups/avro/compatibility", {"compatibility": {"policy": "Full"}}),
    ("add schema", "POST", "/v1/groups/avro/schemas", avro(AVRO_USER_V2)),
    ("find", "POST", "/v1/groups/avro/schemas/versions/find", avro(AVRO_USER)),
    ("validate", "POST", "/v1/groups/avro/schemas/versions/validate", {"schemaInfo": avro(AVRO_USER_V2)}),
    ("canRead", "POST", "/v1/groups/avro/schemas/versions/canRead", avro(AVRO_USER_V2)),
    ("encoding id", "PUT", "/v1/groups/avro/encodings", lambda w: {"versionInfo": _version(w), "codecType": ""}),
    ("codec type", "POST", "/v1/groups/avro/codecTypes", {"name": "zstd"}),
    ("addedTo", "POST", "/v1/schemas/addedTo", avro(AVRO_USER)),
]


def _valid_text(body: Body) -> Callable[[World], str]:
    return lambda w: json.dumps(body(w) if callable(body) else body)


def _mutated(body: Body, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Body:
    return lambda w: change(dict(body(w) if callable(body) else body))


def _text_case(name: str, method: str, path: str, text: Callable[[World], str], content_type: str | None,
               says: str) -> Case:
    return Case(name, method, path, 400, says, body=TextBody(text), content_type=content_type)


def _cut_last(valid: Callable[[World], str]) -> Callable[[World], str]:
    return lambda w: valid(w)[:-1]


def _append_garbage(valid: Callable[[World], str]) -> Callable[[World], str]:
    return lambda w: valid(w) + " x"


def _without(body: Body, key: str) -> Body:
    return _mutated(body, lambda b: {n: v for n, v in b.items() if n != key})


def _generic_cases() -> Iterator[Case]:
    for label, method, path, body in BODY_ENDPOINTS:
        first = next(iter(body(_PROBE_WORLD) if callable(body) else body))
        valid = _valid_text(body)
        yield Case(f"{label}: malformed JSON", method, path, 400, "not valid JSON", raw=b'{"groupName": ')
        yield _text_case(f"{label}: truncated JSON", method, path, _cut_last(valid), "application/json",
                         "not valid JSON")
        yield _text_case(f"{label}: trailing garbage", method, path, _append_garbage(valid), "application/json",
                         "not valid JSON")
        yield Case(f"{label}: not UTF-8", method, path, 400, "not valid JSON", raw=b'{"type": "\xff\xfe"}')
        yield Case(f"{label}: empty body", method, path, 400, "not valid JSON", raw=b"")
        yield Case(f"{label}: nested too deep", method, path, 400, r"deep|nest", raw=b"[" * 5000 + b"]" * 5000)
        yield _text_case(f"{label}: text/plain", method, path, valid, "text/plain", "Content-Type")
        yield _text_case(f"{label}: no content type", method, path, valid, None, "Content-Type")
        yield Case(f"{label}: form body", method, path, 400, "Content-Type", raw=b"a=b",
                   content_type="application/x-www-form-urlencoded")
        yield Case(f"{label}: array", method, path, 400, "object", body=[])
        yield Case(f"{label}: string", method, path, 400, "object", body="x")
        yield Case(f"{label}: number", method, path, 400, "object", body=5)
        yield Case(f"{label}: empty object", method, path, 400, "required", body={})
        yield Case(f"{label}: missing {first}", method, path, 400, f"{first}.*required", body=_without(body, first))
        yield Case(f"{label}: unknown field", method, path, 400, "bogus",
                   body=_mutated(body, lambda b: {**b, "bogus": 1}))


_PROBE_WORLD = World("", "", wire.VersionInfo.model_validate({"type": "t", "version": 0, "id": 1}).to_domain(), 1, 1, 1)

G = "/v1/groups"
AV = "/v1/groups/avro"
ADD = f"{AV}/schemas"
FIND = f"{AV}/schemas/versions/find"
VALIDATE = f"{AV}/schemas/versions/validate"
CAN_READ = f"{AV}/schemas/versions/canRead"
ENC = f"{AV}/encodings"
COMPAT = f"{AV}/compatibility"

WRONG_TYPES = [
    Case("groupName is an object", "POST", G, 400, "groupName", body={**create(), "groupName": {}}),
    Case("groupName is a number", "POST", G, 400, "groupName", body={**create(), "groupName": 5}),
    Case("allowMultipleTypes is a string", "POST", G, 400, "allowMultipleTypes",
         body=create(allowMultipleTypes="true")),
    Case("group properties value is a number", "POST", G, 400, "properties", body=create(properties={"a": 1})),
    Case("group properties is a string", "POST", G, 400, "properties", body=create(properties="a=1")),
    Case("serializationFormat is a string", "POST", G, 400, "serializationFormat",
         body={"groupName": "fresh", "groupProperties": {**group_props(), "serializationFormat": "Avro"}}),
    Case("compatibility is a string", "POST", G, 400, "compatibility",
         body={"groupName": "fresh", "groupProperties": {**group_props(), "compatibility": "Backward"}}),
    Case("policy is a number", "POST", G, 400, "policy",
         body={"groupName": "fresh", "groupProperties": {**group_props(), "compatibility": {"policy": 1}}}),
    Case("schema type is a number", "POST", ADD, 400, "type", body={**avro(AVRO_USER_V2), "type": 5}),
    Case("schemaData is an object", "POST", ADD, 400, "schemaData", body={**avro(AVRO_USER_V2), "schemaData": {}}),
    Case("schemaData is a number", "POST", ADD, 400, "schemaData", body={**avro(AVRO_USER_V2), "schemaData": 12}),
    Case("schema properties is a list", "POST", ADD, 400, "properties",
         body={**avro(AVRO_USER_V2), "properties": ["a"]}),
    Case("format name is a list", "POST", ADD, 400, "serializationFormat",
         body={**avro(AVRO_USER_V2), "serializationFormat": {"serializationFormat": ["Avro"]}}),
    Case("fullTypeName is a number", "POST", ADD, 400, "fullTypeName",
         body={**avro(AVRO_USER_V2), "serializationFormat": {"serializationFormat": "Avro", "fullTypeName": 5}}),
    Case("schema type longer than 1024", "POST", "/v1/groups/custom/schemas", 400, "type",
         body=info("Custom", "x", "t" * 1025, full="my.custom")),
    Case("fullTypeName longer than 255", "POST", "/v1/groups/custom/schemas", 400, "fullTypeName",
         body=info("Custom", "x", "T", full="my." + "c" * 300)),
    Case("schemaInfo is a string", "POST", VALIDATE, 400, "schemaInfo", body={"schemaInfo": "x"}),
    Case("validate compatibility is a string", "POST", VALIDATE, 400, "compatibility",
         body={"schemaInfo": avro(AVRO_USER_V2), "compatibility": "Backward"}),
    Case("version is a string", "PUT", ENC, 400, "version",
         body=lambda w: {"versionInfo": _version(w, version="0"), "codecType": ""}),
    Case("version is a boolean", "PUT", ENC, 400, "version",
         body=lambda w: {"versionInfo": _version(w, version=True), "codecType": ""}),
    Case("id is a fraction", "PUT", ENC, 400, "id",
         body=lambda w: {"versionInfo": _version(w, id=1.5), "codecType": ""}),
    Case("version is negative", "PUT", ENC, 400, "version",
         body=lambda w: {"versionInfo": _version(w, version=-1), "codecType": ""}),
    Case("version beyond int32", "PUT", ENC, 400, "version",
         body=lambda w: {"versionInfo": _version(w, version=2**31), "codecType": ""}),
    Case("versionInfo is a string", "PUT", ENC, 400, "versionInfo", body={"versionInfo": "v0", "codecType": ""}),
    Case("codecType is null", "PUT", ENC, 400, "codecType",
         body=lambda w: {"versionInfo": _version(w), "codecType": None}),
    Case("codecType is a number", "PUT", ENC, 400, "codecType",
         body=lambda w: {"versionInfo": _version(w), "codecType": 5}),
    Case("codec name is a number", "POST", f"{AV}/codecTypes", 400, "name", body={"name": 5}),
    Case("codec properties is a list", "POST", f"{AV}/codecTypes", 400, "properties",
         body={"name": "z", "properties": []}),
    Case("codec property is a number", "POST", f"{AV}/codecTypes", 400, "properties",
         body={"name": "z", "properties": {"level": 3}}),
    Case("previousCompatibility is a string", "PUT", COMPAT, 400, "previousCompatibility",
         body={"compatibility": {"policy": "Full"}, "previousCompatibility": "Backward"}),
]

POLICIES_AND_FORMATS = [
    Case("unknown policy", "POST", G, 400, "Sideways", body=create(policy="Sideways")),
    Case("policy in lower case", "POST", G, 400, "backward", body=create(policy="backward")),
    Case("unknown format", "POST", G, 400, "Xml", body=create(fmt="Xml")),
    Case("format in lower case", "POST", G, 400, "avro", body=create(fmt="avro")),
    Case("unknown policy in update", "PUT", COMPAT, 400, "Nope", body={"compatibility": {"policy": "Nope"}}),
    Case("unknown previous policy", "PUT", COMPAT, 400, "Nope",
         body={"compatibility": {"policy": "Full"}, "previousCompatibility": {"policy": "Nope"}}),
    Case("unknown policy in validate", "POST", VALIDATE, 400, "Nope",
         body={"schemaInfo": avro(AVRO_USER_V2), "compatibility": {"policy": "Nope"}}),
    Case("unknown format in add", "POST", ADD, 400, "Xml", body=info("Xml", "<x/>", "X")),
    Case("unknown format in version path", "GET", f"{AV}/schemas/format/Xml/type/bad.input.User/versions/0", 400,
         "Xml"),
    Case("unknown format in version delete", "DELETE", f"{AV}/schemas/format/Xml/type/bad.input.User/versions/0",
         400, "Xml"),
    Case("opaque format with a checking policy", "POST", G, 400, "AllowAny or DenyAll",
         body=create(fmt="Any", policy="Backward")),
    Case("opaque group moved to a checking policy", "PUT", "/v1/groups/custom/compatibility", 400,
         "AllowAny or DenyAll", body={"compatibility": {"policy": "Full"}}),
]

_TILL = {"type": "bad.input.User", "version": 0, "id": 1}
ADVANCED = [
    Case("Advanced without rules", "POST", G, 400, "advanced", body=create(policy="Advanced")),
    Case("Advanced with empty rules", "POST", G, 400, "advanced",
         body={"groupName": "fresh", "groupProperties": {**group_props(), "compatibility": advanced()}}),
    Case("Advanced with null rules", "POST", G, 400, "advanced",
         body={"groupName": "fresh", "groupProperties": {
             **group_props(), "compatibility": advanced(backwardPolicy=None, forwardPolicy=None)}}),
    Case("Advanced with a bad rule name", "POST", G, 400, "Sideways",
         body={"groupName": "fresh", "groupProperties": {
             **group_props(), "compatibility": advanced(backwardPolicy={"backwardPolicy": {"name": "Sideways"}})}}),
    Case("Advanced backward rule named forward", "PUT", COMPAT, 400, "ForwardTransitive",
         body={"compatibility": advanced(backwardPolicy={"backwardPolicy": {"name": "ForwardTransitive"}})}),
    Case("Advanced forward rule named backward", "PUT", COMPAT, 400, "BackwardTill",
         body={"compatibility": advanced(forwardPolicy={"forwardPolicy": {
             "name": "BackwardTill", "versionInfo": _TILL}})}),
    Case("Advanced Till without versionInfo", "PUT", COMPAT, 400, "versionInfo",
         body={"compatibility": advanced(backwardPolicy={"backwardPolicy": {"name": "BackwardTill"}})}),
    Case("Advanced rule without name", "PUT", COMPAT, 400, "name",
         body={"compatibility": advanced(backwardPolicy={"backwardPolicy": {}})}),
    Case("Advanced rule without its wrapper", "PUT", COMPAT, 400, "backwardPolicy",
         body={"compatibility": advanced(backwardPolicy={"name": "Backward"})}),
    Case("Advanced rule with a bad Till version", "PUT", COMPAT, 400, "version",
         body={"compatibility": advanced(backwardPolicy={"backwardPolicy": {
             "name": "BackwardTill", "versionInfo": {**_TILL, "version": -3}}})}),
    Case("Advanced without rules in validate", "POST", VALIDATE, 400, "advanced",
         body={"schemaInfo": avro(AVRO_USER_V2), "compatibility": {"policy": "Advanced"}}),
    Case("Advanced with a bad rule name in validate", "POST", VALIDATE, 400, "Sideways",
         body={"schemaInfo": avro(AVRO_USER_V2),
               "compatibility": advanced(forwardPolicy={"forwardPolicy": {"name": "Sideways"}})}),
]

_BAD_NAMES = {
    "dot dot": "..",
    "leading dot": ".hidden",
    "space": "a b",
    "only a space": " ",
    "unicode": "grüppe",
    "300 chars": "g" * 300,
    "leading dash": "-g",
    "trailing newline": "g\n",
    "slash": "a/b",
    "empty": "",
}
_QUOTED = {label: quote(value, safe="") for label, value in _BAD_NAMES.items()}

NAMES = [
    *(Case(f"create group named {label}", "POST", G, 400, "groupName", body=create(value))
      for label, value in _BAD_NAMES.items()),
    *(Case(f"group path {label}", "GET", f"/v1/groups/{quoted}", 400, "group name")
      for label, quoted in _QUOTED.items() if quoted not in ("", "a%2Fb")),
    *(Case(f"add to group path {label}", "POST", f"/v1/groups/{quoted}/schemas", 400, "group name",
           body=avro(AVRO_USER)) for label, quoted in _QUOTED.items() if quoted not in ("", "a%2Fb")),
    *(Case(f"namespace query {label}", "GET", f"/v1/groups?namespace={quoted}", 400, "namespace")
      for label, quoted in _QUOTED.items() if quoted),
    *(Case(f"create in namespace query {label}", "POST", f"/v1/groups?namespace={quoted}", 400, "namespace",
           body=create()) for label, quoted in _QUOTED.items() if quoted),
    *(Case(f"namespace path {label}", "GET", f"/v1/namespace/{quoted}/groups/avro", 400, "namespace")
      for label, quoted in _QUOTED.items() if quoted not in ("", "a%2Fb")),
    Case("addedTo in a bad namespace", "POST", "/v1/schemas/addedTo?namespace=..", 400, "namespace",
         body=avro(AVRO_USER)),
    Case("addedTo in a bad namespace path", "POST", "/v1/namespace/%2E%2E/schemas/addedTo", 400, "namespace",
         body=avro(AVRO_USER)),
]

_SCHEMA_ROUTES = [("add", ADD), ("find", FIND), ("canRead", CAN_READ), ("addedTo", "/v1/schemas/addedTo")]
_NOT_BASE64 = {"punctuation": "!!!", "bad padding": "YQ", "whitespace": "YW J j", "url-safe alphabet": "-_8=",
               "trailing newline": "YQ==\n"}

SCHEMAS = [
    *(Case(f"{route}: schemaData {label}", "POST", path, 400, "base64",
           body={**avro(AVRO_USER), "schemaData": data})
      for route, path in _SCHEMA_ROUTES for label, data in _NOT_BASE64.items()),
    Case("validate: schemaData not base64", "POST", VALIDATE, 400, "base64",
         body={"schemaInfo": {**avro(AVRO_USER), "schemaData": "!!!"}}),
    # Avro
    *(Case(f"{route}: Avro {label}", "POST", path, 400, says, body=avro(schema))
      for route, path in _SCHEMA_ROUTES
      for label, schema, says in [
          ("record without name", '{"type": "record", "fields": []}', "Avro"),
          ("not JSON", "not json", "Avro"),
          ("empty", "", "Avro"),
          ("field without type", '{"type": "record", "name": "U", "fields": [{"name": "x"}]}', "Avro"),
          ("duplicate field", '{"type": "record", "name": "U", "fields": [{"name": "x", "type": "int"}, '
                              '{"name": "x", "type": "int"}]}', "x"),
          ("unknown named type", '{"type": "record", "name": "U", "fields": [{"name": "x", "type": "Nowhere"}]}',
           "Nowhere"),
          ("duplicate enum symbol", '{"type": "enum", "name": "E", "symbols": ["A", "A"]}', "symbol"),
          ("bad name", '{"type": "record", "name": "1bad", "fields": []}', "1bad"),
      ]),
    Case("Avro not UTF-8", "POST", ADD, 400, "UTF-8", body=info("Avro", b"\xff\xfe{}")),
    Case("Avro default of the wrong type", "POST", ADD, 400, "default",
         body=avro('{"type": "record", "name": "User", "namespace": "bad.input", "fields": ['
                   '{"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": "old"}]}')),
    Case("Avro nested too deep", "POST", VALIDATE, 400, r"deep|nest",
         body={"schemaInfo": avro(nested(3000))}),
    Case("Avro type is not the full name", "POST", ADD, 400, "does not match", body=avro(AVRO_USER_V2, "Other")),
    Case("Avro type is the short name", "POST", ADD, 400, "does not match", body=avro(AVRO_USER_V2, "User")),
    Case("Avro type mismatch in find", "POST", FIND, 400, "does not match", body=avro(AVRO_USER, "bad.input.Other")),
    # Protobuf
    Case("proto syntax error", "POST", "/v1/groups/proto/schemas", 400, "proto",
         body=info("Protobuf", "syntax = \"proto3\"; message Order { int64 id = 1 }", "Order")),
    Case("proto missing import", "POST", "/v1/groups/proto/schemas", 400, "nothere.proto",
         body=info("Protobuf", 'syntax = "proto3"; import "nothere.proto"; message Order { int64 id = 1; }', "Order")),
    Case("protobuf garbage bytes", "POST", "/v1/groups/proto/schemas", 400, "FileDescriptorSet",
         body=info("Protobuf", b"\x0a\xff\xff garbage", "Order")),
    Case("protobuf empty", "POST", "/v1/groups/proto/schemas", 400, "no files", body=info("Protobuf", b"", "Order")),
    Case("protobuf type not in descriptor", "POST", "/v1/groups/proto/schemas", 400, "not in the Protobuf",
         body=info("Protobuf", PROTO_ORDER, "bad.input.Missing")),
    Case("protobuf short type name", "POST", "/v1/groups/proto/schemas/versions/find", 400, "Order",
         body=info("Protobuf", PROTO_ORDER, "Order")),
    Case("protobuf without type", "POST", "/v1/groups/proto/schemas/versions/canRead", 400, "type",
         body=info("Protobuf", PROTO_ORDER, "")),
    # JSON Schema
    Case("json schema unknown type", "POST", "/v1/groups/json/schemas", 400, "JSON Schema",
         body=info("Json", '{"type": "nope"}', "Item")),
    Case("json schema not JSON", "POST", "/v1/groups/json/schemas", 400, "not valid JSON",
         body=info("Json", '{"type": ', "Item")),
    Case("json schema is an array", "POST", "/v1/groups/json/schemas", 400, "object or a boolean",
         body=info("Json", "[1]", "Item")),
    Case("json schema bad keyword value", "POST", "/v1/groups/json/schemas", 400, "minimum",
         body=info("Json", '{"properties": {"a": {"minimum": "x"}}}', "Item")),
    Case("json schema without type or title", "POST", "/v1/groups/json/schemas/versions/validate", 400, "type",
         body={"schemaInfo": info("Json", '{"type": "object"}')}),
    Case("json schema nested too deep", "POST", "/v1/groups/json/schemas", 400, r"deep|nest",
         body=info("Json", "[" * 3000 + "]" * 3000, "Item")),
    # Custom
    Case("Custom schema without fullTypeName", "POST", "/v1/groups/custom/schemas", 400, "fullTypeName",
         body=info("Custom", "x", "T")),
    Case("Custom group without fullTypeName", "POST", G, 400, "fullTypeName", body=create(fmt="Custom",
                                                                                        policy="AllowAny")),
    Case("Custom version path without fullTypeName", "GET", "/v1/groups/custom/schemas/format/Custom/type/T/versions/0",
         400, "fullTypeName"),
]

_MISSING = "/v1/groups/nope"
MISSING_GROUP = [
    Case(f"missing group: {label}", method, f"{_MISSING}{suffix}", 404, "nope.*not found", body=body)
    for label, method, suffix, body in [
        ("get", "GET", "", None),
        ("delete", "DELETE", "", None),
        ("history", "GET", "/history", None),
        ("compatibility", "PUT", "/compatibility", {"compatibility": {"policy": "Full"}}),
        ("latest", "GET", "/schemas", None),
        ("add", "POST", "/schemas", avro(AVRO_USER)),
        ("versions", "GET", "/schemas/versions", None),
        ("find", "POST", "/schemas/versions/find", avro(AVRO_USER)),
        ("validate", "POST", "/schemas/versions/validate", {"schemaInfo": avro(AVRO_USER)}),
        ("canRead", "POST", "/schemas/versions/canRead", avro(AVRO_USER)),
        ("schema by id", "GET", "/schemas/schema/{sid}", None),
        ("delete by id", "DELETE", "/schemas/schema/{sid}", None),
        ("schema by version", "GET", "/schemas/format/Avro/type/bad.input.User/versions/0", None),
        ("delete by version", "DELETE", "/schemas/format/Avro/type/bad.input.User/versions/0", None),
        ("encoding id", "PUT", "/encodings", lambda w: {"versionInfo": _version(w), "codecType": ""}),
        ("encoding info", "GET", "/encodings/{eid}", None),
        ("codec types", "GET", "/codecTypes", None),
        ("add codec type", "POST", "/codecTypes", {"name": "zstd"}),
    ]
] + [
    Case("missing group in namespace path", "GET", "/v1/namespace/{ns}/groups/nope/history", 404, "nope.*not found"),
    Case("existing group in another namespace", "GET", "/v1/groups/avro?namespace={ns}x", 404, "avro.*not found"),
]

_NOT_FOUND = r"not found|not in group|no version"
UNKNOWN_IDS = [
    Case("unknown schema id", "GET", f"{AV}/schemas/schema/2147483000", 404, "2147483000"),
    Case("schema id of another group", "GET", f"{AV}/schemas/schema/{{psid}}", 404, "not in group"),
    Case("delete unknown schema id", "DELETE", f"{AV}/schemas/schema/2147483000", 404, "2147483000"),
    Case("unknown version", "GET", f"{AV}/schemas/format/Avro/type/bad.input.User/versions/7", 404, "version 7"),
    Case("delete unknown version", "DELETE", f"{AV}/schemas/format/Avro/type/bad.input.User/versions/7", 404,
         "version 7"),
    Case("unknown type", "GET", f"{AV}/schemas/format/Avro/type/bad.input.Nobody/versions/0", 404, "Nobody"),
    Case("type with a slash", "GET", f"{AV}/schemas/format/Avro/type/a/b/versions/0", 404, "a/b"),
    Case("version of another format", "GET", f"{AV}/schemas/format/Json/type/bad.input.User/versions/0", 404,
         "Json"),
    Case("unknown encoding id", "GET", f"{AV}/encodings/2147483000", 404, "2147483000"),
    Case("encoding id of another group", "GET", f"{AV}/encodings/{{peid}}", 404, "not in group"),
    Case("encoding for an unknown version", "PUT", ENC, 404, "version 5",
         body=lambda w: {"versionInfo": _version(w, version=5), "codecType": ""}),
    Case("encoding for a wrong schema id", "PUT", ENC, 404, "id 2147483000",
         body=lambda w: {"versionInfo": _version(w, id=2147483000), "codecType": ""}),
    Case("encoding for an unknown type", "PUT", ENC, 404, "Nobody",
         body=lambda w: {"versionInfo": _version(w, type="Nobody"), "codecType": ""}),
    Case("find an unregistered schema", "POST", FIND, 404, "not registered", body=avro(AVRO_USER_V2)),
    Case("addedTo an unregistered schema", "POST", "/v1/schemas/addedTo", 404, "not registered",
         body=avro(AVRO_USER_V2)),
    *(Case(f"{label} id {value}", method, f"{AV}{route}{value}", 404, _NOT_FOUND)
      for value in ("-1", "2147483648", "9223372036854775808", str(10**30), "abc", "1.5")
      for label, method, route in [
          ("schema", "GET", "/schemas/schema/"),
          ("delete schema", "DELETE", "/schemas/schema/"),
          ("encoding", "GET", "/encodings/"),
          ("version", "GET", "/schemas/format/Avro/type/bad.input.User/versions/"),
          ("delete version", "DELETE", "/schemas/format/Avro/type/bad.input.User/versions/"),
      ]),
]

CODECS_AND_FORMATS = [
    Case("encoding with an unregistered codec", "PUT", ENC, 412, "snappy",
         body=lambda w: {"versionInfo": _version(w), "codecType": "snappy"}),
    *(Case(f"{route}: Json schema in an Avro group", "POST", path, 417, "accepts Avro",
           body=info("Json", JSON_ITEM, "Item")) for route, path in _SCHEMA_ROUTES[:3]),
    Case("validate: Json schema in an Avro group", "POST", VALIDATE, 417, "accepts Avro",
         body={"schemaInfo": info("Json", JSON_ITEM, "Item")}),
    Case("Avro schema in a Protobuf group", "POST", "/v1/groups/proto/schemas", 417, "accepts Protobuf",
         body=avro(AVRO_USER)),
    Case("Protobuf schema in a Json group", "POST", "/v1/groups/json/schemas", 417, "accepts Json",
         body=info("Protobuf", PROTO_ORDER, "bad.input.Order")),
    Case("Custom schema of another full type", "POST", "/v1/groups/custom/schemas", 417, "my.other",
         body=info("Custom", "x", "T", full="my.other")),
]

_LIST = f"{G}?namespace={{ns}}"
PAGING = [
    *(Case(f"limit {value!r}", "GET", f"{_LIST}&limit={value}", 400, "limit")
      for value in ("abc", "1.5", "0", "-1", "10001", "1e3", str(10**30), "%C2%B2")),
    *(Case(f"continuationToken {value!r}", "GET", f"{_LIST}&continuationToken={value}", 400, "continuationToken")
      for value in ("abc", "-5", "1.5", "0x10", "%C2%B2", "%D9%A3", str(10**30), "9223372036854775808")),
]

#: NUL characters: PostgreSQL text cannot hold them, so they must be refused up front on every backend.
NUL = r"NUL|\\u0000|\\x00|control"
NUL_CHARACTERS = [
    Case("NUL in a schema type", "POST", "/v1/groups/custom/schemas", 400, NUL,
         body=info("Custom", "x", "T\u0000", full="my.custom")),
    Case("NUL in a fullTypeName", "POST", G, 400, NUL,
         body={"groupName": "fresh", "groupProperties": group_props(
             fmt="Custom", policy="AllowAny", serializationFormat={"serializationFormat": "Custom",
                                                                   "fullTypeName": "my.\u0000"})}),
    Case("NUL in a codec name", "POST", f"{AV}/codecTypes", 400, NUL, body={"name": "z\u0000"}),
    Case("NUL in an encoding's codec", "PUT", ENC, 400, NUL,
         body=lambda w: {"versionInfo": _version(w), "codecType": "z\u0000"}),
    Case("NUL in an encoding's type", "PUT", ENC, 400, NUL,
         body=lambda w: {"versionInfo": _version(w, type="bad.input.User\u0000"), "codecType": ""}),
    Case("NUL in the type query", "GET", f"{AV}/schemas/versions?type=%00", 400, NUL),
    Case("NUL in the latest type query", "GET", f"{AV}/schemas?type=%00", 400, NUL),
    Case("NUL in the version path", "GET", f"{AV}/schemas/format/Avro/type/%00/versions/0", 400, NUL),
]

OTHER = [
    Case("wrong method", "PATCH", AV, 405, "method", body={"compatibility": {"policy": "Full"}}),
    Case("unknown route", "GET", f"{AV}/nothing-here", 404, "not found"),
]

CASES: list[Case] = [
    *_generic_cases(),
    *WRONG_TYPES,
    *POLICIES_AND_FORMATS,
    *ADVANCED,
    *NAMES,
    *SCHEMAS,
    *MISSING_GROUP,
    *UNKNOWN_IDS,
    *CODECS_AND_FORMATS,
    *PAGING,
    *NUL_CHARACTERS,
    *OTHER,
]
assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_refused_and_changes_nothing(worlds: Worlds, case: Case) -> None:
    world, before = worlds.get()
    response = send(case, world)
    after = snapshot(world, worlds.engine)
    if after != before:
        worlds.spoil()
    assert_error(response, case.status, case.says)
    assert after == before


def test_the_valid_bodies_succeed(server_url: str, namespace: str) -> None:
    # The generic cases break these bodies in one way each; whole, every one is accepted.
    world = make_world(server_url, namespace)
    for label, method, path, body in BODY_ENDPOINTS:
        case = Case(label, method, path, 200, "", body=body)
        response = send(case, world)
        assert response.status in (200, 201, 204), (label, response.status, response.body[:300])


# -- body size ------------------------------------------------------------------------------------

LIMIT = 2048


@pytest.fixture(scope="module")
def small_url(settings: Settings) -> Iterator[str]:
    """A server whose body limit is LIMIT bytes, on the backend of the session."""
    with serve_in_thread(create_app(replace(settings, max_body_bytes=LIMIT))) as url:
        yield url


@pytest.fixture
def small_world(small_url: str, namespace: str) -> World:
    """The test's namespace, populated through the small-body server."""
    return make_world(small_url, namespace)


def _padded(body: Body, world: World, size: int) -> bytes:
    # Whitespace keeps the JSON valid, so the size is the body's only fault.
    text = json.dumps(body(world) if callable(body) else body).encode()
    return text + b" " * (size - len(text))


@pytest.mark.parametrize(("label", "method", "path", "body"), BODY_ENDPOINTS, ids=[e[0] for e in BODY_ENDPOINTS])
def test_oversize_body_is_refused(small_world: World, engine: Engine, label: str, method: str, path: str,
                                  body: Body) -> None:
    before = snapshot(small_world, engine)
    case = Case(label, method, path, 413, "", raw=_padded(body, small_world, 2 * LIMIT))
    assert_error(send(case, small_world), 413, f"exceeds.*{LIMIT}")
    assert snapshot(small_world, engine) == before


def test_body_at_the_limit_is_accepted(small_world: World) -> None:
    case = Case("add", "POST", ADD, 201, "", raw=_padded(avro(AVRO_USER_V2), small_world, LIMIT))
    response = send(case, small_world)
    assert response.status == 201, response.body
    assert response.json()["version"] == 1


# -- a schema that parses but is too deep to check ----------------------------------------------------


def test_deeply_nested_schema_never_breaks_its_group(server_url: str, namespace: str) -> None:
    # The checkers recurse once per level: a schema the parser takes but the checker cannot walk would
    # leave its group answering 500 to every later add. Refusing it up front, or checking it, both do.
    def record(inner: str) -> dict[str, Any]:
        return avro('{"type": "record", "name": "Deep", "fields": [{"name": "a", "type": ' + nested(200, inner) + "}]}")

    client = RegistryClient(server_url, namespace)
    client.create_group("deep", group("Avro", "Backward"))
    deep = wire.VersionInfo.model_validate({"type": "Deep", "version": 0, "id": 0}).to_domain()
    world = World(server_url, namespace, deep, 0, 0, 0)
    added = send(Case("add", "POST", "/v1/groups/deep/schemas", 201, "", body=record('"int"')), world)
    if added.status != 201:
        assert_error(added, 400, r"deep|nest")
        assert client.versions("deep") == []
        return
    # int -> long is a promotion: the wider schema can read what the first wrote.
    checked = send(Case("validate", "POST", "/v1/groups/deep/schemas/versions/validate", 200, "",
                        body={"schemaInfo": record('"long"')}), world)
    assert checked.status == 200, checked.body[:500]
    assert checked.json()["valid"] is True
