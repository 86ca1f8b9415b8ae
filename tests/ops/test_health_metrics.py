"""Health checks, Prometheus metrics and request ids."""

from __future__ import annotations

from pathlib import Path

import requests

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient
from tests.registry.helpers import avro_record, field, group
from tests.support.net import serve_in_thread


def test_ready_when_migrated(server_url: str) -> None:
    assert requests.get(f"{server_url}/health/live").json() == {"status": "ok"}
    ready = requests.get(f"{server_url}/health/ready")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ok"


def test_not_ready_on_an_unmigrated_database(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}", warehouse=str(tmp_path)))
    with serve_in_thread(app) as url:
        assert requests.get(f"{url}/health/live").status_code == 200
        ready = requests.get(f"{url}/health/ready")
        assert ready.status_code == 503
        assert "streamcat db upgrade" in ready.json()["reason"]


def test_metrics_count_requests_by_route_and_status_and_rows(client: RegistryClient, server_url: str) -> None:
    client.create_group("users", group())
    client.add_schema("users", avro_record("User", field("name", "string")))
    requests.get(f"{server_url}/v1/groups/nope", params={"namespace": client.namespace})
    text = requests.get(f"{server_url}/metrics").text
    assert 'streamcat_http_requests_total{method="POST",route="/v1/groups/<group>/schemas",status="201"}' in text
    assert 'route="/v1/groups/<group>",status="404"' in text
    assert "streamcat_http_request_duration_seconds_bucket" in text
    schemas = next(line for line in text.splitlines() if line.startswith("streamcat_schemas "))
    assert float(schemas.split()[1]) >= 1


def test_request_id_is_echoed_or_made(server_url: str) -> None:
    given = requests.get(f"{server_url}/ping", headers={"X-Request-Id": "abc-123"})
    assert given.headers["X-Request-Id"] == "abc-123"
    made = requests.get(f"{server_url}/ping")
    assert len(made.headers["X-Request-Id"]) == 32
