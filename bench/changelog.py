"""Primary-key tables: batch reads before and after compaction beside Parquet, and CDC ingest beside its parse.

    .venv/bin/python bench/changelog.py [--rows 5000000] [--updates 1000000] [--commits 10]
                                        [--events 1000000] [--wrapped] [--rounds 3] [--cores 2]
                                        [--workers N]

Runs the whole application on a temporary SQLite database and local warehouse (served in a thread
of this process) and one local SparkSession (``local[cores]``).

Part 1. A primary-key table of ``--rows`` rows (6 columns) receives ``--updates`` upserts of existing
keys in ``--commits`` commits (``INSERT INTO``: each commit updates distinct keys spread over the
whole table). Its final state (``--rows`` rows) is read in full (every column, through Spark's
``noop`` sink) before and after ``CALL streamcat.system.compact``, beside Spark's own Parquet reader
reading the same final rows from a Parquet directory written once. Figures are rows per wall-clock
second, the best of ``--rounds`` rounds; each round reads the table and then the Parquet directory, and
each phase (before, after) is compared with the Parquet reads of its own rounds, so both sides of a
ratio have as many tries, at the same times. The contenders must agree on the table's sums.
Targets: after compaction >= 0.9 of Parquet, before >= 0.3.

Part 2. A file of ``--events`` Debezium JSON change events of a 10-column keyed table (PostgreSQL
source positions and encodings: base64 decimals, days, micro and zoned timestamps; 20% updates, 10%
deletes each followed by a tombstone, 2% re-delivered events; the bare envelope, or the
schema/payload one with ``--wrapped``) is ingested by ``streamcat ingest`` (the command, run as a
subprocess, committing to a primary-key table of the same server; its own figure and the process's),
beside the bare parse of the same file (``msgspec.json.decode`` of every line, in this process, on one
core: the fastest JSON parser installed). The command decodes in worker processes (``--workers``,
default: its own, one per CPU) and again with ``--workers 1`` (one process): both are printed, with the
number of decoding processes each used. Target: ingest >= 0.5 of the bare parse.
"""

from __future__ import annotations

import argparse
import base64
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec

from bench.harness import local_session, served_catalog
from catalog_api.client import CatalogClient

COLUMNS = [
    "id AS id",
    "CAST(id % 1000003 AS INT) AS i32",
    "id * 0.5D AS f64",
    "concat('user-', id % 10000) AS s",
    "date_add(DATE'2020-01-01', CAST(id % 3650 AS INT)) AS d",
    "timestamp_micros(1700000000000000 + id) AS ts",
]
SUMS = "count(*), sum(id), sum(i32), sum(f64), sum(length(s)), sum(unix_date(d)), sum(unix_micros(ts) % 1000003)"
#: A stride coprime with every power of 2 and 5, so that one commit's updated keys are distinct.
STRIDE = 7_919


def best(rounds: list[dict[str, float]], name: str) -> float:
    """The best (largest) figure of ``name`` over the rounds."""
    return max(r[name] for r in rounds)


def timed(action: Callable[[], Any]) -> float:
    """Seconds ``action`` takes."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def read_all(spark: Any, source: str) -> Callable[[], None]:
    """A full read of every column of ``source`` (a table name or ``parquet:<dir>``)."""
    def run() -> None:
        frame = spark.read.parquet(source[8:]) if source.startswith("parquet:") else spark.table(source)
        frame.write.format("noop").mode("overwrite").save()
    return run


def part_one(spark: Any, args: argparse.Namespace, root: Path) -> None:
    """Reads of a primary-key table before and after compaction, beside Parquet."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS streamcat.bench")
    table = "streamcat.bench.orders"
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, i32 INT, f64 DOUBLE, s STRING, d DATE, ts TIMESTAMP, "
              "CONSTRAINT orders_pk PRIMARY KEY (id)) USING avro")
    load = timed(lambda: spark.range(0, args.rows, 1, args.cores).selectExpr(*COLUMNS).writeTo(table).append())
    print(f"loaded {args.rows:,} rows in {load:.1f} s")
    per_commit = args.updates // args.commits
    for commit in range(args.commits):
        start = commit * per_commit * STRIDE
        spark.sql(f"INSERT INTO {table} SELECT ({start} + j * {STRIDE}) % {args.rows} AS id, "
                  f"CAST(j % 1000 AS INT) + {commit + 1} AS i32, j * 1.5D AS f64, concat('upd-', j) AS s, "
                  f"DATE'2024-01-01' AS d, timestamp_micros(1800000000000000 + j) AS ts "
                  f"FROM (SELECT id AS j FROM range(0, {per_commit}, 1, {args.cores}))")
    print(f"applied {per_commit * args.commits:,} updates in {args.commits} commits")

    parquet = root / "final.parquet"
    spark.table(table).write.parquet(str(parquet))
    expected = spark.sql(f"SELECT {SUMS} FROM parquet.`{parquet}`").collect()[0]
    actual = spark.sql(f"SELECT {SUMS} FROM {table}").collect()[0]
    assert tuple(actual) == tuple(expected), f"the table and its Parquet copy disagree: {actual} != {expected}"

    rounds: list[dict[str, float]] = [{} for _ in range(args.rounds)]

    def measure(phase: str) -> None:
        # each round reads the table and then Parquet, so both see the machine as it was then
        for r in rounds:
            r[phase] = args.rows / timed(read_all(spark, table))
            r[f"parquet {phase}"] = args.rows / timed(read_all(spark, f"parquet:{parquet}"))
            print(f"  {phase} compaction: {r[phase]:,.0f} rows/s, Parquet {r[f'parquet {phase}']:,.0f} rows/s")

    measure("before")
    compact = timed(lambda: spark.sql("CALL streamcat.system.compact(table => 'bench.orders')").collect())
    print(f"compacted in {compact:.1f} s")
    compacted = spark.sql(f"SELECT {SUMS} FROM {table}").collect()[0]
    assert tuple(compacted) == tuple(expected), "compaction changed the table's contents"
    measure("after")

    print(f"\nbatch read of {args.rows:,} rows (best of {args.rounds}; Parquet read beside each):")
    for name, target in (("before", 0.3), ("after", 0.9)):
        rate, parquet_rate = best(rounds, name), best(rounds, f"parquet {name}")
        ratio = rate / parquet_rate
        print(f"  Spark Parquet                 {parquet_rate:>12,.0f} rows/s")
        print(f"  streamcat {name + ' compaction':<19} {rate:>12,.0f} rows/s   {ratio:.2f} of Parquet "
              f"(target >= {target}: {'met' if ratio >= target else 'NOT met'})")


#: The bench table: Spark StructType JSON.
CDC_SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": n != "id", "metadata": {}} for n, t in [
        ("id", "long"), ("name", "string"), ("qty", "integer"), ("price", "decimal(12,2)"), ("flag", "boolean"),
        ("day", "date"), ("at", "timestamp_ntz"), ("ts", "timestamp"), ("score", "double"), ("note", "string"),
    ]
]}
_ENVELOPE_SCHEMA = {"type": "struct", "name": "bench.public.t.Envelope", "optional": False, "fields": [
    {"type": "struct", "optional": True, "name": "bench.public.t.Value", "field": side, "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "name"},
        {"type": "int32", "optional": True, "field": "qty"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "2", "connect.decimal.precision": "12"}, "field": "price"},
        {"type": "boolean", "optional": True, "field": "flag"},
        {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1, "field": "day"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "at"},
        {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1, "field": "ts"},
        {"type": "double", "optional": True, "field": "score"},
        {"type": "string", "optional": True, "field": "note"},
    ]} for side in ("before", "after")
] + [
    {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source", "field": "source",
     "fields": [{"type": "string", "optional": False, "field": "version"},
                {"type": "int64", "optional": True, "field": "lsn"},
                {"type": "string", "optional": True, "field": "sequence"}]},
    {"type": "string", "optional": False, "field": "op"},
    {"type": "int64", "optional": True, "field": "ts_ms"},
]}


def _row(key: int, rng: random.Random) -> dict[str, Any]:
    cents = rng.randint(-10**9, 10**9)
    return {
        "id": key, "name": rng.choice([None, f"name-{rng.randint(0, 10**6)}"]), "qty": rng.randint(0, 1000),
        "price": base64.b64encode(cents.to_bytes(8, "big", signed=True).lstrip(b"\0") or b"\0").decode(),
        "flag": rng.random() < 0.5, "day": rng.randint(0, 20000), "at": rng.randint(0, 2 * 10**15),
        "ts": "2024-05-06T07:08:09.123456Z", "score": rng.random(), "note": None,
    }


def write_events(path: Path, events: int, wrapped: bool = False, seed: int = 7) -> None:
    """A Debezium JSON file of ``events`` changes to keys 1..events/4 (see the module's docstring)."""
    rng = random.Random(seed)
    live: dict[int, dict[str, Any]] = {}
    lsn = 1000
    with path.open("wb") as out:
        previous = b""
        for _ in range(events):
            lsn += 10
            key = rng.randint(1, max(1, events // 4))
            before = live.get(key)
            roll = rng.random()
            if before is None or roll < 0.7:
                op, after = ("u" if before is not None else "c"), _row(key, rng)
            elif roll < 0.9:
                op, after = "u", {**before, "qty": rng.randint(0, 1000), "name": None}
            else:
                op, after = "d", None
            if after is None:
                live.pop(key, None)
            else:
                live[key] = after
            payload = {"before": before, "after": after, "op": op, "ts_ms": 1_700_000_000_000,
                       "source": {"version": "2.5.0.Final", "connector": "postgresql", "name": "bench",
                                  "ts_ms": 1_700_000_000_000, "snapshot": "false", "db": "bench",
                                  "sequence": f'["{lsn - 10}","{lsn}"]', "schema": "public", "table": "t",
                                  "txId": lsn // 10, "lsn": lsn, "xmin": None}}
            line = msgspec.json.encode({"schema": _ENVELOPE_SCHEMA, "payload": payload} if wrapped else payload)
            out.write(line + b"\n")
            if op == "d":
                out.write(b"null\n")
            if previous and rng.random() < 0.02:
                out.write(previous)  # an at-least-once re-delivery
            previous = line + b"\n"


def bare_parse(path: Path, loads: Any = msgspec.json.decode) -> tuple[int, float]:
    """(events, seconds) of ``loads`` over every line of the file (msgspec's generic JSON decoder)."""
    started = time.perf_counter()
    count = 0
    with path.open("rb", buffering=1 << 20) as f:
        for line in f:
            if loads(line) is not None:
                count += 1
    return count, time.perf_counter() - started


def part_two(server: str, args: argparse.Namespace, root: Path) -> None:
    """``streamcat ingest`` of Debezium JSON beside the bare parse of the same file."""
    path = root / "changes.jsonl"
    write_events(path, args.events, wrapped=args.wrapped)
    catalog = CatalogClient(server)
    command = [str(Path(sys.executable).with_name("streamcat")), "ingest", "--uri", server, "--format",
               "debezium-json", "--batch-size", "100000", "--quiet"]
    variants = {"many": [] if args.workers is None else ["--workers", str(args.workers)], "one": ["--workers", "1"]}
    rounds: list[dict[str, float]] = []
    used: dict[str, int] = {}
    for round_ in range(args.rounds):
        events, seconds = bare_parse(path)
        figures = {"parse": events / seconds}
        for variant, flags in variants.items():
            table = f"cdc{round_}{variant}"
            catalog.create_table("bench", table, CDC_SCHEMA, properties={"primary-key": "id"})
            run = [*command, *flags, "--table", f"bench.{table}", "--writer-id", "bench", str(path)]
            started = time.perf_counter()
            done = subprocess.run(run, check=True, capture_output=True, text=True)
            wall = time.perf_counter() - started
            # the command's own summary: "... in S s (R events/s, N decoding processes)", from its start to its end
            summary = done.stdout.split(" s (")[1]
            figures[f"inside-{variant}"] = float(summary.split(" events/s")[0].replace(",", ""))
            figures[f"wall-{variant}"] = events / wall
            used[variant] = int(summary.split(", ")[1].split(" decoding")[0])
        rounds.append(figures)
    parse_rate = best(rounds, "parse")
    print(f"\nCDC ingest of {events:,} Debezium events ({'schema/payload' if args.wrapped else 'bare'} envelope, "
          f"{path.stat().st_size / 1e6:.0f} MB; best of {args.rounds}):")
    print(f"  bare JSON parse (msgspec, one core) {parse_rate:>12,.0f} events/s")
    for variant in variants:
        for name, label in (("inside", "its run"), ("wall", "process")):
            rate = best(rounds, f"{name}-{variant}")
            ratio = rate / parse_rate
            workers = f"{used[variant]} decoding process{'es' if used[variant] > 1 else ''}"
            print(f"  streamcat ingest ({label:<7}) {rate:>12,.0f} events/s   {ratio:.2f} of the parse with {workers} "
                  f"(target >= 0.5: {'met' if ratio >= 0.5 else 'NOT met'})")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--updates", type=int, default=1_000_000)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--skip-reads", action="store_true", help="run part 2 only")
    parser.add_argument("--skip-ingest", action="store_true", help="run part 1 only")
    parser.add_argument("--wrapped", action="store_true", help="part 2 in the schema/payload envelope")
    parser.add_argument("--workers", type=int, help="part 2: the ingest's decoding processes (default: its own)")
    args = parser.parse_args()
    extra = {"spark.sql.shuffle.partitions": str(args.cores), "spark.sql.session.timeZone": "UTC"}
    with served_catalog("streamcat-bench-changelog-") as (server, root), \
            local_session(server, root, "streamcat-bench-changelog", args.cores, args.driver_memory,
                          extra=extra) as spark:
        if not args.skip_reads:
            part_one(spark, args, root)
        if not args.skip_ingest:
            spark.sql("CREATE NAMESPACE IF NOT EXISTS streamcat.bench")
            part_two(server, args, root)


if __name__ == "__main__":
    main()
