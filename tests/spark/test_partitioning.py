"""Partitioned tables through Spark (docs/partitioning.md): CREATE TABLE ... PARTITIONED BY sends the
transforms to the catalog, DESCRIBE and SHOW CREATE TABLE show the current spec, SHOW PARTITIONS lists
the partitions the table's chunks are in, DROP PARTITION removes a partition's chunks, the procedure
``set_partitioning`` changes the spec (older chunks keep theirs and stay readable), and scans, native
(Spark's Parquet scan over the chunks the catalog plans) or Python, give the same rows under filters."""

from __future__ import annotations

import datetime as dt
import re
import struct
from typing import Any

import mmh3
import pyarrow.parquet as pq
import pytest

from catalog_api.client import CatalogClient
from tests.spark.helpers import catalog_beside, executed_plan, rows, scans_natively

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: A second catalog on the same server with the native scan turned off (the Python source always).
PYTHON = "streamcat_partpy"
EPOCH = dt.date(1970, 1, 1)


@pytest.fixture
def python_catalog(spark: Any) -> str:
    """The catalog ``streamcat_partpy``: the same server, ``native-scan=false``."""
    return catalog_beside(spark, PYTHON, **{"native-scan": "false"})


def _bucket(value: int, n: int) -> int:
    """Iceberg's bucket of an integer (its 8-byte little-endian form through murmur3_x86_32, seed 0)."""
    return (mmh3.hash(struct.pack("<q", value), 0) & 0x7FFFFFFF) % n


def _partitioning(spark: Any, table: str) -> list[str]:
    """The transforms DESCRIBE TABLE lists under "# Partitioning" (none: an empty list)."""
    described = [(str(r[0]), str(r[1])) for r in spark.sql(f"DESCRIBE TABLE {table}").collect()]
    names = [name for name, _ in described]
    if "# Partitioning" not in names:
        return []
    return [text for name, text in described[names.index("# Partitioning") + 1 :] if name.startswith("Part ")]


def _partitions(spark: Any, query: str) -> list[str]:
    return [str(r[0]) for r in spark.sql(query).collect()]


def _chunks(server: str, scope: str, table: str) -> list[Any]:
    return CatalogClient(server).snapshot(scope, table)[1]


def _spark_wrote(server: str, scope: str, table: str, path: str) -> bool:
    """Whether Spark's own Parquet writer (the native write) wrote a chunk, rather than the Python writer."""
    location = CatalogClient(server).get_stream(scope, table)["location"]
    return b"org.apache.spark.version" in (pq.ParquetFile(f"{location}/{path}").metadata.metadata or {})


def _files_scanned(spark: Any, query: str) -> int:
    """How many chunk files Spark's Parquet scan of ``query`` reads (the native path's file index)."""
    plan = executed_plan(spark, query)
    found = re.search(r"InMemoryFileIndex\((\d+) paths?\)", plan)
    assert found, plan
    return int(found.group(1))


def test_create_with_each_transform_shows_the_partitioning(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.events"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING, ts TIMESTAMP, region STRING, d DATE) "
        "USING avro PARTITIONED BY (days(ts), bucket(8, id), truncate(4, name), region)"
    )
    assert _partitioning(spark, table) == ["days(ts)", "bucket(8, id)", "truncate(4, name)", "region"]
    created = str(spark.sql(f"SHOW CREATE TABLE {table}").collect()[0][0])
    assert "PARTITIONED BY (days(ts), bucket(8, id), truncate(4, name), region)" in created, created
    spec = CatalogClient(spark_server).get_table(scope, "events")["partitionSpec"]
    assert [(f["source"], f["transform"], f["name"]) for f in spec["fields"]] == [
        ("ts", "day", "ts_day"), ("id", "bucket[8]", "id_bucket"), ("name", "truncate[4]", "name_trunc"),
        ("region", "identity", "region"),
    ]

    # (JSON Schema tables allow column names that Avro does not: Spark back-quotes them.)
    other = f"streamcat.{scope}.times"
    spark.sql(
        f"CREATE TABLE {other} (d DATE, ts TIMESTAMP, `odd col` TIMESTAMP_NTZ, n INT) USING json "
        "PARTITIONED BY (years(d), months(ts), hours(`odd col`), truncate(10, n))"
    )
    assert _partitioning(spark, other) == ["years(d)", "months(ts)", "hours(`odd col`)", "truncate(10, n)"]
    assert spark.table(other).schema.simpleString() == "struct<d:date,ts:timestamp,odd col:timestamp_ntz,n:int>"
    spark.sql(f"INSERT INTO {other} VALUES (DATE '2024-05-01', TIMESTAMP '2024-05-01 10:00:00', "
              "TIMESTAMP_NTZ '1970-01-01 05:30:00', 17)")
    assert _partitions(spark, f"SHOW PARTITIONS {other}") == [
        "d_year=2024/ts_month=2024-05/odd col_hour=1970-01-01-05/n_trunc=10"
    ]
    assert rows(spark, f"SELECT n FROM {other} WHERE `odd col` < TIMESTAMP_NTZ '1970-01-01 06:00:00'") == [(17,)]

    # Only columns: Spark's own form of DESCRIBE ("# Partition Information", the columns and their types).
    spark.sql(f"CREATE TABLE streamcat.{scope}.by_region (id BIGINT, region STRING) PARTITIONED BY (region)")
    described = rows(spark, f"DESCRIBE TABLE streamcat.{scope}.by_region")
    at = [r[0] for r in described].index("# Partition Information")
    assert ("region", "string", None) in described[at:]

    # Iceberg's order of truncate's arguments is taken too.
    spark.sql(f"CREATE TABLE streamcat.{scope}.t2 (name STRING) PARTITIONED BY (truncate(name, 3))")
    assert _partitioning(spark, f"streamcat.{scope}.t2") == ["truncate(3, name)"]

    spark.sql(f"CREATE TABLE streamcat.{scope}.plain (id BIGINT)")
    assert _partitioning(spark, f"streamcat.{scope}.plain") == []
    with pytest.raises(Exception, match=r"not partitioned|INVALID_PARTITION_OPERATION|PARTITION"):
        spark.sql(f"SHOW PARTITIONS streamcat.{scope}.plain")


def test_show_partitions_lists_what_was_written(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.events"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING, ts TIMESTAMP, region STRING) "
        "PARTITIONED BY (days(ts), bucket(8, id), truncate(4, name), region)"
    )
    spark.sql(
        f"INSERT INTO {table} VALUES (34, 'abcdef', TIMESTAMP '2023-11-14 10:00:00', 'eu'), "
        "(34, 'abcdxx', TIMESTAMP '2023-11-14 23:00:00', 'eu'), (35, 'zz', TIMESTAMP '1969-12-31 23:00:00', NULL)"
    )
    day = (dt.date(2023, 11, 14) - EPOCH).days
    assert (_bucket(34, 8), _bucket(35, 8)) == (3, 5)  # Iceberg's murmur3 of 34 is 2017239379
    expected = sorted([
        "ts_day=2023-11-14/id_bucket=3/name_trunc=abcd/region=eu",
        "ts_day=1969-12-31/id_bucket=5/name_trunc=zz/region=null",
    ])
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == expected
    assert _partitions(spark, f"SHOW PARTITIONS {table} PARTITION (region = 'eu')") == expected[1:]
    assert _partitions(spark, f"SHOW PARTITIONS {table} PARTITION (id_bucket = 5)") == expected[:1]
    assert _partitions(spark, f"SHOW PARTITIONS {table} PARTITION (id_bucket = 6)") == []

    # The partitioned table's rows went through the Python writer, one chunk per partition, each recording it.
    chunks = _chunks(spark_server, scope, "events")
    counts: dict[str, int] = {}
    for chunk in chunks:
        key = repr(chunk.partition["values"])
        counts[key] = counts.get(key, 0) + chunk.event_count
    assert counts == {repr([day, 3, "abcd", "eu"]): 2, repr([-1, 5, "zz", None]): 1}
    spec_id = CatalogClient(spark_server).get_table(scope, "events")["partitionSpec"]["specId"]
    assert {c.partition["specId"] for c in chunks} == {spec_id}
    assert not any(_spark_wrote(spark_server, scope, "events", c.path) for c in chunks), "the Python writer splits"
    eu = "ts_day = '2023-11-14', id_bucket = 3, name_trunc = 'abcd', region = 'eu'"
    before_epoch = "ts_day = '1969-12-31', id_bucket = 5, name_trunc = 'zz', region = NULL"
    extended = str(spark.sql(f"SHOW TABLE EXTENDED IN streamcat.{scope} LIKE 'events' PARTITION ({eu})")
                   .collect()[0][-1])
    assert "eventCount: 2" in extended, extended

    # A partition exists while chunks hold its rows: there is nothing to ADD; DROP removes its chunks.
    with pytest.raises(Exception, match="no empty partitions"):
        spark.sql(f"ALTER TABLE {table} ADD PARTITION (ts_day = '1970-01-02', id_bucket = 1, name_trunc = 'a', "
                  "region = 'x')")
    spark.sql(f"ALTER TABLE {table} DROP PARTITION ({before_epoch})")
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == expected[1:]
    assert rows(spark, f"SELECT id, name FROM {table} ORDER BY name") == [(34, "abcdef"), (34, "abcdxx")]
    with pytest.raises(Exception, match="PARTITIONS_NOT_FOUND"):
        spark.sql(f"ALTER TABLE {table} DROP PARTITION ({before_epoch})")
    spark.sql(f"TRUNCATE TABLE {table} PARTITION ({eu})")
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == []
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(0,)]

    # INSERT with a static partition value (an identity field), and INSERT OVERWRITE, through the Python writer.
    spark.sql(f"INSERT INTO {table} PARTITION (region = 'ap') VALUES (34, 'abcdef', TIMESTAMP '2023-11-14 10:00:00')")
    spark.sql(f"INSERT OVERWRITE {table} VALUES (35, 'zz', TIMESTAMP '1969-12-31 23:00:00', 'us')")
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == ["ts_day=1969-12-31/id_bucket=5/name_trunc=zz/region=us"]
    assert rows(spark, f"SELECT * FROM {table}") == [(35, "zz", dt.datetime(1969, 12, 31, 23), "us")]


def test_partition_values_of_every_result_type(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.kinds"
    spark.sql(
        f"CREATE TABLE {table} (flag BOOLEAN, small SMALLINT, d DATE, ts TIMESTAMP, n INT, s STRING) "
        "PARTITIONED BY (flag, small, d, ts, truncate(10, n), years(d), hours(ts))"
    )
    spark.sql(
        f"INSERT INTO {table} VALUES (true, 7, DATE '2024-02-29', TIMESTAMP '2024-02-29 13:45:00', -15, 'a'), "
        "(NULL, NULL, NULL, NULL, NULL, 'b')"
    )
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == sorted([
        "flag=true/small=7/d=2024-02-29/ts=2024-02-29 13%3A45%3A00/n_trunc=-20/d_year=2024/ts_hour=2024-02-29-13",
        "flag=null/small=null/d=null/ts=null/n_trunc=null/d_year=null/ts_hour=null",
    ])
    assert _partitions(spark, f"SHOW PARTITIONS {table} PARTITION (d = DATE '2024-02-29')") == _partitions(
        spark, f"SHOW PARTITIONS {table} PARTITION (ts_hour = '2024-02-29-13')"
    )
    for query in ("SELECT s FROM {t} WHERE d = DATE '2024-02-29'", "SELECT s FROM {t} WHERE flag IS NULL",
                  "SELECT s FROM {t} WHERE n < -10", "SELECT s FROM {t} WHERE ts > TIMESTAMP '2024-02-29 13:50:00'"):
        native = rows(spark, query.format(t=table))
        assert native == rows(spark, query.format(t=f"{python_catalog}.{scope}.kinds")), query
    assert rows(spark, f"SELECT s FROM {table} WHERE n < -10") == [("a",)]


def test_native_and_python_scans_agree_under_filters(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.facts"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING, ts TIMESTAMP, region STRING) "
        "PARTITIONED BY (days(ts), bucket(4, id), region)"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('n', id % 13), "
        "TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id % 72 AS INT), 0, 0), "
        "CASE WHEN id % 5 = 0 THEN NULL WHEN id % 2 = 0 THEN 'eu' ELSE 'us' END FROM range(600)"
    )
    queries = [
        "SELECT * FROM {t}",
        "SELECT * FROM {t} WHERE ts >= TIMESTAMP '2024-01-03 00:00:00'",
        "SELECT * FROM {t} WHERE ts < TIMESTAMP '2024-01-02 00:00:00' AND id > 300",
        "SELECT * FROM {t} WHERE id = 42",
        "SELECT * FROM {t} WHERE id IN (3, 7, 11, 500)",
        "SELECT * FROM {t} WHERE region = 'eu' OR region IS NULL",
        "SELECT * FROM {t} WHERE region IS NULL",
        "SELECT * FROM {t} WHERE name LIKE 'n1%' AND region = 'us'",
        "SELECT * FROM {t} WHERE CAST(ts AS DATE) = DATE '2024-01-02'",
        "SELECT id, region FROM {t} WHERE ts > TIMESTAMP '2030-01-01 00:00:00'",
        "SELECT count(*), sum(id) FROM {t} WHERE region = 'us'",
    ]
    for query in queries:
        native = sorted(rows(spark, query.format(t=table)), key=repr)
        python = sorted(rows(spark, query.format(t=f"{python_catalog}.{scope}.facts")), key=repr)
        assert native == python, query
        assert scans_natively(spark, query.format(t=table)), query
    assert len(rows(spark, f"SELECT * FROM {table}")) == 600
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE id = 42") == [(1,)]

    # The catalog plans the scan: only the chunks whose partition may hold a passing row are read.
    everything = _files_scanned(spark, f"SELECT * FROM {table}")
    one_day = _files_scanned(spark, f"SELECT * FROM {table} WHERE ts >= TIMESTAMP '2024-01-03 00:00:00'")
    one_key = _files_scanned(spark, f"SELECT * FROM {table} WHERE id = 42")
    assert everything > one_day > 0, (everything, one_day)
    assert everything > one_key > 0, (everything, one_key)
    assert one_key <= everything // 4 + 1  # one bucket of four, every day and region
    # No chunk may hold a row: a native scan of no file, no row.
    nothing = f"SELECT * FROM {table} WHERE ts > TIMESTAMP '2030-01-01 00:00:00'"
    assert _files_scanned(spark, nothing) == 0
    assert rows(spark, nothing) == []
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE region = 'mars'") == [(0,)]
    # Time travel plans at its cut.
    spark.sql(f"INSERT INTO {table} VALUES (1000, 'late', TIMESTAMP '2024-01-01 00:00:00', 'eu')")
    assert rows(spark, f"SELECT count(*) FROM {table} VERSION AS OF 1 WHERE region = 'eu'") == rows(
        spark, f"SELECT count(*) FROM {python_catalog}.{scope}.facts VERSION AS OF 1 WHERE region = 'eu'"
    )
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE id = 1000") == [(1,)]


def test_set_partitioning_changes_the_spec_and_old_data_still_reads(
    spark: Any, spark_server: str, scope: str, python_catalog: str
) -> None:
    table = f"streamcat.{scope}.log"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, ts TIMESTAMP, v STRING) PARTITIONED BY (days(ts))")
    spark.sql(f"INSERT INTO {table} SELECT id, TIMESTAMP '2024-01-30 12:00:00' + make_interval(0, 0, 0, "
              "CAST(id % 4 AS INT), 0, 0, 0), CAST(id AS STRING) FROM range(40)")
    before = rows(spark, f"SELECT * FROM {table} ORDER BY id")
    assert len(_partitions(spark, f"SHOW PARTITIONS {table}")) == 4

    answer = rows(
        spark, f"CALL streamcat.system.set_partitioning(table => '{scope}.log', partitioning => 'months(ts)')"
    )
    assert [(r[0], r[2]) for r in answer] == [(f"{scope}.log", "months(ts)")]
    assert _partitioning(spark, table) == ["months(ts)"]
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == [], "the chunks written before keep their spec"
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == before
    spark.sql(f"INSERT INTO {table} VALUES (100, TIMESTAMP '2024-03-05 00:00:00', 'march'), "
              "(101, TIMESTAMP '2024-01-02 00:00:00', 'january')")
    assert _partitions(spark, f"SHOW PARTITIONS {table}") == ["ts_month=2024-01", "ts_month=2024-03"]
    specs = {c.partition["specId"] for c in _chunks(spark_server, scope, "log")}
    assert len(specs) == 2, "chunks of both specs are live"
    for query in (
        "SELECT * FROM {t}",
        "SELECT * FROM {t} WHERE ts >= TIMESTAMP '2024-02-01 00:00:00'",
        "SELECT * FROM {t} WHERE ts < TIMESTAMP '2024-01-31 00:00:00'",
        "SELECT id FROM {t} WHERE v = 'march'",
    ):
        native = sorted(rows(spark, query.format(t=table)))
        assert native == sorted(rows(spark, query.format(t=f"{python_catalog}.{scope}.log"))), query
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(42,)]
    assert rows(spark, f"SELECT id FROM {table} WHERE ts >= TIMESTAMP '2024-02-01 00:00:00' ORDER BY id") == [
        (i,) for i in range(40) if i % 4 >= 2
    ] + [(100,)]
    # Rows of the old spec may lie in any partition of the new one: DROP PARTITION will not leave them behind.
    with pytest.raises(Exception, match="earlier partitioning"):
        spark.sql(f"ALTER TABLE {table} DROP PARTITION (ts_month = '2024-01')")

    # Back to unpartitioned: Spark's own Parquet writer writes again, and everything still reads.
    spark.sql(f"CALL streamcat.system.set_partitioning(table => 'streamcat.{scope}.log', partitioning => '')")
    assert _partitioning(spark, table) == []
    spark.sql(f"INSERT INTO {table} VALUES (200, TIMESTAMP '2025-01-01 00:00:00', 'later')")
    latest = [c for c in _chunks(spark_server, scope, "log") if c.partition is None]
    assert [c.event_count for c in latest] == [1]
    assert _spark_wrote(spark_server, scope, "log", latest[0].path), "unpartitioned again: the native write"
    assert rows(spark, f"SELECT count(*), max(id) FROM {table}") == [(43, 200)]


def test_primary_key_tables_partition_by_key_columns(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.stock"
    spark.sql(
        f"CREATE TABLE {table} (sku BIGINT NOT NULL, qty INT, CONSTRAINT stock_pk PRIMARY KEY (sku)) "
        "PARTITIONED BY (bucket(4, sku))"
    )
    spark.sql(f"INSERT INTO {table} SELECT id, 1 FROM range(20)")
    spark.sql(f"INSERT INTO {table} SELECT id, 2 FROM range(10, 30)")
    query = "SELECT * FROM {t} WHERE sku IN (1, 15, 25) ORDER BY sku"
    expected = [(1, 1), (15, 2), (25, 2)]
    assert rows(spark, query.format(t=table)) == expected
    assert rows(spark, query.format(t=f"{python_catalog}.{scope}.stock")) == expected
    with pytest.raises(Exception, match="qty"):
        spark.sql(f"CALL streamcat.system.set_partitioning(table => '{scope}.stock', partitioning => 'qty')")


def test_bad_partitioning_is_a_clear_error(spark: Any, scope: str) -> None:
    columns = "(id BIGINT, name STRING, ts TIMESTAMP, price DOUBLE)"
    bad = {
        "days(id)": r"(?s)(?=.*\bid\b)(?=.*(long|bigint))(?=.*day)",
        "bucket(0, id)": r"(?s)(?=.*bucket)(?=.*\b0\b)",
        "truncate(4, price)": r"(?s)(?=.*price)(?=.*double)",
        "frobnicate(ts)": "frobnicate",
        "hours(name)": r"(?s)(?=.*name)(?=.*string)(?=.*hour)",
    }
    for partitioning, message in bad.items():
        with pytest.raises(Exception, match=message):
            spark.sql(f"CREATE TABLE streamcat.{scope}.bad {columns} PARTITIONED BY ({partitioning})")
        assert not spark.catalog.tableExists(f"streamcat.{scope}.bad"), partitioning

    spark.sql(f"CREATE TABLE streamcat.{scope}.ok {columns}")
    for partitioning, message in {"months(nope)": "nope", "days(ts": r"days\(ts", "bucket(8, price)": "price"}.items():
        with pytest.raises(Exception, match=message):
            spark.sql(
                f"CALL streamcat.system.set_partitioning(table => '{scope}.ok', partitioning => '{partitioning}')"
            )
    assert _partitioning(spark, f"streamcat.{scope}.ok") == []
    with pytest.raises(Exception, match="no table"):
        spark.sql(f"CALL streamcat.system.set_partitioning(table => '{scope}.missing', partitioning => 'days(ts)')")
