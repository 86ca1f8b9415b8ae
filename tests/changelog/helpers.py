"""What the changelog tests share: a primary-key table, Debezium events, and the table's batch read."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader
from registry.client import RegistryClient

#: A primary-key table of the types Debezium encodes specially (Spark StructType JSON).
COLUMNS: list[tuple[str, str]] = [
    ("id", "long"), ("name", "string"), ("qty", "integer"), ("price", "decimal(12,2)"), ("flag", "boolean"),
    ("day", "date"), ("at", "timestamp_ntz"), ("ts", "timestamp"), ("score", "double"), ("data", "binary"),
]
SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": n != "id", "metadata": {}} for n, t in COLUMNS
]}
#: The table's Arrow schema as the writer and decoder see it.
ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("qty", pa.int32()),
    pa.field("price", pa.decimal128(12, 2)), pa.field("flag", pa.bool_()), pa.field("day", pa.date32()),
    pa.field("at", pa.timestamp("us")), pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("score", pa.float64()), pa.field("data", pa.binary()),
])


def row(key: int, **values: Any) -> dict[str, Any]:
    """A Debezium row image of the table: every column, null unless given."""
    image: dict[str, Any] = dict.fromkeys(ARROW.names)
    image["id"] = key
    image.update(values)
    return image


def event(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, lsn: int,
          commit: int | None = None, snapshot: bool = False) -> dict[str, Any]:
    """An unwrapped Debezium PostgreSQL event at ``lsn`` (``commit``: the last commit LSN of its sequence)."""
    return {
        "before": before, "after": after, "op": op, "ts_ms": 1_700_000_000_000, "transaction": None,
        "source": {"version": "2.5.0.Final", "connector": "postgresql", "name": "test", "ts_ms": 1_700_000_000_000,
                   "snapshot": "true" if snapshot else "false", "db": "test", "schema": "public", "table": "t",
                   "sequence": msgspec.json.encode([str(commit if commit is not None else lsn - 1), str(lsn)]).decode(),
                   "txId": lsn // 10, "lsn": lsn, "xmin": None},
    }


def line(value: Any) -> bytes:
    """A JSON line."""
    return msgspec.json.encode(value)


def make_table(catalog: CatalogClient, scope: str, properties: dict[str, str] | None = None,
               name: str | None = None) -> str:
    """A new table of SCHEMA keyed by id (unless ``properties`` say otherwise); its name."""
    name = name or f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, name, SCHEMA, properties={"primary-key": "id", **(properties or {})})
    return name


def read_table(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str,
               cut: int | None = None) -> list[dict[str, Any]]:
    """The batch read of a table at ``cut`` (default: the latest), as records sorted by key: the Python
    StreamReader's merged read. (The Spark batch read is compared in tests/spark.)"""
    reader = StreamReader(catalog, registry, scope, table)
    records = [r for batch in reader.read_batches(cut) for r in batch.to_pylist()]
    return sorted(records, key=lambda r: r["id"])


#: How a test reads a table: (catalog, registry, scope, table, cut) -> records sorted by key.
TableRead = Callable[[CatalogClient, RegistryClient, str, str, "int | None"], list[dict[str, Any]]]


@pytest.fixture(name="registry")
def registry_fixture(server_url: str, scope: str) -> RegistryClient:
    """A registry client in the scope's namespace."""
    return RegistryClient(server_url, scope)
