"""Events Python producers write, in each table format, read by Spark under the table's schema."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from registry.serde import Serializer
from tests.spark.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

WHEN = dt.datetime(2024, 5, 1, 10, 0, 0, 123456)
DAY = dt.date(2024, 5, 1)
RAW = b"\x00\x01\xff"

#: One full and one sparse record, as each format's serializer takes them.
RECORDS: dict[str, list[dict[str, Any]]] = {
    "avro": [
        {"id": 1, "ts": WHEN.replace(tzinfo=dt.UTC), "day": DAY, "amount": Decimal("12.50"), "tags": ["a", None],
         "raw": RAW},
        {"id": 2, "ts": None, "day": None, "amount": None, "tags": None, "raw": None},
    ],
    "json": [
        {"id": 1, "ts": "2024-05-01T10:00:00.123456Z", "day": "2024-05-01", "amount": "12.50", "tags": ["a", None],
         "raw": base64.b64encode(RAW).decode()},
        {"id": 2},
    ],
    "protobuf": [
        {"id": 1, "ts": (WHEN - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1),
         "day": (DAY - dt.date(1970, 1, 1)).days, "amount": "12.50", "tags": [{"value": "a"}, {}],
         "raw": base64.b64encode(RAW).decode()},
        {"id": 2},
    ],
}


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_producer_events_read_in_spark(spark: Any, spark_server: str, scope: str, fmt: str) -> None:
    spark.sql(f"""CREATE TABLE streamcat.{scope}.e (id BIGINT NOT NULL, ts TIMESTAMP, day DATE,
                  amount DECIMAL(10, 2), tags ARRAY<STRING>, raw BINARY) USING {fmt}""")
    registry = RegistryClient(spark_server, scope)
    [latest] = registry.latest_schemas("e")
    serializer = Serializer(registry, "e", latest.schema, register=False)
    with StreamWriter(CatalogClient(spark_server), registry, scope, "e", serializer=serializer) as writer:
        for record in RECORDS[fmt]:
            writer.write(record)
        writer.flush()

    got = rows(spark, f"SELECT id, ts, day, amount, tags, raw FROM streamcat.{scope}.e ORDER BY id")
    empty_tags: list[str] | None = [] if fmt == "protobuf" else None  # a repeated field has no null, only empty
    assert [tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r) for r in got] == [
        (1, WHEN, DAY, Decimal("12.50"), ["a", None], RAW),
        (2, None, None, None, empty_tags, None),
    ]
    assert rows(spark, f"SELECT count(*) FROM streamcat.{scope}.e WHERE get(tags, 0) = 'a'") == [(1,)]
