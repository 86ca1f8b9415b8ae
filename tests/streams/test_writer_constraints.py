"""StreamWriter enforces a table's CHECK constraints and the CEL rules of its subject (docs/data-contracts.md):
a refused write names the rule and shows failing rows, buffers nothing of itself, and the rows accepted
commit as before."""

from __future__ import annotations

import json
import urllib.parse
import uuid
from typing import Any

import pyarrow as pa
import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.contracts import ConstraintViolation
from catalog_api.streams.row_kinds import DELETE, UPSERT
from registry.client import RegistryClient
from registry.serde import Serializer


def _col(name: str, type_: str, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


SCHEMA = {"type": "struct", "fields": [_col("id", "long", False), _col("qty", "integer"), _col("sku", "string")]}


def _add_cel_rule(server_url: str, scope: str, table: str, name: str, expr: str) -> None:
    """A CEL condition rule on the table's subject, added as a Kafka user adds one (Confluent API)."""
    subject = urllib.parse.quote(f":.{scope}:{table}", safe="")
    latest = requests.get(f"{server_url}/subjects/{subject}/versions/latest", timeout=10).json()
    rule = {"name": name, "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": expr}
    rules = [*(latest.get("ruleSet") or {}).get("domainRules", []), rule]
    answer = requests.post(f"{server_url}/subjects/{subject}/versions", timeout=10,
                           data=json.dumps({"schema": latest["schema"], "ruleSet": {"domainRules": rules}}),
                           headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    assert answer.status_code == 200, answer.text


def _writer(catalog: CatalogClient, client: RegistryClient, scope: str, table: str) -> StreamWriter:
    serializer = Serializer(client, table, client.latest_schemas(table)[0].schema, register=False)
    return StreamWriter(catalog, client, scope, table, serializer=serializer)


def test_the_writer_refuses_rows_a_check_or_a_cel_rule_refuses(
        catalog: CatalogClient, client: RegistryClient, scope: str, server_url: str) -> None:
    table = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, table, SCHEMA, properties={"constraint.check.qty_positive": "qty > 0"})
    _add_cel_rule(server_url, scope, table, "sku_upper", "message.sku.matches('^[A-Z]+$')")
    checks = {c["name"]: c for c in catalog.get_table(scope, table)["checks"]}
    assert checks["sku_upper"]["sql"] == "COALESCE((sku RLIKE '^[A-Z]+$'), FALSE)"  # Spark enforces it too

    writer = _writer(catalog, client, scope, table)
    writer.write({"id": 1, "qty": 2, "sku": "AB"})
    writer.write({"id": 2, "qty": None, "sku": "CD"})  # a CHECK passes an unknown, as SQL says
    with pytest.raises(ConstraintViolation, match=r"CHECK constraint qty_positive \(qty > 0\) refuses 1 row"):
        writer.write({"id": 3, "qty": 0, "sku": "EF"})
    with pytest.raises(ConstraintViolation) as refused:
        writer.write_table(pa.table({"id": [4, 5, 6], "qty": [1, 1, 1], "sku": ["GH", "ij", None]}))
    assert refused.value.rule == "sku_upper"
    assert [r["id"] for r in refused.value.rows] == [5, 6]  # a CEL rule refuses a null: it fails to evaluate
    writer.flush()
    writer.close()
    reader = StreamReader(catalog, client, scope, table)
    assert sorted(r["id"] for r in reader.read()) == [1, 2]


def test_changes_are_checked_upserts_only(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, table, SCHEMA, properties={"primary-key": "id",
                                                           "constraint.check.known_sku": "sku IN ('A', 'B')"})
    writer = _writer(catalog, client, scope, table)
    writer.write_changes(pa.table({"id": [1, 2], "qty": [1, 1], "sku": ["A", "B"]}))
    with pytest.raises(ConstraintViolation, match="known_sku"):
        writer.write_changes(pa.table({"id": [3, 4], "qty": [1, 1], "sku": ["A", "Z"]}), [UPSERT, UPSERT])
    # a delete carries only the key: nothing to check
    writer.write_changes(pa.table({"id": [2], "qty": [None], "sku": ["gone"]}), [DELETE])
    writer.flush()
    writer.close()
    reader = StreamReader(catalog, client, scope, table)
    assert [(r["id"], r["sku"]) for r in reader.read()] == [(1, "A")]
