"""Every route declares the permission it needs; one that does not is refused to everyone; the
service endpoints are open or closed as configured; mutations and refusals reach the audit log."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Blueprint, Flask

from catalog_api.server.app import create_app
from catalog_api.server.auth.guard import ALWAYS_OPEN, SERVICE_ENDPOINTS
from catalog_api.server.config import Settings
from catalog_api.server.observability import JsonFormatter
from registry.api.operations import declared, operation
from tests.support.auth import Api, add_user, auth_server, migrated
from tests.support.net import serve_in_thread

#: What each operation needs, on what: the access decisions of the whole API in one table.
NEEDS = {
    # registry
    "listGroups": "read on namespace (listing)",
    "createGroup": "write on namespace",
    "getGroupProperties": "read on group",
    "deleteGroup": "admin on group",
    "getGroupHistory": "read on group",
    "updateCompatibility": "admin on group",
    "getSchemas": "read on group",
    "addSchema": "write on group",
    "getSchemaVersions": "read on group",
    "getSchemaVersion": "read on group",
    "validate": "read on group",
    "canRead": "read on group",
    "getSchemaForId": "read on group",
    "deleteSchemaForId": "admin on group",
    "getSchemaFromVersion": "read on group",
    "deleteSchemaVersion": "admin on group",
    "getEncodingId": "write on group",
    "getEncodingInfo": "read on group",
    "getCodecTypesList": "read on group",
    "addCodecType": "write on group",
    "getSchemaReferences": "read on namespace (listing)",
    # catalog
    "listScopes": "read on * (listing)",
    "createScope": "write on *",
    "getScope": "read on scope",
    "updateScope": "write on scope",
    "deleteScope": "admin on scope",
    "listStreams": "read on scope (listing)",
    "createStream": "write on scope",
    "getStream": "read on stream",
    "deleteStream": "admin on stream",
    "updateStreamState": "write on stream",
    "truncateStream": "admin on stream",
    "listCommits": "read on stream",
    "findCommit": "read on stream",
    "commit": "write on stream",
    "commitTables": "write on * (listing)",  # then write on every table the body names
    "listChunks": "read on stream",
    "planChunks": "read on stream",
    "listChanges": "read on stream",
    "listReaders": "read on stream",
    "getReader": "read on stream",
    "setReader": "write on stream",
    "deleteReader": "admin on stream",
    "expireStream": "write on stream",
    "listTables": "read on scope (listing)",
    "createTable": "write on scope",
    "getTable": "read on table",
    "alterTable": "write on table",
    "dropTable": "admin on table",
    "listPartitions": "read on table",
    # views hold no data: writers of the scope create, replace, rename and drop them
    "listViews": "read on scope (listing)",
    "getView": "read on scope",
    "putView": "write on scope",
    "dropView": "write on scope",
    "renameView": "write on scope",
    # materialized tables are tables: created in a scope by its writers, changed and refreshed by the table's
    "listMaterializedTables": "read on scope (listing)",
    "createMaterializedTable": "write on scope",
    "getMaterializedTable": "read on table",
    "alterMaterializedTable": "write on table",
    "acquireRefreshLease": "write on table",
    "recordRefresh": "write on table",
    # the Iceberg REST catalog: namespaces are scopes and tables tables, needing what the catalog's own routes do
    **dict.fromkeys(["icebergGetConfig", "icebergListNamespaces", "icebergRenameTable"], "read on * (listing)"),
    "icebergCreateNamespace": "write on *",
    "icebergLoadNamespace": "read on scope",
    "icebergUpdateNamespaceProperties": "write on scope",
    "icebergDropNamespace": "admin on scope",
    "icebergListTables": "read on scope (listing)",
    **dict.fromkeys(["icebergLoadTable", "icebergTableExists"], "read on table"),
    "icebergCommitTable": "write on table",
    "icebergCreateTable": "write on scope",
    "icebergDropTable": "admin on table",
    # Confluent API: on the subject's group (a context's configuration: on its namespace); lists and
    # ids need read somewhere and show what the caller may read; the registry's config and mode: admins
    **dict.fromkeys(
        [
            "confluentLookUpSchema", "confluentListVersions", "confluentGetVersion", "confluentGetVersionSchema",
            "confluentReferencedBy", "confluentTestCompatibility", "confluentTestCompatibilityAll",
            "confluentGetSubjectConfig", "confluentGetSubjectMode", "confluentLatestWithMetadata",
            # the DEK registry: a subject's DEKs are its group's
            "dekGetLatestDek", "dekListVersions", "dekGetDek",
        ],
        "read on group",
    ),
    "dekCreateDek": "write on group",
    **dict.fromkeys(["dekDeleteDeks", "dekDeleteDek", "dekUndeleteDeks", "dekUndeleteDek"], "admin on group"),
    # KEKs name keys in a KMS and hold no data: readers see them, writers register them
    **dict.fromkeys(["dekListKeks", "dekGetKek"], "read on * (listing)"),
    "dekCreateKek": "write on * (listing)",
    **dict.fromkeys(["dekUpdateKek", "dekDeleteKek", "dekUndeleteKek", "dekListSubjects"], "admin on *"),
    **dict.fromkeys(
        [
            "confluentListSubjects", "confluentListSchemas", "confluentSchemaTypes", "confluentGetSchemaById",
            "confluentGetSchemaTextById", "confluentSubjectsOfSchema", "confluentVersionsOfSchema",
            "confluentGetConfig", "confluentGetMode", "confluentListContexts", "confluentAssociations",
        ],
        "read on * (listing)",
    ),
    "confluentRegisterSchema": "write on group",
    **dict.fromkeys(
        [
            "confluentDeleteSubject", "confluentDeleteVersion", "confluentSetSubjectConfig",
            "confluentDeleteSubjectConfig", "confluentSetSubjectMode", "confluentDeleteSubjectMode",
        ],
        "admin on group",
    ),
    **dict.fromkeys(["confluentSetConfig", "confluentDeleteConfig", "confluentSetMode", "confluentDeleteMode"],
                    "admin on *"),
    # admin API
    "listPrincipals": "admin on *",
    "createUser": "admin on *",
    "createToken": "admin on *",
    "deletePrincipal": "admin on *",
    "listGrants": "admin on *",
    "createGrant": "admin on *",
    "deleteGrant": "admin on *",
}

#: Deletes that lose no data: whoever may replace a view with anything may as well drop it.
DELETED_BY_WRITERS = {"dropView"}


def _app(tmp_path: Path, **overrides: Any) -> Flask:
    return create_app(Settings(database_url=f"sqlite:///{tmp_path}/x.db", warehouse=str(tmp_path), **overrides))


def test_every_route_declares_the_permission_it_needs(tmp_path: Path) -> None:
    app = _app(tmp_path)
    found: dict[str, str] = {}
    undeclared = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in ALWAYS_OPEN or rule.endpoint in SERVICE_ENDPOINTS:
            continue
        op = declared(app.view_functions[rule.endpoint])
        if op is None or op.permission is None:
            undeclared.append(f"{sorted(rule.methods or ())} {rule.rule}")
            continue
        found.setdefault(op.operation_id, str(op.permission))
        assert found[op.operation_id] == str(op.permission), f"{op.operation_id} declared two ways"
    assert undeclared == []
    assert found == NEEDS


def test_reads_read_writes_write_and_deletes_are_for_admins(tmp_path: Path) -> None:
    app = _app(tmp_path)
    for rule in app.url_map.iter_rules():
        op = declared(app.view_functions[rule.endpoint])
        if op is None or op.permission is None:
            continue
        methods = (rule.methods or set()) - {"HEAD", "OPTIONS"}
        level = str(op.permission.permission)
        if "DELETE" in methods and op.operation_id not in DELETED_BY_WRITERS:
            assert level == "admin", rule.rule
        if "GET" in methods:
            assert level in ("read", "admin"), rule.rule  # the admin API is read by admins only


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[tuple[str, Flask]]:
    """An app without authentication, with a route mounted without a permission, and one outside operation()."""
    app = create_app(Settings(database_url=migrated(f"sqlite:///{tmp_path}/open.db"), warehouse=str(tmp_path)))
    bp = Blueprint("careless", __name__)

    @operation(bp, "GET", "/declared-without-permission", "careless", "A route someone forgot to protect")
    def careless() -> None:
        return None

    app.register_blueprint(bp, url_prefix="/v1/careless")
    app.add_url_rule("/v1/plain-flask", "plain", lambda: {"secret": "data"})
    with serve_in_thread(app) as url:
        yield url, app


def test_a_route_without_a_permission_is_refused_to_everyone(open_server: tuple[str, Flask]) -> None:
    url, _app = open_server
    for path in ("/v1/careless/declared-without-permission", "/v1/plain-flask"):
        response = requests.get(url + path, timeout=10)
        assert response.status_code == 403, path
        assert response.json()["error"]["code"] == "Forbidden"
        assert "secret" not in response.text
    assert requests.get(url + "/v1/scopes", timeout=10).status_code == 200, "declared routes answer as before"


def test_service_endpoints_can_be_closed(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'closed.db'}")
    add_user(url, "watcher", "watcher-password")  # no role, no grant: authenticated, nothing more
    settings = Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",), public_endpoints=("health",))
    with auth_server(settings) as base:
        anonymous, watcher = Api(base), Api(base, auth=("watcher", "watcher-password"))
        for path in ("/ping", "/health/live", "/health/ready"):
            assert anonymous.call("GET", path).status_code == 200, path
        for path in ("/metrics", "/v1/openapi.json"):
            assert anonymous.call("GET", path).status_code == 401, path
            assert watcher.call("GET", path).status_code == 200, path
        assert watcher.call("GET", "/v1/scopes/any").status_code == 403


def test_the_openapi_document_describes_authentication(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'doc.db'}")
    settings = Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",))
    with auth_server(settings) as base:
        document = requests.get(base + "/v1/openapi.json", timeout=10).json()
    schemes = document["components"]["securitySchemes"]
    assert (schemes["basic"]["type"], schemes["basic"]["scheme"]) == ("http", "basic")
    assert (schemes["bearer"]["type"], schemes["bearer"]["scheme"]) == ("http", "bearer")
    delete_group = document["paths"]["/v1/groups/{groupName}"]["delete"]
    assert {"401", "403"} <= set(delete_group["responses"])
    assert "/v1/admin/grants/{grantId}" in document["paths"]
    assert "security" not in document["paths"]["/ping"]["get"] or document["paths"]["/ping"]["get"]["security"] == []


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter())
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


def test_mutations_and_refusals_are_audited(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'audit.db'}")
    add_user(url, "root", "root-password", "admin")
    add_user(url, "rita", "rita-password", "reader")
    settings = Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",))
    lines = _Lines()
    logger = logging.getLogger("streamcat.audit")
    logger.addHandler(lines)
    try:
        with auth_server(settings) as base:
            root, rita = Api(base, auth=("root", "root-password")), Api(base, auth=("rita", "rita-password"))
            created = root.call("POST", "/v1/scopes", json={"scopeName": "shop"})
            assert rita.call("GET", "/v1/scopes/shop").status_code == 200
            refused = rita.call("DELETE", "/v1/scopes/shop")
            anonymous = Api(base).call("POST", "/v1/groups?namespace=shop", json={})
            failed = root.call("POST", "/v1/scopes", json={"scopeName": "shop"})
    finally:
        logger.removeHandler(lines)
    assert [line["outcome"] for line in lines.lines] == [201, 403, 401, 409], "reads are not audited"
    first, second, third, fourth = lines.lines
    assert first["principal"] == "root"
    assert first["action"] == "createScope"
    assert first["resource"] == "*"
    assert first["request_id"] == created.headers["X-Request-Id"]
    assert first["logger"] == "streamcat.audit"
    assert first["time"]
    assert (second["principal"], second["action"], second["resource"]) == ("rita", "deleteScope", "namespace:shop")
    assert second["request_id"] == refused.headers["X-Request-Id"]
    assert (third["principal"], third["action"], third["resource"]) == ("-", "createGroup", "namespace:shop")
    assert third["request_id"] == anonymous.headers["X-Request-Id"]
    assert (fourth["principal"], fourth["outcome"]) == ("root", 409)
    assert fourth["request_id"] == failed.headers["X-Request-Id"]


def test_without_authentication_everyone_is_anonymous_and_still_audited(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'none.db'}")
    lines = _Lines()
    logger = logging.getLogger("streamcat.audit")
    logger.addHandler(lines)
    try:
        app = create_app(replace(Settings(database_url=url, warehouse=str(tmp_path))))
        with serve_in_thread(app) as base:
            assert requests.post(base + "/v1/scopes", json={"scopeName": "s"}, timeout=10).status_code == 201
            # credentials are not looked at: there is nobody to check them against
            assert requests.get(base + "/v1/scopes", auth=("x", "y"), timeout=10).status_code == 200
    finally:
        logger.removeHandler(lines)
    assert [(line["principal"], line["action"]) for line in lines.lines] == [("anonymous", "createScope")]


def test_the_confluent_api_asks_for_a_role(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'confluent.db'}")
    add_user(url, "rita", "rita-password", "reader")
    add_user(url, "gus", "gus-password")  # no role: Confluent routes are for roles only
    settings = Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",))
    with auth_server(settings) as base:
        anonymous = Api(base).call("GET", "/subjects")
        assert anonymous.status_code == 401
        assert anonymous.json()["error_code"] == 401, "in the Confluent API's own error shape"
        assert 'Basic realm="streamcat"' in anonymous.headers["WWW-Authenticate"]
        rita = Api(base, auth=("rita", "rita-password"))
        assert rita.call("GET", "/subjects").status_code == 200
        assert rita.call("DELETE", "/subjects/orders-value").status_code == 403
        assert rita.call("PUT", "/config", json={"compatibility": "NONE"}).status_code == 403
        assert Api(base, auth=("gus", "gus-password")).call("GET", "/subjects").status_code == 403
