"""Who may do what, over real HTTP: every kind of caller against every group of routes.

One server per backend with ``STREAMCAT_AUTH=basic,oidc``. The callers are nobody, users with a
role, a user whose only right is a grant of ``write`` on one scope, API tokens (good, expired,
revoked), wrong passwords, and OIDC tokens (good, and with a wrong issuer, audience, signature or
expiry). The routes: registry reads, writes and admin actions, catalog reads, writes and admin
actions, and the admin API. A refused request must change nothing, which an admin checks through
the API afterwards; listings show only what the caller may read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text

from catalog_api.server.auth.credentials import new_token, token_hash
from catalog_api.server.auth.store import PrincipalStore
from catalog_api.server.config import Settings
from registry.db import make_engine, now_ms
from tests.conftest import BACKENDS, new_database
from tests.support.auth import (
    AUDIENCE,
    ISSUER,
    Api,
    SigningKeys,
    add_user,
    auth_server,
    migrated,
    unique,
)
from tests.support.bodies import avro_group, avro_schema_info

ROOT_PASSWORD = "root-password-1"
PASSWORD = "a-good-password"
SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
TABLE = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}


@dataclass
class World:
    """A server with auth on, an admin, the callers and the data they are tried against."""

    url: str
    database_url: str
    admin: Api
    callers: dict[str, Api]
    keys: SigningKeys


def _setup_data(admin: Api) -> None:
    for scope in ("shop", "other"):
        admin.ok("POST", "/v1/scopes", json={"scopeName": scope})
        admin.ok("POST", f"/v1/scopes/{scope}/streams", json={"streamName": "feed"})
    admin.ok("POST", "/v1/scopes/shop/tables", json={"tableName": "orders", "schema": TABLE})
    admin.ok("POST", "/v1/scopes/other/tables", json={"tableName": "t2", "schema": TABLE})
    admin.ok("POST", "/v1/scopes/other/tables", json={"tableName": "t3", "schema": TABLE})
    for namespace, group in (("shop", "plain"), ("other", "plain"), ("other", "plain2")):
        admin.ok("POST", f"/v1/groups?namespace={namespace}", json=avro_group(group))
        admin.ok("POST", f"/v1/groups/{group}/schemas?namespace={namespace}", json=avro_schema_info(SCHEMA))


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("auth")
    database_url = migrated(new_database(request.param, root, request))
    keys = SigningKeys()
    hour = int(time.time()) + 3600  # the matrix takes a while; its good tokens must outlast it
    settings = Settings(
        database_url=database_url,
        warehouse=str(root / "warehouse"),
        auth=("basic", "oidc"),
        oidc_issuer=ISSUER,
        oidc_audience=AUDIENCE,
        oidc_jwks=str(keys.write_jwks(root / "jwks.json")),
    )
    add_user(database_url, "root", ROOT_PASSWORD, "admin")  # as `streamcat users add root --role admin` would
    with auth_server(settings) as url:
        admin = Api(url, auth=("root", ROOT_PASSWORD))
        for name, role in (("reader", "reader"), ("writer", "writer"), ("shop-writer", None)):
            admin.ok("POST", "/v1/admin/principals/users", json={"name": name, "password": PASSWORD, "role": role})
        admin.ok("POST", "/v1/admin/grants", json={"principal": "shop-writer", "permission": "write",
                                                   "resource": "scope:shop"})
        good = admin.ok("POST", "/v1/admin/principals/tokens", json={"name": "ci", "role": "admin"})["token"]
        revoked = admin.ok("POST", "/v1/admin/principals/tokens", json={"name": "old", "role": "admin"})["token"]
        admin.ok("DELETE", "/v1/admin/principals/old")
        # An expired token, stored as `streamcat tokens create --expires-in` stores one, a second ago.
        expired = new_token()
        engine = make_engine(database_url)
        PrincipalStore(engine).add_token("lapsed", token_hash(expired), "admin", now_ms() - 1000)
        engine.dispose()
        _setup_data(admin)
        callers = {
            "anonymous": Api(url),
            "wrong-password": Api(url, auth=("writer", "not-the-password")),
            "unknown-user": Api(url, auth=("nobody", PASSWORD)),
            "reader": Api(url, auth=("reader", PASSWORD)),
            "writer": Api(url, auth=("writer", PASSWORD)),
            "admin": admin,
            "shop-writer": Api(url, auth=("shop-writer", PASSWORD)),
            "admin-token": Api(url, token=good),
            "expired-token": Api(url, token=expired),
            "revoked-token": Api(url, token=revoked),
            "made-up-token": Api(url, token=new_token()),
            "jwt-writer": Api(url, token=keys.token("w1", exp=hour, streamcat=["writer"])),
            "jwt-ec-reader": Api(url, token=keys.token("r1", key="ec", exp=hour, streamcat=["reader"])),
            "jwt-shop-writer": Api(url, token=keys.token("s1", exp=hour, streamcat=["write:scope:shop", "read:*"])),
            "jwt-wrong-issuer": Api(url, token=keys.token("w1", iss="https://evil.example", streamcat=["admin"])),
            "jwt-wrong-audience": Api(url, token=keys.token("w1", aud="another-api", streamcat=["admin"])),
            "jwt-wrong-signature": Api(url, token=keys.token("w1", key="stranger", streamcat=["admin"])),
            "jwt-expired": Api(url, token=keys.token("w1", exp=int(time.time()) - 120, streamcat=["admin"])),
        }
        yield World(url, database_url, admin, callers, keys)


#: What each caller may do: its level (1 read, 2 write, 3 admin) per scope and on the server as a
#: whole ("*"); None: not authenticated at all (401 everywhere).
RIGHTS: dict[str, dict[str, int] | None] = {
    "anonymous": None,
    "wrong-password": None,
    "unknown-user": None,
    "reader": {"shop": 1, "other": 1, "*": 1},
    "writer": {"shop": 2, "other": 2, "*": 2},
    "admin": {"shop": 3, "other": 3, "*": 3},
    "shop-writer": {"shop": 2},
    "admin-token": {"shop": 3, "other": 3, "*": 3},
    "expired-token": None,
    "revoked-token": None,
    "made-up-token": None,
    "jwt-writer": {"shop": 2, "other": 2, "*": 2},
    "jwt-ec-reader": {"shop": 1, "other": 1, "*": 1},
    "jwt-shop-writer": {"shop": 2, "other": 1, "*": 1},
    "jwt-wrong-issuer": None,
    "jwt-wrong-audience": None,
    "jwt-wrong-signature": None,
    "jwt-expired": None,
}


@dataclass(frozen=True)
class Case:
    """One request of a route group: what it needs where, and how to tell it changed nothing."""

    name: str
    level: int
    where: str
    method: str
    path: str
    success: int
    body: Callable[[str], Any] | None = None
    #: run as admin before the request: makes what the request acts on
    setup: Callable[[Api, str], None] | None = None
    #: run as admin after a refused request: True if nothing changed
    untouched: Callable[[Api, str], bool] | None = None


def _status(admin: Api, path: str) -> int:
    return admin.call("GET", path).status_code


def _victim_group(admin: Api, suffix: str) -> None:
    admin.ok("POST", "/v1/groups?namespace=shop", json=avro_group(f"v{suffix}"))


def _victim_stream(admin: Api, suffix: str) -> None:
    admin.ok("POST", "/v1/scopes/shop/streams", json={"streamName": f"v{suffix}"})


def _policy(admin: Api, suffix: str) -> str:
    return str(admin.ok("GET", f"/v1/groups/v{suffix}?namespace=shop")["compatibility"]["policy"])


def _columns(admin: Api) -> list[str]:
    return [f["name"] for f in admin.ok("GET", "/v1/scopes/shop/tables/orders")["schema"]["fields"]]


def _partitioning(admin: Api) -> str:
    return str(admin.ok("GET", "/v1/scopes/shop/tables/orders")["partitionSpec"]["text"])


def _chunks(admin: Api) -> list[str]:
    return [c["path"] for c in admin.ok("GET", "/v1/scopes/shop/streams/feed/chunks")["chunks"]]


CASES = [
    # registry reads
    Case("registry: get group", 1, "shop", "GET", "/v1/groups/plain?namespace=shop", 200),
    Case("registry: latest schemas", 1, "shop", "GET", "/v1/namespace/shop/groups/plain/schemas", 200),
    Case("registry: history", 1, "other", "GET", "/v1/groups/plain/history?namespace=other", 200),
    Case("registry: validate (a read)", 1, "shop", "POST", "/v1/groups/plain/schemas/versions/validate?namespace=shop",
         200, body=lambda s: {"schemaInfo": avro_schema_info(SCHEMA)}),
    # registry writes
    Case("registry: create group", 2, "shop", "POST", "/v1/groups?namespace=shop", 201,
         body=lambda s: avro_group(f"g{s}"),
         untouched=lambda a, s: _status(a, f"/v1/groups/g{s}?namespace=shop") == 404),
    Case("registry: add codec type", 2, "shop", "POST", "/v1/groups/plain/codecTypes?namespace=shop", 201,
         body=lambda s: {"name": f"codec{s}"},
         untouched=lambda a, s: f"codec{s}" not in str(a.ok("GET", "/v1/groups/plain/codecTypes?namespace=shop"))),
    Case("registry: create group elsewhere", 2, "other", "POST", "/v1/groups?namespace=other", 201,
         body=lambda s: avro_group(f"g{s}"),
         untouched=lambda a, s: _status(a, f"/v1/groups/g{s}?namespace=other") == 404),
    # registry admin
    Case("registry: change policy", 3, "shop", "PUT", "/v1/groups/v{s}/compatibility?namespace=shop", 200,
         body=lambda s: {"compatibility": {"policy": "Full"}}, setup=_victim_group,
         untouched=lambda a, s: _policy(a, s) == "Backward"),
    Case("registry: delete group", 3, "shop", "DELETE", "/v1/groups/v{s}?namespace=shop", 204, setup=_victim_group,
         untouched=lambda a, s: _status(a, f"/v1/groups/v{s}?namespace=shop") == 200),
    # catalog reads
    Case("catalog: get scope", 1, "shop", "GET", "/v1/scopes/shop", 200),
    Case("catalog: get table", 1, "shop", "GET", "/v1/scopes/shop/tables/orders", 200),
    Case("catalog: list commits", 1, "shop", "GET", "/v1/scopes/shop/streams/feed/commits", 200),
    Case("catalog: get table elsewhere", 1, "other", "GET", "/v1/scopes/other/tables/t2", 200),
    Case("catalog: plan chunks (a read)", 1, "shop", "POST", "/v1/scopes/shop/streams/feed/chunks/plan", 200,
         body=lambda s: {"filters": [{"op": "eq", "column": "id", "value": 1}]}),
    Case("catalog: list partitions", 1, "other", "GET", "/v1/scopes/other/tables/t2/partitions", 200),
    # catalog writes
    Case("catalog: create stream", 2, "shop", "POST", "/v1/scopes/shop/streams", 201,
         body=lambda s: {"streamName": f"s{s}"},
         untouched=lambda a, s: _status(a, f"/v1/scopes/shop/streams/s{s}") == 404),
    Case("catalog: commit", 2, "shop", "POST", "/v1/scopes/shop/streams/feed/commits", 201,
         body=lambda s: {"chunks": [{"path": f"c{s}.evt", "kind": "events", "eventCount": 1, "bytes": 1}]},
         untouched=lambda a, s: f"c{s}.evt" not in _chunks(a)),
    Case("catalog: commit of several tables", 2, "shop", "POST", "/v1/commits", 201,
         body=lambda s: {"commits": [{"scope": "shop", "stream": "feed", "chunks": [
             {"path": f"m{s}.evt", "kind": "events", "eventCount": 1, "bytes": 1}]}]},
         untouched=lambda a, s: f"m{s}.evt" not in _chunks(a)),
    # write on every table it names: a caller who may write in one scope only changes neither
    Case("catalog: commit of tables of two scopes", 2, "other", "POST", "/v1/commits", 201,
         body=lambda s: {"commits": [{"scope": scope, "stream": "feed", "chunks": [
             {"path": f"x{s}.evt", "kind": "events", "eventCount": 1, "bytes": 1}]} for scope in ("shop", "other")]},
         untouched=lambda a, s: f"x{s}.evt" not in _chunks(a)),
    Case("catalog: alter table", 2, "shop", "PATCH", "/v1/scopes/shop/tables/orders", 200,
         body=lambda s: {"changes": [{"op": "addColumn", "path": [f"c{s}"], "type": "string"}]},
         untouched=lambda a, s: f"c{s}" not in _columns(a)),
    Case("catalog: set partitioning", 2, "shop", "PATCH", "/v1/scopes/shop/tables/orders", 200,
         body=lambda s: {"changes": [{"op": "addColumn", "path": [f"p{s}"], "type": "string"},
                                     {"op": "setPartitioning", "partitioning": f"p{s}"}]},
         untouched=lambda a, s: f"p{s}" not in _columns(a) and f"p{s}" not in _partitioning(a)),
    Case("catalog: create stream elsewhere", 2, "other", "POST", "/v1/scopes/other/streams", 201,
         body=lambda s: {"streamName": f"s{s}"},
         untouched=lambda a, s: _status(a, f"/v1/scopes/other/streams/s{s}") == 404),
    Case("catalog: create scope", 2, "*", "POST", "/v1/scopes", 201, body=lambda s: {"scopeName": f"sc{s}"},
         untouched=lambda a, s: _status(a, f"/v1/scopes/sc{s}") == 404),
    # catalog admin
    Case("catalog: delete stream", 3, "shop", "DELETE", "/v1/scopes/shop/streams/v{s}", 204, setup=_victim_stream,
         untouched=lambda a, s: _status(a, f"/v1/scopes/shop/streams/v{s}") == 200),
    Case("catalog: table policy through ALTER", 3, "shop", "PATCH", "/v1/scopes/shop/tables/orders", 200,
         body=lambda s: {"changes": [{"op": "setCompatibility", "compatibility": {"policy": "Backward"}}]}),
    # admin API
    Case("admin: list principals", 3, "*", "GET", "/v1/admin/principals", 200),
    Case("admin: grant", 3, "*", "POST", "/v1/admin/grants", 201,
         body=lambda s: {"principal": "reader", "permission": "admin", "resource": f"namespace:n{s}"},
         untouched=lambda a, s: f"namespace:n{s}" not in str(a.ok("GET", "/v1/admin/grants?principal=reader"))),
]


def _expected(caller: str, case: Case) -> int:
    rights = RIGHTS[caller]
    if rights is None:
        return 401
    return case.success if rights.get(case.where, 0) >= case.level else 403


@pytest.mark.parametrize("caller", list(RIGHTS))
def test_each_caller_against_every_route_group(world: World, caller: str) -> None:
    api = world.callers[caller]
    wrong = []
    for case in CASES:
        suffix = unique("")
        if case.setup is not None:
            case.setup(world.admin, suffix)
        response = api.call(
            case.method, case.path.format(s=suffix), json=case.body(suffix) if case.body is not None else None
        )
        expected = _expected(caller, case)
        if response.status_code != expected:
            wrong.append(f"{case.name}: {response.status_code} (expected {expected}) {response.text[:200]}")
            continue
        if expected in (401, 403):
            error = response.json()["error"]
            assert error["code"] == ("Unauthorized" if expected == 401 else "Forbidden"), error
            assert error["message"]
            if expected == 401:
                challenges = response.headers.get("WWW-Authenticate", "")
                assert 'Basic realm="streamcat"' in challenges
                assert "Bearer" in challenges
            if case.untouched is not None and not case.untouched(world.admin, suffix):
                wrong.append(f"{case.name}: refused with {expected}, but it changed something")
    assert wrong == []


def test_service_endpoints_stay_open(world: World) -> None:
    anonymous = world.callers["anonymous"]
    for path in ("/ping", "/health/live", "/health/ready", "/metrics", "/v1/openapi.json"):
        assert anonymous.call("GET", path).status_code == 200, path
    # An unknown path tells a stranger nothing, not even that it does not exist.
    assert anonymous.call("GET", "/v1/nothing-here").status_code == 401
    assert world.admin.call("GET", "/v1/nothing-here").status_code == 404


def test_listings_show_only_what_the_caller_may_read(world: World) -> None:
    admin = world.admin
    name = unique("lister")
    admin.ok("POST", "/v1/admin/principals/users", json={"name": name, "password": PASSWORD})
    for resource in ("table:other.t2", "group:other/plain"):
        admin.ok("POST", "/v1/admin/grants", json={"principal": name, "permission": "read", "resource": resource})
    api = Api(world.url, auth=(name, PASSWORD))

    scopes = [s["scopeName"] for s in api.ok("GET", "/v1/scopes")["scopes"]]
    assert scopes == ["other"], "only the scope it can read something in"
    tables = [t["tableName"] for t in api.ok("GET", "/v1/scopes/other/tables")["tables"]]
    assert tables == ["t2"]
    streams = [s["streamName"] for s in api.ok("GET", "/v1/scopes/other/streams")["streams"]]
    assert streams == ["t2"]
    groups = api.ok("GET", "/v1/groups?namespace=other")["groups"]
    assert sorted(groups) == ["plain", "t2"]
    # The same schema is in plain and plain2: only plain is told of.
    added_to = api.ok("POST", "/v1/schemas/addedTo?namespace=other", json=avro_schema_info(SCHEMA))["groups"]
    assert list(added_to) == ["plain"]
    everywhere = admin.ok("POST", "/v1/schemas/addedTo?namespace=other", json=avro_schema_info(SCHEMA))["groups"]
    assert set(everywhere) == {"plain", "plain2"}

    # Where it has nothing, it learns nothing: not the scope's tables, nor whether a scope exists.
    assert api.call("GET", "/v1/scopes/shop/tables").status_code == 403
    assert api.call("GET", "/v1/scopes/no-such-scope/tables").status_code == 403
    assert api.call("GET", "/v1/scopes/other/tables/t3").status_code == 403
    assert api.call("GET", "/v1/scopes/other").status_code == 403

    # A reader sees everything.
    reader = world.callers["reader"]
    assert {"shop", "other"} <= {s["scopeName"] for s in reader.ok("GET", "/v1/scopes")["scopes"]}
    assert {"t2", "t3"} <= {t["tableName"] for t in reader.ok("GET", "/v1/scopes/other/tables")["tables"]}


def test_removing_a_user_takes_its_grants_along(world: World) -> None:
    admin = world.admin
    name = unique("temp")
    admin.ok("POST", "/v1/admin/principals/users", json={"name": name, "password": PASSWORD})
    admin.ok("POST", "/v1/admin/grants", json={"principal": name, "permission": "admin", "resource": "*"})
    api = Api(world.url, auth=(name, PASSWORD))
    assert api.call("GET", "/v1/admin/principals").status_code == 200
    admin.ok("DELETE", f"/v1/admin/principals/{name}")
    assert api.call("GET", "/v1/admin/principals").status_code == 401, "a removed user is refused at once"
    # A new user of the same name starts with nothing.
    admin.ok("POST", "/v1/admin/principals/users", json={"name": name, "password": PASSWORD})
    assert admin.ok("GET", f"/v1/admin/grants?principal={name}")["grants"] == []
    assert Api(world.url, auth=(name, PASSWORD)).call("GET", "/v1/admin/principals").status_code == 403


def test_admin_api_answers_in_the_usual_shapes(world: World) -> None:
    admin = world.admin
    taken = admin.call("POST", "/v1/admin/principals/users", json={"name": "reader", "password": PASSWORD})
    assert taken.status_code == 409
    assert taken.json()["error"]["code"] == "PrincipalExists"
    short = admin.call("POST", "/v1/admin/principals/users", json={"name": "x", "password": "short"})
    assert short.status_code == 400
    bad = admin.call("POST", "/v1/admin/grants", json={"principal": "reader", "permission": "read", "resource": "x"})
    assert bad.status_code == 400
    assert "invalid resource" in bad.json()["error"]["message"]
    nobody = admin.call("POST", "/v1/admin/grants",
                        json={"principal": "ghost", "permission": "read", "resource": "*"})
    assert nobody.status_code == 404
    grant = admin.ok("POST", "/v1/admin/grants",
                     json={"principal": "oidc:someone", "permission": "read", "resource": "table:shop.orders"})
    assert grant["resource"] == "group:shop/orders", "tables are stored as the groups they are"
    admin.ok("DELETE", f"/v1/admin/grants/{grant['id']}")
    assert admin.call("DELETE", f"/v1/admin/grants/{grant['id']}").status_code == 404
    for name in ("two words", "oidc:", "line\nbreak", "tab\tbed"):
        refused = admin.call("GET", "/v1/admin/grants", params={"principal": name})
        assert refused.status_code == 400, name
        assert "principal" in refused.json()["error"]["message"]
        body = {"principal": name, "permission": "read", "resource": "*"}
        refused = admin.call("POST", "/v1/admin/grants", json=body)
        assert refused.status_code == 400, name
    tokens = admin.ok("GET", "/v1/admin/principals?kind=token")["principals"]
    assert tokens, "tokens are listed"
    assert all(set(t) <= {"name", "kind", "role", "createdAt", "expiresAt"} for t in tokens), "never their secret"


def test_passwords_and_tokens_are_stored_only_as_hashes(world: World) -> None:
    engine = make_engine(world.database_url)
    try:
        with engine.connect() as conn:
            stored = [row[0] for row in conn.execute(text("SELECT secret_hash FROM principals"))]
    finally:
        engine.dispose()
    assert all(PASSWORD not in s and ROOT_PASSWORD not in s for s in stored)
    assert any(s.startswith("$argon2id$") for s in stored)
    assert not any(s.startswith("sct_") for s in stored)
