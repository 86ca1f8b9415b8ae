"""Views over REST: ``/v1/scopes/{scope}/views`` on every backend (docs/views.md)."""

from __future__ import annotations

import io
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.server import backup, migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from catalog_api.views.wire import View, ViewList
from registry.db import make_engine
from registry.errors import AlreadyExists
from tests.support import auth
from tests.support.auth import add_user, auth_server, migrated
from tests.support.net import serve_in_thread
from tests.support.postgres import PostgresServer

ORDERS = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "item", "type": "string", "nullable": True, "metadata": {}},
    ],
}
#: What Spark's shim sends for CREATE VIEW v (item COMMENT 'what was sold') AS SELECT item FROM orders.
DEFINITION: dict[str, Any] = {
    "queryText": "SELECT item FROM orders",
    "schema": {
        "type": "struct",
        "fields": [{"name": "item", "type": "string", "nullable": True, "metadata": {"comment": "what was sold"}}],
    },
    "currentCatalog": "streamcat",
    "currentNamespace": ["shop"],
    "queryColumnNames": ["item"],
    "sqlConfigs": {"spark.sql.ansi.enabled": "true"},
    "schemaMode": "COMPENSATION",
    "comment": "items sold",
    "properties": {"team": "sales"},
    "owner": "alice",
}


class Api:
    """The views of one scope over plain HTTP: what any client sends and sees."""

    def __init__(self, base: str, scope: str) -> None:
        self.base, self.scope = base, scope

    def url(self, view: str = "", scope: str | None = None) -> str:
        return f"{self.base}/v1/scopes/{scope or self.scope}/views" + (f"/{view}" if view else "")

    def put(self, view: str, body: dict[str, Any], scope: str | None = None) -> requests.Response:
        return requests.put(self.url(view, scope), json=body, timeout=30)

    def get(self, view: str = "", scope: str | None = None, **params: Any) -> requests.Response:
        return requests.get(self.url(view, scope), params=params, timeout=30)

    def delete(self, view: str, scope: str | None = None) -> requests.Response:
        return requests.delete(self.url(view, scope), timeout=30)

    def rename(self, view: str, body: dict[str, Any]) -> requests.Response:
        return requests.post(self.url(view) + "/rename", json=body, timeout=30)


def code(response: requests.Response) -> str:
    found: str = response.json()["error"]["code"]
    return found


def message(response: requests.Response) -> str:
    found: str = response.json()["error"]["message"]
    return found


@pytest.fixture
def api(server_url: str, scope: str) -> Api:
    return Api(server_url, scope)


def test_create_read_replace_and_drop_a_view(api: Api) -> None:
    created = api.put("sold", DEFINITION)
    assert created.status_code == 201, created.text
    view = View.model_validate_json(created.text)
    assert (view.scope_name, view.view_name, view.version) == (api.scope, "sold", 1)
    assert view.created_at == view.updated_at > 0
    stored = api.get("sold").json()
    # Everything Spark handed over comes back as it was sent.
    assert {k: stored[k] for k in DEFINITION} == DEFINITION
    assert [v["viewName"] for v in api.get().json()["views"]] == ["sold"]

    replaced = api.put("sold", {**DEFINITION, "queryText": "SELECT item FROM orders WHERE id > 0", "comment": ""})
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["version"], replaced.json()["queryText"]) == (2, "SELECT item FROM orders WHERE id > 0")
    assert replaced.json()["createdAt"] == view.created_at
    assert api.get("sold").json()["comment"] == ""

    assert api.delete("sold").status_code == 204
    gone = api.get("sold")
    assert (gone.status_code, code(gone)) == (404, "ViewNotFound")
    assert api.get().json()["views"] == []
    assert api.delete("sold").status_code == 404


def test_modes_say_whether_an_existing_view_may_be_replaced(api: Api) -> None:
    missing = api.put("v", {**DEFINITION, "mode": "replace"})
    assert (missing.status_code, code(missing)) == (404, "ViewNotFound")
    assert api.put("v", {**DEFINITION, "mode": "create"}).status_code == 201
    again = api.put("v", {**DEFINITION, "mode": "create", "queryText": "SELECT 1 AS item"})
    assert (again.status_code, code(again)) == (409, "ViewAlreadyExists")
    assert api.get("v").json()["queryText"] == DEFINITION["queryText"], "a refused create changes nothing"
    assert api.put("v", {**DEFINITION, "mode": "replace", "expectedVersion": 1}).status_code == 200
    stale = api.put("v", {**DEFINITION, "mode": "replace", "expectedVersion": 1, "queryText": "SELECT 2 AS item"})
    assert (stale.status_code, code(stale)) == (409, "WriteConflict")
    assert api.get("v").json()["version"] == 2


def test_tables_and_views_share_one_name_space(api: Api, catalog: CatalogClient) -> None:
    catalog.create_table(api.scope, "orders", ORDERS)
    clash = api.put("orders", DEFINITION)
    assert (clash.status_code, code(clash)) == (409, "TableAlreadyExists")
    assert "table" in message(clash)
    assert api.get("orders").status_code == 404
    assert api.put("sold", DEFINITION).status_code == 201
    onto_table = api.rename("sold", {"viewName": "orders"})
    assert (onto_table.status_code, code(onto_table)) == (409, "TableAlreadyExists")
    with pytest.raises(AlreadyExists, match="view"):
        catalog.create_table(api.scope, "sold", ORDERS)
    assert api.get("sold").json()["viewName"] == "sold", "the view stays"


def test_a_table_and_a_view_created_at_once_never_both_take_a_name(api: Api, catalog: CatalogClient) -> None:
    def table(i: int) -> str:
        try:
            catalog.create_table(api.scope, f"n{i}", ORDERS)
            return "table"
        except AlreadyExists:
            return "refused"

    def view(i: int) -> str:
        answer = api.put(f"n{i}", DEFINITION)
        return "view" if answer.status_code == 201 else code(answer)

    with ThreadPoolExecutor(8) as pool:
        tables = [pool.submit(table, i) for i in range(12)]
        views = [pool.submit(view, i) for i in range(12)]
        outcomes = [(t.result(), v.result()) for t, v in zip(tables, views, strict=True)]
    for made_table, made_view in outcomes:
        assert (made_table == "table") != (made_view == "view"), outcomes


def test_rename_within_and_across_scopes(api: Api, catalog: CatalogClient, namespace: str) -> None:
    other = f"{namespace}x"
    catalog.create_scope(other)
    assert api.put("a", DEFINITION).status_code == 201
    assert api.put("b", DEFINITION).status_code == 201
    taken = api.rename("a", {"viewName": "b"})
    assert (taken.status_code, code(taken)) == (409, "ViewAlreadyExists")
    renamed = api.rename("a", {"viewName": "c"})
    assert (renamed.status_code, renamed.json()["viewName"], renamed.json()["version"]) == (200, "c", 2)
    assert api.get("a").status_code == 404
    moved = api.rename("c", {"viewName": "c", "scopeName": other})
    assert (moved.status_code, moved.json()["scopeName"]) == (200, other)
    assert api.get("c", scope=other).json()["queryText"] == DEFINITION["queryText"]
    assert [v["viewName"] for v in api.get().json()["views"]] == ["b"]
    nowhere = api.rename("b", {"viewName": "b", "scopeName": f"{namespace}missing"})
    assert (nowhere.status_code, code(nowhere)) == (404, "ScopeNotFound")


def test_a_scope_holding_views_is_not_empty_and_cascade_drops_them(api: Api, catalog: CatalogClient) -> None:
    assert api.put("only", DEFINITION).status_code == 201
    refused = requests.delete(f"{api.base}/v1/scopes/{api.scope}", timeout=30)
    assert (refused.status_code, code(refused)) == (409, "ScopeNotEmpty")
    assert "1 view" in message(refused)
    assert api.get("only").status_code == 200, "a refused delete keeps the views"
    catalog.delete_scope(api.scope, cascade=True)
    catalog.create_scope(api.scope)
    assert api.get().json()["views"] == [], "a scope of the same name starts without the old views"
    assert api.get("only").status_code == 404


def test_listing_pages(api: Api) -> None:
    names = [f"v{i}" for i in range(5)]
    for name in names:
        assert api.put(name, DEFINITION).status_code == 201
    seen: list[str] = []
    token = None
    while True:
        page = ViewList.model_validate_json(api.get(limit=2, **({"continuationToken": token} if token else {})).text)
        seen += [v.view_name for v in page.views]
        if not page.views:
            break
        token = page.continuation_token
    assert seen == names


def test_a_view_needs_its_scope(server_url: str) -> None:
    api = Api(server_url, f"missing{uuid.uuid4().hex[:8]}")
    for response in (api.put("v", DEFINITION), api.get("v"), api.get(), api.delete("v")):
        assert (response.status_code, code(response)) == (404, "ScopeNotFound")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"queryText": None}, "queryText"),
        ({"queryText": ""}, "queryText"),
        ({"schema": {"type": "array", "fields": []}}, "schema.type"),
        ({"schema": {"type": "struct", "fields": [{"name": 3, "type": "string"}]}}, "schema.fields[0].name"),
        ({"schema": {"type": "struct", "fields": [{"type": "string"}]}}, "schema.fields[0].name"),
        ({"currentNamespace": "shop"}, "currentNamespace"),
        ({"queryColumnNames": ["a", "b"]}, "queryColumnNames"),
        ({"sqlConfigs": {"k": 1}}, "sqlConfigs.k"),
        ({"mode": "upsert"}, "mode"),
        ({"expectedVersion": 0}, "expectedVersion"),
        ({"surprise": True}, "surprise"),
        (
            {
                "schema": {
                    "type": "struct",
                    "fields": [{"name": "a", "type": "int"}, {"name": "A", "type": "int"}],
                },
                "queryColumnNames": [],
            },
            "schema.fields[1].name",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api: Api, change: dict[str, Any], field: str) -> None:
    body = {**DEFINITION, **change}
    if body.get("queryText") is None:
        del body["queryText"]
    response = api.put("v", body)
    assert response.status_code == 400, response.text
    assert field in message(response)
    assert api.get("v").status_code == 404


def test_bad_names_are_400s(api: Api) -> None:
    for response in (api.put("bad name", DEFINITION), api.get("-x"), api.rename("v", {"viewName": "a/b"})):
        assert response.status_code in (400, 404), response.text
    bad = api.put("bad name", DEFINITION)
    assert (bad.status_code, code(bad)) == (400, "BadRequest")
    assert "view name" in message(bad)
    assert api.put("v", DEFINITION).status_code == 201
    renamed = api.rename("v", {"viewName": "bad name"})
    assert renamed.status_code == 400
    assert "viewName" in message(renamed)


def test_not_json_numbers_are_400s(api: Api) -> None:
    column = '{"name": "a", "type": "int", "nullable": true, "metadata": {"x": NaN}}'
    raw = f'{{"queryText": "SELECT 1 AS a", "schema": {{"type": "struct", "fields": [{column}]}}}}'
    response = requests.put(api.url("v"), data=raw, headers={"Content-Type": "application/json"}, timeout=30)
    assert response.status_code == 400, response.text
    assert "schema.fields[0].metadata" in message(response)


@pytest.mark.parametrize("mode", ["create", "createOrReplace"])
def test_concurrent_creates_answer_one_201_and_no_5xx(api: Api, mode: str) -> None:
    def create(i: int) -> requests.Response:
        return api.put("race", {**DEFINITION, "mode": mode, "queryText": f"SELECT {i} AS item"})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(create, range(8)))
    statuses = sorted(r.status_code for r in answers)
    if mode == "create":
        assert statuses == [201] + [409] * 7
        assert {code(r) for r in answers if r.status_code == 409} == {"ViewAlreadyExists"}
    else:
        assert statuses == [200] * 7 + [201], "the losers replace the winner's view"
        assert api.get("race").json()["version"] == 8


def test_views_are_part_of_backups(postgres: PostgresServer, tmp_path: Path) -> None:
    source, target = (postgres.create_database(f"views_{uuid.uuid4().hex[:8]}") for _ in range(2))
    for url in (source, target):
        migrate.upgrade(url)
    settings = Settings(database_url=source, warehouse=str(tmp_path))
    with serve_in_thread(create_app(settings)) as url:
        CatalogClient(url).create_scope("shop")
        api = Api(url, "shop")
        assert api.put("sold", DEFINITION).status_code == 201
        assert api.put("sold", {**DEFINITION, "comment": "v2"}).status_code == 200
        before = api.get("sold").content
    dump = io.StringIO()
    assert backup.backup(make_engine(source), dump)["views"] == 1
    backup.restore(make_engine(target), io.StringIO(dump.getvalue()))
    with serve_in_thread(create_app(Settings(database_url=target, warehouse=str(tmp_path)))) as url:
        api = Api(url, "shop")
        assert api.get("sold").content == before
        assert api.put("other", DEFINITION).status_code == 201, "new views get ids after the restored ones"
        assert [v["viewName"] for v in api.get().json()["views"]] == ["sold", "other"]


def test_who_may_read_and_change_views(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'auth.db'}")
    add_user(url, "root", "root-password", "admin")
    settings = Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",))
    with auth_server(settings) as base:
        admin = auth.Api(base, auth=("root", "root-password"))
        for name, role in (("reader", "reader"), ("shop-writer", None), ("table-reader", None)):
            admin.ok("POST", "/v1/admin/principals/users", json={"name": name, "password": "pw-123456", "role": role})
        grants = (("shop-writer", "write", "scope:shop"), ("table-reader", "read", "table:shop.orders"))
        for principal, permission, resource in grants:
            admin.ok(
                "POST",
                "/v1/admin/grants",
                json={"principal": principal, "permission": permission, "resource": resource},
            )
        admin.ok("POST", "/v1/scopes", json={"scopeName": "shop"})
        admin.ok("POST", "/v1/scopes", json={"scopeName": "other"})
        reader, writer, table_reader = (
            auth.Api(base, auth=(name, "pw-123456")) for name in ("reader", "shop-writer", "table-reader")
        )
        view = "/v1/scopes/shop/views/sold"
        assert reader.call("PUT", view, json=DEFINITION).status_code == 403
        assert writer.call("PUT", view, json=DEFINITION).status_code == 201
        assert reader.ok("GET", view)["queryText"] == DEFINITION["queryText"]
        assert [v["viewName"] for v in reader.ok("GET", "/v1/scopes/shop/views")["views"]] == ["sold"]
        # Read on one table of the scope is not read on every view of it: a view may read any table.
        assert table_reader.call("GET", view).status_code == 403
        assert table_reader.ok("GET", "/v1/scopes/shop/views")["views"] == []
        moved = writer.call("POST", view + "/rename", json={"viewName": "sold", "scopeName": "other"})
        assert moved.status_code == 403, "a rename into another scope needs write there too"
        assert reader.call("DELETE", view).status_code == 403
        assert writer.call("DELETE", view).status_code == 204
