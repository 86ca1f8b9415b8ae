"""Listings at 100,000 subjects: indexed queries, no per-subject round trips."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests
from sqlalchemy import insert

from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.db import make_engine
from registry.model import Compatibility
from registry.store.orm import GroupRow, SchemaRow, VersionRow
from registry.store.policies import policy_to_json
from tests.confluent.helpers import avro
from tests.conftest import BACKENDS, new_database
from tests.support.net import serve_in_thread

SUBJECTS = 100_000
#: Seconds one listing request may take (generous: CI machines are slow; typical runs are far under).
BUDGET = 3.0


def _fill(url: str) -> int:
    """SUBJECTS subjects in context ``big`` holding one shared schema, a tenth with a second version."""
    engine = make_engine(url)
    policy = policy_to_json(Compatibility.of("Backward"))
    with engine.begin() as conn:
        schema_ids = [
            conn.execute(
                insert(SchemaRow).returning(SchemaRow.id),
                {"serialization_format": "Avro", "full_type_name": "", "type_name": "acme.Big",
                 "fingerprint": str(n) * 64, "data": avro("Big", *fields).encode(), "created_at": 0},
            ).scalar_one()
            for n, fields in enumerate([[("a", "int")], [("a", "int"), ("b", ["null", "int"])]])
        ]
        groups = [
            {"id": i + 1, "namespace": "big", "name": f"s{i:06d}", "serialization_format": "Avro",
             "full_type_name": "", "allow_multiple_types": True, "compatibility": policy, "properties": {},
             "created_at": 0}
            for i in range(SUBJECTS)
        ]
        conn.execute(insert(GroupRow), groups)
        versions = [
            {"group_id": g + 1, "schema_id": schema_ids[v], "type_name": "acme.Big", "version": v, "properties": {},
             "compatibility": policy, "created_at": 0, "deleted": False}
            for g in range(SUBJECTS) for v in range(2 if g % 10 == 0 else 1)
        ]
        conn.execute(insert(VersionRow), versions)
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT setval(pg_get_serial_sequence('groups', 'id'), {SUBJECTS})")
    engine.dispose()
    return int(schema_ids[0])


def _timed(url: str, path: str, **params: object) -> tuple[float, object]:
    start = time.perf_counter()
    response = requests.get(url + path, params=params, timeout=120)
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.text
    return elapsed, response.json()


@pytest.mark.parametrize("kind", BACKENDS)
def test_listings_stay_fast_at_100000_subjects(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = new_database(kind, tmp_path, request)
    migrate.upgrade(url)
    schema_id = _fill(url)
    with serve_in_thread(create_app(Settings(database_url=url, warehouse=str(tmp_path)))) as base:
        timings = {}
        timings["first page"], first = _timed(base, "/subjects", subjectPrefix=":.big:", limit=1000)
        assert first == [f":.big:s{i:06d}" for i in range(1000)]
        timings["last page"], last = _timed(base, "/subjects", subjectPrefix=":.big:", offset=99_000, limit=1000)
        assert last[-1] == ":.big:s099999"
        assert len(last) == 1000
        timings["default page"], default = _timed(base, "/subjects")
        assert len(default) == 10_000  # the documented maximum page
        timings["schemas"], schemas = _timed(base, "/schemas", subjectPrefix=":.big:", offset=98_000, limit=1000)
        assert len(schemas) == 1000
        assert {s["version"] for s in schemas} == {1, 2}
        timings["latest only"], latest = _timed(base, "/schemas", subjectPrefix=":.big:s09", latestOnly="true",
                                                limit=500)
        assert all(s["version"] == (2 if int(s["subject"][-6:]) % 10 == 0 else 1) for s in latest)
        timings["prefix"], prefixed = _timed(base, "/subjects", subjectPrefix=":.big:s0999")
        assert len(prefixed) == 100
        timings["one version"], one = _timed(base, "/subjects/:.big:s050000/versions/latest")
        assert one["id"] == schema_id + 1
        timings["versions of an id"], uses = _timed(base, f"/schemas/ids/{schema_id}/versions", limit=10)
        assert len(uses) == 10
        slow = {name: t for name, t in timings.items() if t > BUDGET}
        assert not slow, timings
