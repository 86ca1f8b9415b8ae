"""The OpenAPI document describes exactly the routes the server has."""

from __future__ import annotations

import re

import jsonschema
import requests
from flask import Flask

from registry.app import create_app
from registry.config import Settings


def _flask_routes(app: Flask) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            routes.add((path, method.lower()))
    return routes


def _normalize(path: str) -> str:
    # Path parameter names differ in style (Flask: schema_id, OpenAPI: schemaId).
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_route_is_documented_and_every_documented_route_exists(tmp_path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path}/x.db", warehouse=str(tmp_path)))
    served = {(_normalize(p), m) for p, m in _flask_routes(app)}
    with app.test_client() as http:
        doc = http.get("/v1/openapi.json").get_json()
    documented = {(_normalize(p), m) for p, ops in doc["paths"].items() for m in ops}
    assert served == documented


def test_the_document_is_valid_openapi_3_1_shaped_json(server_url: str) -> None:
    doc = requests.get(f"{server_url}/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert name
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            assert op["responses"], f"{method} {path} documents no response"
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"\{([^}]+)\}", path)), f"{method} {path}"
