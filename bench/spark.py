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

``--conf`` sets a Spark setting of the session: ``--conf spark.sql.catalog.streamcat.native-write=false``
measures the Python writer, ``--conf spark.sql.catalog.streamcat.native-scan=false`` the Python reader.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import add_conf_option, conf_settings, local_session, served_catalog

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

    with served_catalog("streamcat-bench-spark-") as (server, root), \
            local_session(server, root, "streamcat-bench", args.cores, args.driver_memory, settings_given) as spark:
        run(spark, root, args.rows, args.cores, args.rounds)


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


if __name__ == "__main__":
    main()
