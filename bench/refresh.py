"""A continuous materialized table's incremental refresh beside a full recompute of the same query.

    flock /tmp/streamcat-bench.lock .venv/bin/python bench/refresh.py [--rows 5000000] [--groups 1000]
        [--percent 1] [--rounds 3] [--cores 2] [--conf KEY=VALUE ...]

Runs the whole application on a temporary SQLite database and local warehouse (served in a thread of
this process) and one local SparkSession (``local[cores]``). ``bench.orders`` gets ``--rows`` rows in one
commit (``--groups`` items); ``bench.revenue`` is the materialized table
``SELECT item, sum(qty) AS qty, count(*) AS n FROM orders GROUP BY item`` in continuous mode (its first,
full refresh is timed as well). Each round appends ``--percent`` % new rows to ``orders`` in one commit,
then times ``refresh_materialized_table`` (an incremental step: the commit's change feed, merged into the
table by item) and, on the same data, ``refresh_materialized_table(force => true)`` (a full recompute of the
query over every row, written the same way). One small step and one forced refresh first warm up the JIT and
the Python workers. The table must equal the query run in batch at the end. Figures are seconds, the best of
``--rounds`` (a shared machine's noise only ever slows a run down); the ratio is incremental / full.

Beside the refreshes, each round times what they compute, without the refresh's bookkeeping (lease, query
analysis, commit, report): the query over the whole table (``collect``) and the per-item SUM/COUNT of the
round's change feed (``spark.read.changes``, ``collect``), to show how much of each refresh is fixed cost;
and, as the floor any refresh run by Spark stands on, the same SUM/COUNT by item of the round's number of
rows made by ``spark.range`` (a plain Spark job with one shuffle, touching no Streamcat code).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import add_conf_option, conf_settings, local_session, served_catalog
from catalog_api.client import CatalogClient

QUERY = "SELECT item, sum(qty) AS qty, count(*) AS n FROM streamcat.bench.orders GROUP BY item"


def append(spark: Any, first: int, rows: int, groups: int, partitions: int) -> None:
    """Append ``rows`` orders with ids from ``first`` on, in one commit."""
    spark.range(first, first + rows, 1, partitions).selectExpr(
        "id", f"concat('item-', id % {groups}) AS item", "CAST(id % 10 AS INT) AS qty",
    ).writeTo("streamcat.bench.orders").append()


def timed(action: Any, *args: Any) -> float:
    """Wall-clock seconds of ``action(*args)``."""
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def feed_aggregate(spark: Any, cut: int) -> None:
    """The per-item SUM/COUNT of commit ``cut``'s change feed, collected."""
    spark.read.option("startingVersion", str(cut)).option("endingVersion", str(cut)) \
        .changes("streamcat.bench.orders").groupBy("item").agg({"qty": "sum", "*": "count"}).collect()


def plain_aggregate(spark: Any, rows: int, groups: int) -> None:
    """A plain Spark job of one step's size: SUM/COUNT by item of ``rows`` generated rows, collected."""
    spark.range(rows).selectExpr(f"concat('item-', id % {groups}) AS item", "CAST(id % 10 AS INT) AS qty") \
        .groupBy("item").agg({"qty": "sum", "*": "count"}).collect()


def refresh(spark: Any, force: bool = False) -> tuple[float, str]:
    """One ``refresh_materialized_table`` of bench.revenue: its wall-clock seconds and how it was made."""
    start = time.perf_counter()
    answer = spark.sql("CALL streamcat.system.refresh_materialized_table(table => 'bench.revenue', force => :force)",
                       args={"force": force}).collect()[0]
    seconds = time.perf_counter() - start
    if answer["outcome"] != "succeeded":
        raise SystemExit(f"the refresh did not run: {answer}")
    return seconds, str(answer["method"])


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--groups", type=int, default=1000, help="distinct items (groups of the aggregate)")
    parser.add_argument("--percent", type=float, default=1.0, help="new rows per commit, in % of --rows")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best of each figure counts")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--driver-memory", default="3g")
    add_conf_option(parser)
    args = parser.parse_args()
    settings_given = conf_settings(parser, args)

    shuffle = {"spark.sql.shuffle.partitions": str(args.cores)}
    with served_catalog("streamcat-bench-refresh-") as (server, root), \
            local_session(server, root, "streamcat-bench-refresh", args.cores, args.driver_memory, settings_given,
                          shuffle) as spark:
        run(spark, CatalogClient(server), args.rows, args.groups, args.percent, args.rounds, args.cores)


def run(spark: Any, catalog: CatalogClient, rows: int, groups: int, percent: float, rounds: int,
        cores: int) -> None:
    """Load, create the table, then per round: append, step, recompute. Prints the figures."""
    spark.sql("CREATE NAMESPACE streamcat.bench")
    spark.sql("CREATE TABLE streamcat.bench.orders (id BIGINT, item STRING, qty INT) USING avro")
    start = time.perf_counter()
    append(spark, 0, rows, groups, cores)
    print(f"loaded {rows:,} rows in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    spark.sql("CALL streamcat.system.create_materialized_table(table => 'bench.revenue', query => :query, "
              "freshness => '10 seconds', refresh_mode => 'continuous')",
              args={"query": QUERY}).collect()
    print(f"created bench.revenue (its first refresh is full) in {time.perf_counter() - start:.1f} s")

    next_id = rows
    append(spark, next_id, 1000, groups, 1)  # warm-up: one small step, one forced refresh
    next_id += 1000
    refresh(spark)
    refresh(spark, force=True)

    step = max(1, int(rows * percent / 100))
    incremental: list[float] = []
    full: list[float] = []
    feed_compute: list[float] = []
    query_compute: list[float] = []
    floor: list[float] = []
    print(f"{'round':>5} {'new rows':>10} {'incremental s':>14} {'full s':>8} {'feed agg s':>11} {'query s':>8}")
    for round_number in range(1, rounds + 1):
        append(spark, next_id, step, groups, cores)
        next_id += step
        cut = catalog.get_stream("bench", "orders")["lastCommit"]
        feed_compute.append(timed(feed_aggregate, spark, cut))
        query_compute.append(timed(spark.sql(QUERY).collect))
        floor.append(timed(plain_aggregate, spark, step, groups))
        seconds, method = refresh(spark)
        if method != "incremental: grouped aggregate":
            raise SystemExit(f"the refresh was not incremental: {method}")
        incremental.append(seconds)
        seconds, method = refresh(spark, force=True)
        full.append(seconds)
        print(f"{round_number:>5} {step:>10,} {incremental[-1]:>14.2f} {full[-1]:>8.2f} {feed_compute[-1]:>11.2f} "
              f"{query_compute[-1]:>8.2f}")

    table = sorted(tuple(r) for r in spark.sql("SELECT * FROM streamcat.bench.revenue").collect())
    expected = sorted(tuple(r) for r in spark.sql(QUERY).collect())
    if table != expected:
        raise SystemExit("bench.revenue differs from its query run in batch")
    best_incremental, best_full = min(incremental), min(full)
    print(f"best: incremental {best_incremental:.2f} s, full recompute {best_full:.2f} s, "
          f"ratio {best_incremental / best_full:.3f} (target <= 0.1); table equals its query ({len(table)} groups)")
    print(f"compute alone: feed aggregate {min(feed_compute):.2f} s, query {min(query_compute):.2f} s, "
          f"ratio {min(feed_compute) / min(query_compute):.3f}")
    print(f"floor: a plain Spark aggregate of {step:,} generated rows {min(floor):.2f} s, "
          f"{min(floor) / best_full:.3f} of the full recompute")


if __name__ == "__main__":
    main()
