"""Immutable answers (schema by id, encoding info) answered again from memory: alike, counted,
forgotten when their group or version is deleted for good, and never to a caller who may not read.

catalog_api.server.answers answers a GET it saw the application answer with an immutable answer;
these tests call the application in process, so that they can tell which requests it answered.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from pydantic import BaseModel
from werkzeug.test import TestResponse

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.api import context, groups
from registry.api.operations import Serialized
from tests.support.auth import add_user, migrated
from tests.support.bodies import avro_group, avro_schema_info

SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
OTHER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}, {"name": "n", "type": "int"}]}
ROUTE = "/v1/groups/<group>/schemas/schema/<int:schema_id>"


def basic(name: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


class _Views:
    """Counts the calls of the registry's views that give immutable answers."""

    def __init__(self) -> None:
        self.calls = 0

    def wrap(self, key: tuple[object, ...], build: Callable[[], BaseModel]) -> Serialized:
        self.calls += 1
        return context.immutable_answer(key, build)


@pytest.fixture(autouse=True)
def views(monkeypatch: pytest.MonkeyPatch) -> _Views:
    counted = _Views()
    monkeypatch.setattr(groups, "immutable_answer", counted.wrap)
    return counted


def answered_here(views: _Views, call: Callable[[], TestResponse]) -> TestResponse | None:
    """The response of ``call`` if the immutable-answers layer gave it (the view did not run), else None."""
    before = views.calls
    response = call()
    return response if views.calls == before else None


def _app(tmp_path: Path, **settings: Any) -> Flask:
    url = migrated(f"sqlite:///{tmp_path / 'answers.db'}")
    for name, role in settings.pop("users", {}).items():
        add_user(url, name, f"{name}-password", role)
    return create_app(Settings(database_url=url, warehouse=str(tmp_path / "warehouse"), **settings))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    application = _app(tmp_path)
    yield application
    application.extensions["streamcat"].close()


def _setup(
    client: FlaskClient, group: str, namespace: str = "", headers: dict[str, str] | None = None
) -> tuple[int, int]:
    """A group holding SCHEMA, and an encoding id of it: (schema id, encoding id)."""
    query = f"?namespace={namespace}" if namespace else ""
    assert client.post(f"/v1/groups{query}", json=avro_group(group), headers=headers).status_code == 201
    version = client.post(f"/v1/groups/{group}/schemas{query}", json=avro_schema_info(SCHEMA), headers=headers).json
    assert version is not None
    encoding = client.put(
        f"/v1/groups/{group}/encodings{query}", json={"versionInfo": version, "codecType": ""}, headers=headers
    ).json
    assert encoding is not None
    return int(version["id"]), int(encoding["encodingId"])


def _requests(route: str, status: str) -> float:
    return REGISTRY.get_sample_value(
        "streamcat_http_requests_total", {"route": route, "method": "GET", "status": status}
    ) or 0.0


def test_a_repeated_get_gets_the_same_answer_from_memory_and_is_counted(app: Flask, views: _Views) -> None:
    client = app.test_client()
    schema_id, encoding = _setup(client, "orders")
    for path, route in (
        (f"/v1/groups/orders/schemas/schema/{schema_id}", ROUTE),
        (f"/v1/groups/orders/encodings/{encoding}", "/v1/groups/<group>/encodings/<int:encoding_id>"),
    ):
        first = client.get(path)
        assert first.status_code == 200
        before = _requests(route, "200")
        again = answered_here(views, lambda: client.get(path, headers={"X-Request-Id": "again-1"}))  # noqa: B023
        assert again is not None, "answered from memory"
        assert again.status_code == first.status_code
        assert again.data == first.data
        assert [h for h in again.headers if h[0] != "X-Request-Id"] == [
            h for h in first.headers if h[0] != "X-Request-Id"
        ]
        assert again.headers["X-Request-Id"] == "again-1"
        assert _requests(route, "200") == before + 1, "and counted under its route"
    path = f"/v1/groups/orders/schemas/schema/{schema_id}"
    # Another query string is another request: the application answers it first.
    assert not answered_here(views, lambda: client.get(path + "?namespace="))
    assert answered_here(views, lambda: client.get(path + "?namespace="))
    # HEAD and other methods always go to the application.
    assert not answered_here(views, lambda: client.head(path))
    # Only answers are remembered: a 404 is asked again.
    missing = "/v1/namespace/shop/groups/orders/schemas/schema/1"
    for _ in range(2):
        assert client.get(missing).status_code == 404
        assert not answered_here(views, lambda: client.get(missing))


def test_deleting_the_group_forgets_its_answers(app: Flask, views: _Views) -> None:
    client = app.test_client()
    schema_id, encoding = _setup(client, "orders")
    paths = [f"/v1/groups/orders/schemas/schema/{schema_id}", f"/v1/groups/orders/encodings/{encoding}"]
    for path in paths:
        client.get(path)
        assert answered_here(views, lambda: client.get(path))  # noqa: B023
    assert client.delete("/v1/groups/orders").status_code == 204
    for path in paths:
        assert client.get(path).status_code == 404, path
    # A group of the same name again, holding another schema: the old ids are not its.
    assert client.post("/v1/groups", json=avro_group("orders")).status_code == 201
    added = client.post("/v1/groups/orders/schemas", json=avro_schema_info(OTHER)).json
    assert added is not None
    assert added["id"] != schema_id
    for path in paths:
        assert client.get(path).status_code == 404
        assert client.get(path).status_code == 404


def test_a_soft_deleted_version_stays_readable_by_id(app: Flask) -> None:
    client = app.test_client()
    schema_id, _ = _setup(client, "orders")
    path = f"/v1/groups/orders/schemas/schema/{schema_id}"
    first = client.get(path)
    assert client.delete(path).status_code == 204
    again = client.get(path)
    assert (again.status_code, again.data) == (200, first.data), "data written with it must stay readable"


def test_a_version_deleted_for_good_is_forgotten(app: Flask, views: _Views) -> None:
    client = app.test_client()
    registered = client.post("/subjects/orders/versions", json={"schema": json.dumps(SCHEMA)})
    assert registered.status_code == 200, registered.data
    schema_id = registered.json["id"] if registered.json else 0
    path = f"/v1/groups/orders/schemas/schema/{schema_id}"
    assert client.get(path).status_code == 200
    assert answered_here(views, lambda: client.get(path))
    assert client.delete("/subjects/orders/versions/1").status_code == 200
    assert client.delete("/subjects/orders/versions/1?permanent=true").status_code == 200
    assert client.get(path).status_code == 404


def test_a_namespace_deleted_forgets_its_answers(app: Flask, views: _Views) -> None:
    client = app.test_client()
    assert client.post("/v1/scopes", json={"scopeName": "shop"}).status_code == 201
    schema_id, _ = _setup(client, "orders", namespace="shop")
    path = f"/v1/namespace/shop/groups/orders/schemas/schema/{schema_id}"
    assert client.get(path).status_code == 200
    assert answered_here(views, lambda: client.get(path))
    assert client.delete("/v1/groups/orders?namespace=shop").status_code == 204
    assert client.delete("/v1/scopes/shop").status_code == 204
    assert client.get(path).status_code == 404


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = record.__dict__["fields"]
        self.lines.append((fields["principal"], fields["outcome"]))


def test_every_caller_is_checked_even_when_the_answer_is_remembered(tmp_path: Path, views: _Views) -> None:
    app = _app(tmp_path, auth=("basic",), users={"root": "admin", "rita": "reader", "gus": None})
    client = app.test_client()
    root, rita, gus = basic("root", "root-password"), basic("rita", "rita-password"), basic("gus", "gus-password")
    schema_id, encoding = _setup(client, "orders", headers=root)
    paths = [f"/v1/groups/orders/schemas/schema/{schema_id}", f"/v1/groups/orders/encodings/{encoding}"]
    audit = _Lines()
    logger = logging.getLogger("streamcat.audit")
    logger.addHandler(audit)
    try:
        for path in paths:
            assert client.get(path, headers=rita).status_code == 200
            assert answered_here(views, lambda: client.get(path, headers=rita))  # noqa: B023
            assert answered_here(views, lambda: client.get(path, headers=root))  # noqa: B023
            # No grant on the group: refused, with its audit line, though the answer is remembered.
            assert client.get(path, headers=gus).status_code == 403
            # No credentials, or wrong ones: 401 with the challenge, as always.
            for headers in ({}, basic("rita", "wrong")):
                unknown = client.get(path, headers=headers)
                assert unknown.status_code == 401
                assert "WWW-Authenticate" in unknown.headers
        # A grant on the group lets gus read, from memory; revoking it refuses him again.
        read_orders = {"principal": "gus", "permission": "read", "resource": "group:/orders"}
        grant = client.post("/v1/admin/grants", json=read_orders, headers=root).json
        assert grant is not None
        for path in paths:
            assert answered_here(views, lambda: client.get(path, headers=gus))  # noqa: B023
        assert client.delete(f"/v1/admin/grants/{grant['id']}", headers=root).status_code == 204
        for path in paths:
            assert client.get(path, headers=gus).status_code == 403
    finally:
        logger.removeHandler(audit)
        app.extensions["streamcat"].close()
    assert audit.lines.count(("gus", 403)) == 4
    assert audit.lines.count(("-", 401)) == 4
    assert ("rita", 200) not in audit.lines, "reads are not audited"
