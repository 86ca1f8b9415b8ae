"""Every Spark SQL type an avro table carries survives INSERT and SELECT unchanged."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from tests.spark.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

COLUMNS = """
    k INT, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i64 BIGINT, f32 FLOAT, f64 DOUBLE,
    dec DECIMAL(20, 4), small_dec DECIMAL(5, 2), s STRING, c CHAR(4), v VARCHAR(10), bin BINARY,
    d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ,
    arr ARRAY<INT>, structs ARRAY<STRUCT<x: INT, y: STRING>>, m MAP<STRING, DOUBLE>,
    nested_map MAP<STRING, ARRAY<BIGINT>>, st STRUCT<a: INT, b: STRUCT<c: STRING, d: DATE>>
"""
#: The same columns as a source DataFrame can hold them (no CHAR / VARCHAR there).
SOURCE = COLUMNS.replace("CHAR(4)", "STRING").replace("VARCHAR(10)", "STRING")

LOW: tuple[Any, ...] = (
    1, False, -128, -32768, -(2**63), -1.5, -1e300,
    Decimal("-1234567890123456.1234"), Decimal("-999.99"), "", "ab", "", b"",
    dt.date(1900, 1, 1), dt.datetime(1900, 1, 1, 0, 0, 0, 1), dt.datetime(1901, 2, 3, 4, 5, 6, 7),
    [], [], {}, {}, {"a": 0, "b": {"c": "", "d": dt.date(1970, 1, 1)}},
)
HIGH: tuple[Any, ...] = (
    2, True, 127, 32767, 2**63 - 1, 3.25, 1.7976931348623157e308,
    Decimal("9999999999999999.9999"), Decimal("999.99"), "héllo ✓ 𝄞", "abcd", "0123456789", b"\x00\xff\x10",
    dt.date(2099, 12, 31), dt.datetime(2099, 12, 31, 23, 59, 59, 999999), dt.datetime(2262, 4, 11, 0, 0, 0, 1),
    [1, None, 3], [{"x": 1, "y": "a"}, None, {"x": None, "y": None}], {"k": 1.0, "n": None},
    {"a": [1, 2, None], "b": None, "c": []}, {"a": None, "b": None},
)
NULLS = (3, *([None] * (len(LOW) - 1)))


def plain(value: Any) -> Any:
    """Rows and maps as plain Python values, comparable with the inputs."""
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return value


def test_every_avro_type_round_trips_through_insert_and_select(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.all_types"
    spark.sql(f"CREATE TABLE {table} ({COLUMNS}) USING avro")
    spark.createDataFrame([LOW, HIGH, NULLS], SOURCE).createOrReplaceTempView(f"{scope}_source")
    spark.sql(f"INSERT INTO {table} SELECT * FROM {scope}_source")

    got = [tuple(plain(v) for v in r) for r in spark.sql(f"SELECT * FROM {table} ORDER BY k").collect()]
    expected_low = list(LOW)
    expected_low[10] = "ab  "  # CHAR(4) pads
    assert got == [tuple(expected_low), HIGH, NULLS]

    # Single columns and nested fields read on their own come back the same.
    assert rows(spark, f"SELECT st.b.d, try_element_at(m, 'k'), get(structs, 0).y FROM {table} ORDER BY k") == [
        (dt.date(1970, 1, 1), None, None), (None, 1.0, "a"), (None, None, None)]
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE ts > TIMESTAMP'2000-01-01 00:00:00'") == [(1,)]
