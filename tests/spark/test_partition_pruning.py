"""Partitioned tables through Spark: writers split rows by partition, reads skip partitions.

For every transform a table is written through Spark (the Python writer: partitioned tables do not
take the native one) and checked four ways: every columnar chunk's rows map, by an implementation of
Iceberg's transforms of this test's own, to the partition values the chunk records; the table reads
back equal to the input; a filtered query returns exactly what filtering the input in Python returns,
on the native scan and on the Python one alike; and the catalog's plan (``planChunks``) skips chunks
for that filter, as does the Python reader's own planning. Then: a spec change keeps older chunks
readable and prunable, and row-level statements, primary-key upserts and key deletes, compaction and
streaming writes all keep one partition per chunk. Two tests without Spark check a write task's fanout:
one open chunk per partition, at most ``rowsPerChunk`` rows each, and bounded memory.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyspark.sql.types import LongType, StringType, StructField, StructType
from pyspark_streamcat.options import SourceOptions
from pyspark_streamcat.reader import BatchReader
from pyspark_streamcat.scan_planning import ChunkPartition, MergePartition
from pyspark_streamcat.writer import FANOUT_PENDING_CHUNKS, ChunkSink, _Fanout

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.partitioning.spec import PartitionSpec
from catalog_api.streams.chunks import read_columnar_chunk
from catalog_api.streams.row_kinds import DELETE as DELETE_ROW
from catalog_api.streams.row_kinds import OP_COLUMN
from tests.spark.helpers import catalog_beside, rows, scans_natively

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: A second catalog on the same server that always scans with the Python source.
PYTHON = "streamcat_pypart"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_DAY = dt.date(1970, 1, 1)
DDL = "id BIGINT, n INT, s STRING, region STRING, d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ"
#: What the tests compare: every column, in plain Python units (dates as days, timestamps as micros; the
#: session's time zone is UTC, so TIMESTAMP_NTZ reads as if in UTC).
SELECT = "id, n, s, region, unix_date(d), unix_micros(ts), unix_micros(CAST(ntz AS TIMESTAMP))"
NAMES = ("id", "n", "s", "region", "d", "ts", "ntz")


def _micros(value: dt.datetime) -> int:
    """Microseconds since the epoch (a naive datetime: as if in UTC, TIMESTAMP_NTZ's reading)."""
    delta = (value if value.tzinfo else value.replace(tzinfo=dt.UTC)) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _units(value: Any) -> Any:
    """A Python value in the units of statistics and partition values."""
    if isinstance(value, dt.datetime):
        return _micros(value)
    if isinstance(value, dt.date):
        return (value - EPOCH_DAY).days
    return value


def _input() -> list[tuple[Any, ...]]:
    """The rows every case writes: sources of every transform's type, nulls among them, values on both
    sides of 1970 (time transforms floor) and of 0 (truncation floors), and a string with non-ASCII."""
    base_ts = dt.datetime(1969, 12, 31, 20, tzinfo=dt.UTC)
    base_ntz = dt.datetime(1969, 12, 31, 22)
    out = []
    for i in range(240):
        out.append((
            None if i % 37 == 0 else i * 7 - 100,
            None if i % 29 == 0 else (i * 37) % 200 - 60,
            None if i % 31 == 0 else ["ab", "ac", "b", "ñu", "ñx"][i % 5] + f"-{i}",
            None if i % 41 == 0 else ["eu", "us", "ap"][i % 3],
            None if i % 23 == 0 else dt.date(1968, 6, 1) + dt.timedelta(days=i * 25),
            None if i % 19 == 0 else base_ts + dt.timedelta(hours=i * 7, minutes=i),
            None if i % 17 == 0 else base_ntz + dt.timedelta(minutes=i * 21, seconds=i),
        ))
    return out


INPUT = _input()
#: The input as the tests read it back (``SELECT``).
EXPECTED = [tuple(_units(v) for v in row) for row in INPUT]


# -- Iceberg's transforms, written down again (independently of catalog_api.partitioning) --------------


def _murmur3_bucket(data: bytes, count: int) -> int:
    import mmh3

    return (mmh3.hash(data, 0, signed=True) & 0x7FFFFFFF) % count


def _transform(transform: str, value: Any, is_date: bool = False) -> Any:
    """The partition value of one source value (in statistics units; ``is_date``: days of a date, else
    microseconds of a timestamp) under ``transform`` (``day``, ``bucket[8]``...), by Iceberg's spec."""
    if value is None:
        return None
    kind, _, rest = transform.partition("[")
    param = int(rest.rstrip("]")) if rest else 0
    if kind == "identity":
        return value
    if kind == "hour":
        return value // 3_600_000_000
    if kind in ("year", "month", "day"):
        return _calendar(kind, value if is_date else value // 86_400_000_000)
    if kind == "bucket":
        data = value.encode() if isinstance(value, str) else int(value).to_bytes(8, "little", signed=True)
        return _murmur3_bucket(data, param)
    if kind == "truncate":
        return value[:param] if isinstance(value, str) else value - value % param
    raise AssertionError(f"no such transform {transform}")


def _calendar(kind: str, days: int) -> int:
    date = EPOCH_DAY + dt.timedelta(days=days)
    if kind == "day":
        return days
    if kind == "year":
        return date.year - 1970
    return (date.year - 1970) * 12 + date.month - 1


def test_the_reference_transforms_agree_with_icebergs_spec_examples() -> None:
    # Iceberg's spec, "Appendix B": hash values of 34 (int/long) and "iceberg" (string)
    import mmh3

    assert mmh3.hash((34).to_bytes(8, "little"), 0, signed=True) == 2017239379
    assert mmh3.hash(b"iceberg", 0, signed=True) == 1210000089
    assert _transform("hour", -1) == -1
    assert _transform("day", _micros(dt.datetime(1969, 12, 31, 23))) == -1
    assert _transform("month", (dt.date(1969, 12, 5) - EPOCH_DAY).days, is_date=True) == -1
    assert _transform("truncate[10]", -1) == -10
    assert _transform("truncate[2]", "ñuñu") == "ñu"


# -- fixtures and helpers ---------------------------------------------------------------------------------


@pytest.fixture
def python_catalog(spark: Any, spark_server: str) -> str:
    """The catalog ``streamcat_pypart``: the same server, ``native-scan=false``."""
    return catalog_beside(spark, PYTHON, **{"native-scan": "false"})


@pytest.fixture
def client(spark_server: str) -> CatalogClient:
    """A catalog client of the Spark tests' server."""
    return CatalogClient(spark_server)


def _frame(spark: Any, data: list[tuple[Any, ...]], partitions: int = 2) -> Any:
    """``data`` as a DataFrame of the tables' schema, spread over ``partitions`` write tasks."""
    return spark.createDataFrame(data, DDL).repartition(partitions)


def _create(spark: Any, scope: str, name: str, partitioning: str) -> str:
    """A table of ``DDL`` partitioned by ``partitioning``; returns ``scope.name``."""
    table = f"{scope}.{name}"
    spark.sql(f"CREATE TABLE streamcat.{table} ({DDL}) USING avro PARTITIONED BY ({partitioning})")
    return table


def _sorted(data: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(data, key=lambda row: tuple((v is None, v if v is not None else 0) for v in row))


def _plan(server: str, scope: str, table: str, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The catalog's answer to ``POST .../chunks/plan`` (planChunks) for ``filters``."""
    answer = requests.post(f"{server}/v1/scopes/{scope}/streams/{table}/chunks/plan", json={"filters": filters},
                           timeout=30)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _live(client: CatalogClient, scope: str, table: str) -> list[Chunk]:
    return list(client.snapshot(scope, table)[1])


def _check_chunk_partitions(client: CatalogClient, scope: str, table: str) -> list[Chunk]:
    """Assert that every live columnar chunk records a spec of the table and values that every row of its
    file maps to (the rows a key delete deletes included); returns the live chunks."""
    described = client.get_table(scope, table)
    specs = {int(s["specId"]): s for s in described["partitionSpecs"]}
    location = described["stream"]["location"]
    chunks = _live(client, scope, table)
    for chunk in chunks:
        if chunk.kind != "columnar" or chunk.partition is None:
            continue
        spec = specs[chunk.partition["specId"]]
        values = chunk.partition["values"]
        assert len(values) == len(spec["fields"]), chunk
        data, _encoding = read_columnar_chunk(location, chunk.path)
        assert data.num_rows == chunk.event_count
        for f, value in zip(spec["fields"], values, strict=True):
            column = data.column(f["source"]).to_pylist()
            is_date = str(data.schema.field(f["source"]).type) == "date32[day]"
            seen = {_transform(f["transform"], _units(v), is_date) for v in column}
            assert seen == {value}, (chunk.path, f, value, seen)
    return chunks


def _reader_chunks(spark_server: str, scope: str, table: str, filters: list[dict[str, Any]]) -> int:
    """How many chunks the Python reader's planning hands to its read tasks, with ``filters`` pushed."""
    options = SourceOptions.parse({"uri": spark_server, "scope": scope, "table": table,
                                   "streamcat.filters": json.dumps(filters)}).resolved()
    schema = StructType.fromJson(CatalogClient(spark_server).get_table(scope, table)["schema"])
    planned = BatchReader(options, schema).partitions()
    return sum(len(p.chunks) for p in planned if isinstance(p, ChunkPartition | MergePartition))


def _both(spark: Any, query: str, table: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The sorted rows of ``query`` (naming ``{t}``) through the native catalog and the Python one."""
    return (_sorted(rows(spark, query.format(t=f"streamcat.{table}"))),
            _sorted(rows(spark, query.format(t=f"{PYTHON}.{table}"))))


# -- a write task's fanout (no Spark) --------------------------------------------------------------------

BUCKETS = PartitionSpec.from_json({"specId": 3, "fields": [
    {"fieldId": 1000, "sourceId": 1, "source": "k", "transform": "bucket[16]", "name": "k_bucket"}]})
KV = StructType([StructField("k", LongType()), StructField("v", StringType())])


def _kv(count: int) -> pa.Table:
    return pa.table({"k": pa.array(range(count), pa.int64()), "v": [str(i) for i in range(count)]})


def test_a_write_task_keeps_one_open_chunk_per_partition_of_at_most_rows_per_chunk(tmp_path: Path) -> None:
    options = SourceOptions(uri="http://unused", scope="s", stream="t", location=str(tmp_path), rows_per_chunk=50)
    written = ChunkSink(options, KV, 7, BUCKETS).write(iter(_kv(2000).to_batches(max_chunksize=100)))
    by_partition: dict[tuple[Any, ...], list[int]] = {}
    for chunk in written.chunks:
        assert chunk.partition is not None
        assert chunk.partition["specId"] == 3
        data, encoding = read_columnar_chunk(str(tmp_path), chunk.path)
        assert encoding == 7
        assert 0 < data.num_rows == chunk.event_count <= 50
        keys = data.column("k").to_pylist()
        assert {_transform("bucket[16]", k) for k in keys} == set(chunk.partition["values"])
        by_partition.setdefault(tuple(chunk.partition["values"]), []).extend(keys)
    assert len(by_partition) == 16
    assert sorted(k for keys in by_partition.values() for k in keys) == list(range(2000)), "every row once"
    assert all(keys == sorted(keys) for keys in by_partition.values()), "in their order within a partition"

    plain = ChunkSink(options, KV, 7).write(iter(_kv(120).to_batches(max_chunksize=100)))
    # an unpartitioned table's chunks name spec 0 (the catalog still takes them if the table is partitioned
    # before they are committed)
    spec_zero = {"specId": 0, "values": []}
    assert [(c.event_count, c.partition) for c in plain.chunks] == [(50, spec_zero), (50, spec_zero), (20, spec_zero)]


def test_a_write_task_holds_at_most_two_chunks_worth_of_rows_whatever_the_partitions() -> None:
    flushed: list[int] = []

    def flush(batches: list[pa.RecordBatch], partition: dict[str, Any] | None) -> Chunk:
        flushed.append(sum(b.num_rows for b in batches))
        return Chunk(path=f"data/{len(flushed)}.parquet", kind="columnar", event_count=flushed[-1],
                     partition=partition)

    fanout = _Fanout(BUCKETS, 50, flush)
    for batch in _kv(2000).to_batches(max_chunksize=100):
        fanout.add(batch)
        assert sum(c.rows for c in fanout.open.values()) <= FANOUT_PENDING_CHUNKS * 50
    fanout.finish()
    assert sum(flushed) == 2000
    assert len(fanout.chunks) == len(flushed) > 2000 // 50, "16 partitions filling slowly: some written early"


# -- one case per transform -------------------------------------------------------------------------------


def _ts(text: str) -> int:
    return _micros(dt.datetime.fromisoformat(text))


def _day(text: str) -> int:
    return (dt.date.fromisoformat(text) - EPOCH_DAY).days


@dataclass(frozen=True)
class Case:
    """A partitioning, a filter in SQL, the same filter in Python (on an ``EXPECTED`` row as a dict) and
    as filter JSON (what Spark pushes)."""

    partitioning: str
    transform: str
    sql: str
    keep: Callable[[dict[str, Any]], bool]
    filters: list[dict[str, Any]]


def _ge(name: str, bound: int) -> Callable[[dict[str, Any]], bool]:
    return lambda row: row[name] is not None and row[name] >= bound


def _lt(name: str, bound: int) -> Callable[[dict[str, Any]], bool]:
    return lambda row: row[name] is not None and row[name] < bound


CASES = {
    "identity": Case("region", "identity", "region = 'us'", lambda r: r["region"] == "us",
                     [{"op": "eq", "column": "region", "value": "us"}]),
    "years": Case("years(d)", "year", "d < DATE'1972-01-01'", _lt("d", _day("1972-01-01")),
                  [{"op": "lt", "column": "d", "value": _day("1972-01-01")}]),
    "months": Case("months(ts)", "month", "ts >= TIMESTAMP'1970-02-01 00:00:00'",
                   _ge("ts", _ts("1970-02-01T00:00:00+00:00")),
                   [{"op": "ge", "column": "ts", "value": _ts("1970-02-01T00:00:00+00:00")}]),
    "days": Case("days(ts)", "day", "ts < TIMESTAMP'1970-01-03 00:00:00'",
                 _lt("ts", _ts("1970-01-03T00:00:00+00:00")),
                 [{"op": "lt", "column": "ts", "value": _ts("1970-01-03T00:00:00+00:00")}]),
    "hours": Case("hours(ntz)", "hour", "ntz >= TIMESTAMP_NTZ'1970-01-03 10:00:00'",
                  _ge("ntz", _ts("1970-01-03T10:00:00+00:00")),
                  [{"op": "ge", "column": "ntz", "value": _ts("1970-01-03T10:00:00+00:00")}]),
    "bucket": Case("bucket(8, id)", "bucket[8]", "id IN (40, 117)", lambda r: r["id"] in (40, 117),
                   [{"op": "in", "column": "id", "values": [40, 117]}]),
    "truncate": Case("truncate(10, n)", "truncate[10]", "n >= 100", _ge("n", 100),
                     [{"op": "ge", "column": "n", "value": 100}]),
    "truncate-string": Case("truncate(2, s)", "truncate[2]", "s LIKE 'ñu%'",
                            lambda r: r["s"] is not None and r["s"].startswith("ñu"),
                            [{"op": "startswith", "column": "s", "value": "ñu"}]),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_each_transform_splits_writes_and_prunes_reads(
    spark: Any, spark_server: str, scope: str, client: CatalogClient, python_catalog: str, case: Case
) -> None:
    name = "t" + uuid.uuid4().hex[:8]
    table = _create(spark, scope, name, case.partitioning)
    spec = client.get_table(scope, name)["partitionSpec"]
    assert [f["transform"] for f in spec["fields"]] == [case.transform]
    _frame(spark, INPUT).writeTo(f"streamcat.{table}").append()

    chunks = _check_chunk_partitions(client, scope, name)
    assert all(c.partition is not None and c.partition["specId"] == spec["specId"] for c in chunks)
    # one chunk per partition and write task: never two partitions in one chunk, so at least as many
    # chunks as partitions
    assert len(chunks) >= len({tuple(c.partition["values"]) for c in chunks if c.partition}) > 1

    assert scans_natively(spark, f"SELECT * FROM streamcat.{table}"), "the native path reads partitioned tables"
    assert not scans_natively(spark, f"SELECT * FROM {PYTHON}.{table}")
    assert _both(spark, f"SELECT {SELECT} FROM {{t}}", table) == (_sorted(EXPECTED), _sorted(EXPECTED))
    wanted = _sorted([row for row in EXPECTED if case.keep(dict(zip(NAMES, row, strict=True)))])
    assert wanted, "the filter keeps some rows"
    native, python = _both(spark, f"SELECT {SELECT} FROM {{t}} WHERE {case.sql}", table)
    assert native == wanted
    assert python == wanted

    plan = _plan(spark_server, scope, name, case.filters)
    assert plan["chunksSkipped"] > 0
    assert plan["bytesSkipped"] > 0
    assert len(plan["chunks"]) + plan["chunksSkipped"] == len(chunks)
    assert _reader_chunks(spark_server, scope, name, case.filters) == len(plan["chunks"])


# -- spec changes -----------------------------------------------------------------------------------------


def test_spec_changes_keep_older_chunks_readable_and_pruned(
    spark: Any, spark_server: str, scope: str, client: CatalogClient, python_catalog: str
) -> None:
    table = _create(spark, scope, "evolving", "days(ts)")
    first, second, third = INPUT[:100], INPUT[100:200], INPUT[200:]
    _frame(spark, first).writeTo(f"streamcat.{table}").append()
    old_spec = client.get_table(scope, "evolving")["partitionSpec"]["specId"]

    client.alter_table(scope, "evolving", [{"op": "setPartitioning", "partitioning": "bucket(4, id)"}])
    new_spec = client.get_table(scope, "evolving")["partitionSpec"]["specId"]
    assert new_spec != old_spec
    _frame(spark, second).writeTo(f"streamcat.{table}").append()
    spark.sql(f"CALL streamcat.system.set_partitioning(table => '{table}', partitioning => '')")
    assert not client.get_table(scope, "evolving")["partitionSpec"]["fields"]
    _frame(spark, third).writeTo(f"streamcat.{table}").append()

    chunks = _check_chunk_partitions(client, scope, "evolving")
    by_spec: dict[int | None, int] = {}
    for c in chunks:
        key = c.partition["specId"] if c.partition else None
        by_spec[key] = by_spec.get(key, 0) + 1
    assert set(by_spec) == {old_spec, new_spec, None}, by_spec

    expected = _sorted([tuple(_units(v) for v in row) for row in INPUT])
    assert _both(spark, f"SELECT {SELECT} FROM {{t}}", table) == (expected, expected)

    # the old spec's chunks are pruned by day; the others are kept by their partition (none on ts), though
    # their statistics may still rule some out
    day_filter = [{"op": "lt", "column": "ts", "value": _ts("1970-01-01T06:00:00+00:00")}]
    plan = _plan(spark_server, scope, "evolving", day_filter)
    kept_old = [c for c in plan["chunks"] if (c.get("partition") or {}).get("specId") == old_spec]
    assert plan["chunksSkipped"] > 0
    assert len(kept_old) < by_spec[old_spec]
    # and the new spec's by bucket
    id_filter = [{"op": "eq", "column": "id", "value": second[5][0]}]
    plan = _plan(spark_server, scope, "evolving", id_filter)
    kept_new = [c for c in plan["chunks"] if (c.get("partition") or {}).get("specId") == new_spec]
    assert 0 < len(kept_new) < by_spec[new_spec]
    assert len({tuple(c["partition"]["values"]) for c in kept_new}) == 1, "one bucket"

    for sql, keep in (("ts < TIMESTAMP'1970-01-01 06:00:00'", _lt("ts", _ts("1970-01-01T06:00:00+00:00"))),
                      (f"id = {second[5][0]}", lambda r: r["id"] == second[5][0])):
        wanted = _sorted([row for row in expected if keep(dict(zip(NAMES, row, strict=True)))])
        assert _both(spark, f"SELECT {SELECT} FROM {{t}} WHERE {sql}", table) == (wanted, wanted)


# -- every writer ---------------------------------------------------------------------------------------


def test_row_level_statements_write_new_rows_by_partition(
    spark: Any, spark_server: str, scope: str, client: CatalogClient, python_catalog: str
) -> None:
    table = _create(spark, scope, "dml", "region, truncate(50, n)")
    _frame(spark, INPUT).writeTo(f"streamcat.{table}").append()
    model = {i: dict(zip(NAMES, row, strict=True)) for i, row in enumerate(EXPECTED)}

    # part of some chunks: position deletes
    spark.sql(f"DELETE FROM streamcat.{table} WHERE n < 0 AND region = 'eu' AND id % 2 = 0")
    model = {k: r for k, r in model.items()
             if not (r["n"] is not None and r["n"] < 0 and r["region"] == "eu" and r["id"] is not None
                     and r["id"] % 2 == 0)}
    # moves rows to other partitions (region and n change)
    spark.sql(f"UPDATE streamcat.{table} SET region = 'ap', n = n + 60 WHERE region = 'us' AND n < 40")
    for r in model.values():
        if r["region"] == "us" and r["n"] is not None and r["n"] < 40:
            r["region"], r["n"] = "ap", r["n"] + 60
    source = f"{scope}_src"
    merged = [(-79, 5, "m1", "sa"), (5000, 7, "m2", "eu")]  # -79 is a row's id (i = 3), 5000 none's
    spark.createDataFrame(merged, "id BIGINT, n INT, s STRING, region STRING").createOrReplaceTempView(source)
    spark.sql(f"MERGE INTO streamcat.{table} t USING {source} s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET n = s.n, s = s.s, region = s.region "
              "WHEN NOT MATCHED THEN INSERT (id, n, s, region, d, ts, ntz) "
              "VALUES (s.id, s.n, s.s, s.region, NULL, NULL, NULL)")
    model[3].update(n=5, s="m1", region="sa")
    model[-1] = dict(zip(NAMES, (5000, 7, "m2", "eu", None, None, None), strict=True))

    chunks = _check_chunk_partitions(client, scope, "dml")
    assert all(c.partition is not None for c in chunks if c.kind == "columnar")
    assert any(c.kind == "deletes" for c in chunks), "a partly deleted chunk: position deletes"
    expected = _sorted([tuple(r[n] for n in NAMES) for r in model.values()])
    assert _both(spark, f"SELECT {SELECT} FROM {{t}}", table) == (expected, expected)
    wanted = _sorted([tuple(r[n] for n in NAMES) for r in model.values() if r["region"] == "ap"])
    assert _both(spark, f"SELECT {SELECT} FROM {{t}} WHERE region = 'ap'", table) == (wanted, wanted)
    assert _plan(spark_server, scope, "dml", [{"op": "eq", "column": "region", "value": "ap"}])["chunksSkipped"] > 0


def _key_rows(data: Iterable[tuple[int, str]]) -> str:
    return ", ".join(f"({k}, '{v}')" for k, v in data)


def test_primary_key_upserts_key_deletes_and_compaction_stay_in_their_partition(
    spark: Any, spark_server: str, scope: str, client: CatalogClient, python_catalog: str
) -> None:
    table = f"{scope}.keyed"
    spark.sql(f"CREATE TABLE streamcat.{table} (k BIGINT NOT NULL, v STRING, CONSTRAINT keyed_pk PRIMARY KEY (k)) "
              "USING avro PARTITIONED BY (bucket(4, k))")
    model = {k: f"v{k}" for k in range(60)}
    spark.sql(f"INSERT INTO streamcat.{table} VALUES {_key_rows(model.items())}")
    spark.sql(f"INSERT INTO streamcat.{table} VALUES {_key_rows([(3, 'up3'), (70, 'n70')])}")  # upserts
    model.update({3: "up3", 70: "n70"})
    spark.sql(f"UPDATE streamcat.{table} SET k = k + 1000 WHERE k IN (5, 6)")  # a key change: a key delete
    model.update({1005: model.pop(5), 1006: model.pop(6)})
    spark.sql(f"DELETE FROM streamcat.{table} WHERE k = 7")
    model.pop(7)

    def check() -> None:
        chunks = _check_chunk_partitions(client, scope, "keyed")
        assert all(c.partition is not None for c in chunks if c.kind == "columnar")
        expected = sorted(model.items())
        assert _both(spark, "SELECT k, v FROM {t}", table) == (expected, expected)
        assert _both(spark, "SELECT k, v FROM {t} WHERE k = 1005", table) == ([(1005, "v5")], [(1005, "v5")])
        assert _both(spark, "SELECT k, v FROM {t} WHERE k = 5", table) == ([], [])
        plan = _plan(spark_server, scope, "keyed", [{"op": "eq", "column": "k", "value": 5}])
        assert plan["chunksSkipped"] > 0

    check()
    described = client.get_table(scope, "keyed")
    deletes = [c for c in _live(client, scope, "keyed") if c.kind == "columnar"
               and OP_COLUMN in read_columnar_chunk(described["stream"]["location"], c.path)[0].column_names]
    assert deletes, "the key change and the delete wrote key deletes"
    for chunk in deletes:  # each in the partition of the keys it deletes (checked above), and only deletes
        ops = read_columnar_chunk(described["stream"]["location"], chunk.path)[0].column(OP_COLUMN).to_pylist()
        assert set(ops) == {DELETE_ROW}

    spark.sql(f"CALL streamcat.system.compact(table => '{table}')")
    after = _live(client, scope, "keyed")
    assert len({c.commit for c in after}) == 1, "one compaction's output"
    check()


def test_streaming_writes_split_by_partition_and_streaming_reads_filter(
    spark: Any, spark_server: str, scope: str, client: CatalogClient, tmp_path: Path
) -> None:
    source = f"streamcat.{scope}.events"
    spark.sql(f"CREATE TABLE {source} ({DDL}) USING avro")
    sink = _create(spark, scope, "sink", "region, months(ts)")
    for part in (INPUT[:120], INPUT[120:]):
        _frame(spark, part, 1).writeTo(source).append()
    query = (spark.readStream.option("maxCommitsPerTrigger", "1").table(source).writeStream
             .option("checkpointLocation", str(tmp_path / "to-sink")).trigger(availableNow=True)
             .toTable(f"streamcat.{sink}"))
    query.awaitTermination(120)
    assert query.exception() is None

    chunks = _check_chunk_partitions(client, scope, "sink")
    assert chunks
    assert all(c.partition is not None for c in chunks)
    assert len({c.commit for c in chunks}) == 2, "one commit per micro-batch"
    expected = _sorted(EXPECTED)
    assert _sorted(rows(spark, f"SELECT {SELECT} FROM streamcat.{sink}")) == expected

    # a streaming read of the partitioned table, with a filter on a partition source
    name = f"{scope}_eu"
    read = (spark.readStream.table(f"streamcat.{sink}").where("region = 'eu'").writeStream.format("memory")
            .queryName(name).option("checkpointLocation", str(tmp_path / "from-sink"))
            .trigger(availableNow=True).start())
    read.awaitTermination(120)
    assert read.exception() is None
    got = _sorted(rows(spark, f"SELECT {SELECT} FROM {name}"))
    assert got == _sorted([r for r in EXPECTED if r[3] == "eu"])
