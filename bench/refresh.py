"""What an incremental step of a continuous materialized table costs, beside a full recompute and Spark's floor.

    flock /tmp/streamcat-bench.lock .venv/bin/python bench/refresh.py [--rows 5000000] [--groups 2000000]
        [--small-groups 1000] [--step 5000] [--more-rows 15000000] [--steps 100] [--rounds 3] [--cores 2]
        [--conf KEY=VALUE ...]

Runs the whole application on a temporary SQLite database and local warehouse (served in a thread of
this process) and one local SparkSession (``local[cores]``). ``bench.orders`` gets ``--rows`` rows in one
commit; two materialized tables in continuous mode follow it:

* ``bench.revenue``: ``SELECT item, sum(qty) AS qty, count(*) AS n FROM orders GROUP BY item``, ``--groups``
  items (an aggregation-engine table keyed by item: a step appends the changed items' deltas);
* ``bench.buckets``: the same aggregate by ``bucket``, ``--small-groups`` buckets;
* ``bench.averages``: ``SELECT item, avg(qty) AS avg_qty, sum(qty) AS qty FROM orders GROUP BY item``: AVG and
  no COUNT(*), kept in hidden state columns (``avg_qty$sum``, ``avg_qty$count``, ``$rows``).

The run prints, each figure the best of ``--rounds`` rounds of ``--step`` new rows (a shared machine's noise
only ever slows a run down):

1. at ``--rows`` source rows: the step of revenue beside its full recompute (``force => true``: the whole
   source summed per group, written the same way; timed in rounds of their own), target ratio <= 0.1, and
   beside the query alone (computed, not written); the step of buckets beside revenue's (the table's size,
   target within 1.5x); the step of averages beside its own full recompute; Spark's floor for a job of a
   step's size (the SUM/COUNT by item of ``--step`` rows made by ``spark.range``: one shuffle, no Streamcat
   code) and the change feed's aggregate alone;
2. ``--steps`` steps of revenue without compaction (its ``compaction.delta-rows-ratio`` raised), then a full
   read of the table (an aggregate over every column, which merges every delta), its compaction, and the
   same read of the compacted table;
3. after ``--more-rows`` more source rows (one commit, absorbed by one step of each table): the steps again,
   beside those at ``--rows`` (the source's size, target within 1.3x).

Every table must equal its query run in batch at the end.
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

ORDERS = "streamcat.bench.orders"
QUERIES = {
    "revenue": f"SELECT item, sum(qty) AS qty, count(*) AS n FROM {ORDERS} GROUP BY item",
    "buckets": f"SELECT bucket, sum(qty) AS qty, count(*) AS n FROM {ORDERS} GROUP BY bucket",
    "averages": f"SELECT item, avg(qty) AS avg_qty, sum(qty) AS qty FROM {ORDERS} GROUP BY item",
}
DELTAS = "incremental: grouped aggregate (changed groups)"


class Source:
    """bench.orders: appends of rows with ids from 0 on (items and buckets by id)."""

    def __init__(self, spark: Any, catalog: CatalogClient, groups: int, small_groups: int, cores: int) -> None:
        self.spark, self.catalog, self.cores = spark, catalog, cores
        self.groups, self.small_groups = groups, small_groups
        self.next_id = 0
        spark.sql("CREATE NAMESPACE streamcat.bench")
        spark.sql(f"CREATE TABLE {ORDERS} (id BIGINT NOT NULL, item STRING NOT NULL, bucket INT NOT NULL, "
                  "qty INT NOT NULL) USING avro")

    def append(self, rows: int) -> int:
        """Append ``rows`` orders in one commit (ids spread over the items: a step of n rows changes n items
        while n is below the number of items); answers the commit's number."""
        self.spark.range(self.next_id, self.next_id + rows, 1, self.cores if rows > 100_000 else 1).selectExpr(
            "id", f"concat('item-', id * 7919 % {self.groups}) AS item",
            f"CAST(id % {self.small_groups} AS INT) AS bucket", "CAST(id % 10 AS INT) AS qty",
        ).writeTo(ORDERS).append()
        self.next_id += rows
        return int(self.catalog.get_stream("bench", "orders")["lastCommit"])


def timed(action: Any, *args: Any) -> float:
    """Wall-clock seconds of ``action(*args)``."""
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def refresh(spark: Any, table: str, force: bool = False, expect: str | None = DELTAS) -> float:
    """One ``refresh_materialized_table`` of ``bench.<table>``: its wall-clock seconds. Unless forced (a full
    recompute) or ``expect`` is None, it must be made as ``expect`` says."""
    start = time.perf_counter()
    answer = spark.sql("CALL streamcat.system.refresh_materialized_table(table => :table, force => :force)",
                       args={"table": f"bench.{table}", "force": force}).collect()[0]
    seconds = time.perf_counter() - start
    if answer["outcome"] != "succeeded" or (expect is not None and not force and answer["method"] != expect):
        raise SystemExit(f"the refresh of bench.{table} was not as expected: {answer}")
    return seconds


def read_all(spark: Any, table: str) -> None:
    """A full read of ``bench.<table>``: every row merged, every column aggregated."""
    spark.sql(f"SELECT count(*), sum(qty), sum(n), max(item) FROM streamcat.bench.{table}").collect()


def feed_aggregate(spark: Any, cut: int) -> None:
    """The per-item SUM/COUNT of commit ``cut``'s change feed, collected."""
    spark.read.option("startingVersion", str(cut)).option("endingVersion", str(cut)) \
        .changes(ORDERS).groupBy("item").agg({"qty": "sum", "*": "count"}).collect()


def plain_aggregate(spark: Any, rows: int, groups: int) -> None:
    """A plain Spark job of one step's size: SUM/COUNT by item of ``rows`` generated rows, collected."""
    spark.range(rows).selectExpr(f"concat('item-', id * 7919 % {groups}) AS item", "CAST(id % 10 AS INT) AS qty") \
        .groupBy("item").agg({"qty": "sum", "*": "count"}).collect()


def query_alone(spark: Any) -> None:
    """revenue's query over every source row, computed and dropped (Spark's ``noop`` sink): a full recompute
    without its write."""
    spark.sql(QUERIES["revenue"]).write.format("noop").mode("overwrite").save()


def rounds_of_steps(spark: Any, source: Source, step: int, rounds: int) -> dict[str, float]:
    """``rounds`` rounds: append ``step`` rows, step each table, time the floor and the feed's aggregate. The
    best seconds of each figure."""
    figures: dict[str, list[float]] = {**{name: [] for name in QUERIES}, "floor": [], "feed": []}
    for number in range(rounds):
        cut = source.append(step)
        for name in list(QUERIES)[::-1 if number % 2 else 1]:  # none always first
            figures[name].append(refresh(spark, name))
        figures["floor"].append(timed(plain_aggregate, spark, step, source.groups))
        figures["feed"].append(timed(feed_aggregate, spark, cut))
    return {name: min(seconds) for name, seconds in figures.items()}


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000, help="source rows of part 1")
    parser.add_argument("--groups", type=int, default=2_000_000, help="items (bench.revenue's groups)")
    parser.add_argument("--small-groups", type=int, default=1000, help="buckets (bench.buckets' groups)")
    parser.add_argument("--step", type=int, default=5000, help="new source rows per step")
    parser.add_argument("--more-rows", type=int, default=15_000_000, help="source rows added before part 3")
    parser.add_argument("--steps", type=int, default=100, help="steps without compaction before the reads")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best of each figure counts")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--driver-memory", default="4g")
    add_conf_option(parser)
    args = parser.parse_args()
    settings_given = conf_settings(parser, args)

    shuffle = {"spark.sql.shuffle.partitions": str(args.cores)}
    with served_catalog("streamcat-bench-refresh-") as (server, root), \
            local_session(server, root, "streamcat-bench-refresh", args.cores, args.driver_memory, settings_given,
                          shuffle) as spark:
        run(spark, CatalogClient(server), args)


def run(spark: Any, catalog: CatalogClient, args: argparse.Namespace) -> None:
    """Load, create the tables, then the three parts. Prints the figures."""
    source = Source(spark, catalog, args.groups, args.small_groups, args.cores)
    print(f"loaded {args.rows:,} rows in {timed(source.append, args.rows):.1f} s")
    for name, query in QUERIES.items():
        seconds = timed(lambda n=name, q=query: spark.sql(
            "CALL streamcat.system.create_materialized_table(table => :table, query => :query, "
            "freshness => '10 seconds', refresh_mode => 'continuous')",
            args={"table": f"bench.{n}", "query": q}).collect())
        print(f"created bench.{name} (its first refresh is full) in {seconds:.1f} s")
    # Warm-up (the JIT, Python workers, each plan's classes): steps of each table until the JIT has compiled
    # what they run (the first few are slower), a forced refresh, and each job timed below once.
    for _ in range(5):
        cut = source.append(args.step)
        for name in QUERIES:
            refresh(spark, name)
    refresh(spark, "revenue", force=True)
    refresh(spark, "averages", force=True)
    plain_aggregate(spark, args.step, args.groups)
    feed_aggregate(spark, cut)
    read_all(spark, "revenue")
    query_alone(spark)

    first = rounds_of_steps(spark, source, args.step, args.rounds)
    full = min(timed(refresh, spark, "revenue", True) for _ in range(args.rounds))
    full_averages = min(timed(refresh, spark, "averages", True) for _ in range(args.rounds))
    computed = min(timed(query_alone, spark) for _ in range(args.rounds))
    ratio = first["revenue"] / full
    size = first["revenue"] / first["buckets"]
    print(f"\n1. {args.rows:,} source rows, steps of {args.step:,} new rows (best of {args.rounds}):")
    print(f"   step, {args.groups:,} groups      {first['revenue']:6.2f} s")
    print(f"   full recompute, same table  {full:6.2f} s   step / full = {ratio:.3f} (target <= 0.1); "
          f"its query alone {computed:.2f} s, step / query = {first['revenue'] / computed:.3f}")
    print(f"   step, {args.small_groups:,} groups        {first['buckets']:6.2f} s   "
          f"step at {args.groups:,} / at {args.small_groups:,} groups = {size:.2f} (target <= 1.5)")
    print(f"   step, AVG in hidden state   {first['averages']:6.2f} s   its full recompute {full_averages:.2f} s, "
          f"step / full = {first['averages'] / full_averages:.3f}")
    print(f"   floor: plain Spark SUM/COUNT of {args.step:,} generated rows {first['floor']:.2f} s; "
          f"the change feed's aggregate alone {first['feed']:.2f} s")

    spark.sql("ALTER TABLE streamcat.bench.revenue SET TBLPROPERTIES ('compaction.delta-rows-ratio' = '1000')")
    spark.sql("CALL streamcat.system.compact(table => 'bench.revenue')").collect()
    compacted_read = min(timed(read_all, spark, "revenue") for _ in range(args.rounds))
    step_times = []
    for _ in range(args.steps):
        source.append(args.step)
        step_times.append(refresh(spark, "revenue"))
    chunks = catalog.snapshot("bench", "revenue")[1]
    merged_read = min(timed(read_all, spark, "revenue") for _ in range(args.rounds))
    compaction = timed(lambda: spark.sql("CALL streamcat.system.compact(table => 'bench.revenue')").collect())
    after_read = min(timed(read_all, spark, "revenue") for _ in range(args.rounds))
    spark.sql("ALTER TABLE streamcat.bench.revenue UNSET TBLPROPERTIES ('compaction.delta-rows-ratio')")
    ordered = sorted(step_times)
    print(f"\n2. {args.steps} steps of bench.revenue without compaction: median {ordered[len(ordered) // 2]:.2f} s, "
          f"slowest {ordered[-1]:.2f} s, first {step_times[0]:.2f} s, last {step_times[-1]:.2f} s")
    print(f"   read of the table: compacted {compacted_read:.2f} s; after {args.steps} steps "
          f"({sum(c.event_count for c in chunks):,} rows in {len(chunks)} chunks) {merged_read:.2f} s"
          f"; compaction {compaction:.2f} s; read after it {after_read:.2f} s; uncompacted / compacted = "
          f"{merged_read / compacted_read:.1f} and {merged_read / after_read:.1f}")

    if args.more_rows:
        source.append(args.more_rows)
        grown = refresh(spark, "revenue", expect=None), refresh(spark, "buckets", expect=None)
        print(f"\n3. {args.more_rows:,} more source rows, absorbed in one step each "
              f"({grown[0]:.1f} s, {grown[1]:.1f} s)")
        later = rounds_of_steps(spark, source, args.step, args.rounds)
        total = args.rows + args.more_rows
        for name in ("revenue", "buckets"):
            print(f"   step of bench.{name}: {args.rows:,} source rows {first[name]:.2f} s, {total:,} rows "
                  f"{later[name]:.2f} s, step at {total:,} / at {args.rows:,} = {later[name] / first[name]:.2f} "
                  "(target <= 1.3)")

    for name, query in QUERIES.items():
        # part 2 steps revenue alone (and part 3 is skipped with --more-rows 0): bring each table up to its
        # source first ("unchanged" when it is)
        spark.sql("CALL streamcat.system.refresh_materialized_table(table => :table)",
                  args={"table": f"bench.{name}"}).collect()
        table = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM streamcat.bench.{name}").collect())
        if table != sorted(tuple(r) for r in spark.sql(query).collect()):
            raise SystemExit(f"bench.{name} differs from its query run in batch")
    print("\nevery table equals its query run in batch")


if __name__ == "__main__":
    main()
