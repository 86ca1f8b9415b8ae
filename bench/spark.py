"""Spark through the Streamcat catalog, beside Spark's own Parquet and JSON sources.

    .venv/bin/python bench/spark.py [--rows 5000000] [--cores 2] [--rounds 3] [--conf KEY=VALUE ...]

Runs the whole application on a temporary SQLite database and local warehouse (served in a
thread of this process) and one local SparkSession (``local[cores]``). One 10-column
DataFrame (``spark.range`` and expressions: longs, ints, doubles, a float, a decimal, a
string, a date, a timestamp and a boolean) is written by each contender in the same run:
``INSERT`` into a Streamcat table (``df.writeTo(table).append()``: columnar chunks written by
Spark's own Parquet writer through the catalog shim, or by the Python data source when the
native path is off, and one catalog commit), ``df.write.parquet`` and ``df.write.json``. Then each
is read back with ``SELECT SUM`` over all ten columns. Figures are rows per wall-clock
second, the best of ``--rounds`` interleaved rounds (a shared machine's noise only ever slows a
run down); ratios are to Parquet (for both it is the speed to beat). A small warm-up of every
contender first starts the JVM's JIT and the Python workers. The contenders must agree on the sums.

Then, in the same run, partition pruning: a copy of the DataFrame with one more column, ``day`` (100
days, 1% of the rows each), is written once to a Streamcat table ``PARTITIONED BY (days(day))`` and
once with ``df.write.partitionBy("day").parquet``, and each answers ``SELECT SUM`` of the ten columns
``WHERE day = DATE'2020-02-12'`` (1% of the rows), ``--rounds`` times. Printed: the bytes of each
table's files, the bytes its scan read, their share (target: <= 5% for Streamcat) and the best time.
Bytes read are Spark's input metrics (``inputBytes`` of the query's stages, summed from the status REST
API of the session's UI, which the bench turns on, bound to 127.0.0.1): what Spark's Parquet reader
read on the native path. Parquet's vectored reads are off for the selective queries (only): their
reads escape the file system statistics those metrics come from (a scan would show only its footers).
A Python read (``native-scan=false``) is not counted by Spark: then the bytes of the chunks
``planChunks`` handed to the tasks are printed instead, marked ``*`` (the files the tasks open; their
column projection reads less of them). The Streamcat plan's chunks kept and skipped are printed too.

``--conf`` sets a Spark setting of the session: ``--conf spark.sql.catalog.streamcat.native-write=false``
measures the Python writer, ``--conf spark.sql.catalog.streamcat.native-scan=false`` the Python reader.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import add_conf_option, conf_settings, local_session, served_catalog

#: The Spark UI, only for its status REST API (the bytes each query's stages read): on, on a free port.
UI_SETTINGS = {"spark.ui.enabled": "true", "spark.ui.port": "0"}

COLUMNS = [
    "id AS id",
    "CAST(id % 1000003 AS INT) AS i32",
    "id * 7 AS i64",
    "id * 0.5D AS f64",
    "CAST(id % 1000 AS FLOAT) AS f32",
    "CAST(id % 100000 AS DECIMAL(18, 2)) AS dec",
    "concat('user-', id % 10000) AS s",
    "date_add(DATE'2020-01-01', CAST(id % 3650 AS INT)) AS d",
    "timestamp_micros(1700000000000000 + id) AS ts",
    "id % 3 = 0 AS b",
]
#: JSON's timestamp format, with microseconds (Spark's default writes milliseconds).
MICROS = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"
SUMS = ("sum(id), sum(i32), sum(i64), sum(f64), sum(f32), sum(dec), sum(length(s)), sum(unix_date(d)), "
        "sum(unix_micros(ts) - 1700000000000000), sum(CAST(b AS INT))")
#: Days of the partitioned copy's ``day`` column: each holds 1% of the rows.
DAYS = 100
DAY = f"date_add(DATE'2020-01-01', CAST(id % {DAYS} AS INT)) AS day"
#: The selective query's day, and its predicate on the partition column: 1% of the rows.
SELECTED_DAY = dt.date(2020, 2, 12)
SELECTED = f"day = DATE'{SELECTED_DAY.isoformat()}'"
#: The most of a table's bytes the selective Streamcat query may read.
TARGET_SHARE = 0.05
#: The Hadoop setting (a session setting reaches the scans' Hadoop configuration) of Parquet's vectored reads.
VECTORED_IO = "parquet.hadoop.vectored.io.enabled"


def frame(spark: Any, rows: int, partitions: int) -> Any:
    """The benchmark's DataFrame of ``rows`` rows."""
    return spark.range(0, rows, 1, partitions).selectExpr(*COLUMNS)


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each figure counts")
    parser.add_argument("--driver-memory", default="3g")
    add_conf_option(parser)
    args = parser.parse_args()
    settings_given = conf_settings(parser, args)

    # The UI (for its REST API) listens where SPARK_LOCAL_IP says, else on every interface: keep it local.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with served_catalog("streamcat-bench-spark-") as (server, root), \
            local_session(server, root, "streamcat-bench", args.cores, args.driver_memory, settings_given,
                          extra=UI_SETTINGS) as spark:
        run(spark, root, args.rows, args.cores, args.rounds)
        run_selective(spark, server, root, args.rows, args.cores, args.rounds)


def run(spark: Any, root: Path, rows: int, cores: int, rounds: int) -> None:
    """Write and read with each contender, ``rounds`` times interleaved; print the best rows/s and ratios."""
    spark.sql("CREATE NAMESPACE streamcat.bench")
    ddl = ", ".join(f"{c.rsplit(' AS ', 1)[1]} {t}" for c, t in zip(COLUMNS, [
        "BIGINT", "INT", "BIGINT", "DOUBLE", "FLOAT", "DECIMAL(18, 2)", "STRING", "DATE", "TIMESTAMP", "BOOLEAN"],
        strict=True))
    schema = frame(spark, 1, 1).schema

    def contenders(tag: str) -> dict[str, tuple[Callable[[Any], Any], Callable[[], Any]]]:
        table = f"streamcat.bench.{tag}"
        spark.sql(f"CREATE TABLE {table} ({ddl}) USING avro")
        parquet, json_dir = str(root / f"{tag}.parquet"), str(root / f"{tag}.json")
        return {
            "streamcat": (lambda df: df.writeTo(table).append(),
                          lambda: spark.sql(f"SELECT {SUMS} FROM {table}").collect()),
            "parquet": (lambda df: df.write.mode("overwrite").parquet(parquet),
                        lambda: spark.read.parquet(parquet).selectExpr(*SUMS.split(", ")).collect()),
            "json": (lambda df: df.write.mode("overwrite").option("timestampFormat", MICROS).json(json_dir),
                     lambda: spark.read.schema(schema).option("timestampFormat", MICROS).json(json_dir)
                     .selectExpr(*SUMS.split(", ")).collect()),
        }

    for write, read in contenders("warm").values():
        write(frame(spark, 20_000, cores))
        read()

    best: dict[str, dict[str, float]] = {}
    sums: dict[str, Any] = {}
    for round_number in range(rounds):
        for name, (write, read) in contenders(f"t{round_number}").items():
            data = frame(spark, rows, cores)
            start = time.perf_counter()
            write(data)
            write_seconds = time.perf_counter() - start
            start = time.perf_counter()
            answer = read()
            read_seconds = time.perf_counter() - start
            figures = best.setdefault(name, {"write": 0.0, "read": 0.0})
            figures["write"] = max(figures["write"], rows / write_seconds)
            figures["read"] = max(figures["read"], rows / read_seconds)
            sums[name] = tuple(float(v) for v in answer[0])
            print(f"round {round_number + 1}: {name:10s} write {write_seconds:7.2f} s  read {read_seconds:7.2f} s",
                  flush=True)
        if len(set(sums.values())) != 1:
            raise SystemExit(f"the contenders disagree on the sums: {sums}")

    base = best["parquet"]
    print(f"\n{rows:,} rows x 10 columns, local[{cores}], best of {rounds} (rows/s; ratio to Parquet)")
    print(f"{'':10s} {'INSERT rows/s':>15s} {'ratio':>7s} {'SELECT SUM rows/s':>19s} {'ratio':>7s}")
    for name, figures in best.items():
        print(f"{name:10s} {figures['write']:15,.0f} {figures['write'] / base['write']:7.2f} "
              f"{figures['read']:19,.0f} {figures['read'] / base['read']:7.2f}")



def _ui_api(spark: Any) -> str:
    """The base URL of the session's status REST API, on 127.0.0.1 (where the bench binds the UI)."""
    context = spark.sparkContext
    url = context.uiWebUrl
    if not url:
        raise SystemExit("the Spark UI is off (--conf spark.ui.enabled=false?): its REST API counts the bytes read")
    port = urllib.parse.urlsplit(url).port
    return f"http://127.0.0.1:{port}/api/v1/applications/{context.applicationId}"


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


def input_bytes(spark: Any, group: str, timeout: float = 60.0) -> int:
    """The bytes Spark's tasks read (input metrics, every stage attempt) in the jobs of job group ``group``.

    The UI's store is filled by a listener after the jobs end, so this waits until it shows every job
    of the group done (a job is marked done after its stages, whose metrics are then in)."""
    base = _ui_api(spark)
    wanted = set(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    deadline = time.monotonic() + timeout
    while True:
        jobs = [j for j in _get_json(f"{base}/jobs") if j.get("jobGroup") == group]
        if {j["jobId"] for j in jobs} >= wanted and all(j["status"] in ("SUCCEEDED", "FAILED") for j in jobs):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the status API did not show the jobs of {group} done in {timeout} s")
        time.sleep(0.2)
    stages = {stage for j in jobs for stage in j["stageIds"]}
    return sum(int(attempt.get("inputBytes") or 0)
               for stage in sorted(stages) for attempt in _get_json(f"{base}/stages/{stage}"))


def timed_in_group(spark: Any, group: str, query: Callable[[], Any]) -> tuple[Any, float, int]:
    """(answer, seconds, bytes read) of ``query`` run as job group ``group``."""
    context = spark.sparkContext
    context.setJobGroup(group, group)
    try:
        start = time.perf_counter()
        answer = query()
        seconds = time.perf_counter() - start
    finally:
        context.setJobGroup("streamcat-bench", "between measured queries")
    return answer, seconds, input_bytes(spark, group)


def parquet_bytes(folder: Path) -> int:
    """The bytes of a Parquet directory's data files (not its _SUCCESS and checksum files)."""
    return sum(p.stat().st_size for p in folder.rglob("*.parquet"))


def plan_figures(server: str, scope: str, table: str) -> dict[str, int]:
    """What ``planChunks`` answers for the selective query's filter: chunks and bytes kept and skipped."""
    from catalog_api.client import CatalogClient

    days = (SELECTED_DAY - dt.date(1970, 1, 1)).days  # dates travel as days since the epoch
    plan = CatalogClient(server).plan_chunks(scope, table, filters=[{"op": "eq", "column": "day", "value": days}])
    return {"kept": len(plan.chunks), "kept_bytes": sum(c.bytes for c in plan.chunks),
            "skipped": plan.chunks_skipped, "skipped_bytes": plan.bytes_skipped}


def run_selective(spark: Any, server: str, root: Path, rows: int, cores: int, rounds: int) -> None:
    """Write the partitioned copies once, run the selective query ``rounds`` times on each, print the bytes."""
    from catalog_api.client import CatalogClient

    data = frame(spark, rows, cores).selectExpr("*", DAY)
    table, folder = "streamcat.bench.by_day", root / "by_day.parquet"
    ddl = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in data.schema.fields)
    spark.sql(f"CREATE TABLE {table} ({ddl}) USING avro PARTITIONED BY (days(day))")
    contenders: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "streamcat": (lambda: data.writeTo(table).append(),
                      lambda: spark.sql(f"SELECT {SUMS} FROM {table} WHERE {SELECTED}").collect()),
        "parquet": (lambda: data.write.mode("overwrite").partitionBy("day").parquet(str(folder)),
                    lambda: spark.read.parquet(str(folder)).where(SELECTED).selectExpr(*SUMS.split(", ")).collect()),
    }
    figures: dict[str, dict[str, Any]] = {}
    for name, (write, _read) in contenders.items():
        start = time.perf_counter()
        write()
        figures[name] = {"write": rows / (time.perf_counter() - start), "seconds": float("inf")}
    _cut, chunks = CatalogClient(server).snapshot("bench", "by_day")
    figures["streamcat"]["table"] = sum(c.bytes for c in chunks)
    figures["parquet"]["table"] = parquet_bytes(folder)
    plan = plan_figures(server, "bench", "by_day")
    sums: dict[str, Any] = {}
    # Parquet's vectored reads (on by default in Spark 4) bypass the Hadoop file system statistics that
    # input metrics come from: with them a scan shows only its footers' bytes. Plain reads count every byte.
    spark.conf.set(VECTORED_IO, "false")
    try:
        for round_number in range(rounds):
            for name, (_write, read) in contenders.items():
                answer, seconds, read_bytes = timed_in_group(spark, f"selective-{name}-{round_number}", read)
                sums[name] = tuple(float(v) for v in answer[0])
                figures[name]["seconds"] = min(figures[name]["seconds"], seconds)
                figures[name]["read"] = read_bytes
    finally:
        spark.conf.unset(VECTORED_IO)
    if len(set(sums.values())) != 1:
        raise SystemExit(f"the selective queries disagree on the sums: {sums}")
    estimated = figures["streamcat"]["read"] == 0  # the Python source: Spark does not see its reads
    if estimated:
        figures["streamcat"]["read"] = plan["kept_bytes"]
    print(f"\nselective read, {SELECTED} (1% of the rows), of a copy partitioned by day ({DAYS} days), "
          f"best of {rounds}")
    print(f"{'':10s} {'INSERT rows/s':>15s} {'table bytes':>14s} {'bytes read':>14s} {'share':>7s} {'seconds':>8s}")
    for name, row in figures.items():
        mark = "*" if name == "streamcat" and estimated else " "
        print(f"{name:10s} {row['write']:15,.0f} {row['table']:14,d} {row['read']:13,d}{mark} "
              f"{row['read'] / row['table']:7.2%} {row['seconds']:8.2f}")
    share = figures["streamcat"]["read"] / figures["streamcat"]["table"]
    print(f"streamcat plan: {plan['kept']} chunks kept ({plan['kept_bytes']:,d} bytes), {plan['skipped']} skipped "
          f"({plan['skipped_bytes']:,d} bytes); share read {share:.2%}, target <= {TARGET_SHARE:.0%}: "
          f"{'met' if share <= TARGET_SHARE else 'NOT met'}")
    if estimated:
        print("* the Python source's reads are not in Spark's input metrics: the bytes of the chunks it was handed")


if __name__ == "__main__":
    main()
