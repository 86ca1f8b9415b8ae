"""The Iceberg REST catalog: ``loadTable`` latency on a long history, and a pyiceberg scan beside pyarrow.

    flock /tmp/streamcat-bench.lock .venv/bin/python bench/iceberg.py [--commits 10000] [--rows 5000000]
                                                                      [--files 10] [--loads 50] [--rounds 7]

Runs the whole application on a temporary SQLite database and local warehouse, served in a thread of
this process.

Part 1. A table with ``--commits`` append commits (one columnar chunk each, committed through the
catalog service: the chunks' files are not written, since loading the table reads no data) is loaded
through ``GET /iceberg/v1/namespaces/{ns}/tables/{t}``: the first load (which writes every manifest and
manifest list) is timed alone, then ``--loads`` loads give p50 and p99, beside as many ``GET`` of the
same table through Streamcat's own API (``/v1/scopes/{scope}/tables/{table}``).

Part 2. A table of ``--rows`` rows (id, a timestamp, a string, two doubles) written by the Python writer
in ``--files`` Parquet chunks is read in full by pyiceberg (``load_table(...).scan().to_arrow()``,
the load included) and by pyarrow reading the same Parquet files directly (``pyarrow.parquet.read_table``
of the chunk paths). Figures are rows per second, the best of ``--rounds`` rounds, each round reading with
both (which one first alternates from round to round, so that neither always finds the files in a warmer
cache); the ratio is pyiceberg's over pyarrow's (target >= 0.9). pyiceberg's time is also given in its two
parts: loading the table (the catalog's share), and planning and reading its files. Both must read the
same number of rows and the same sum. On a machine shared with other work, rounds vary by a factor of two
or more, and the best round of either reader may be one the other had no like of: the median of each
round's own ratio (both read in the same round, under the same load) is printed too, and the CPU time each
reader took (every thread of the process, the server's included for pyiceberg), which other work on the
machine disturbs far less than the elapsed time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import requests

from bench.harness import served_catalog
from catalog_api.client import CatalogClient
from catalog_api.model import COLUMNAR, Chunk
from catalog_api.server.config import Settings
from catalog_api.server.extensions import Streamcat
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from registry.serde import Serializer


def _col(name: str, type_: str, nullable: bool = True) -> dict[str, object]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


SCHEMA = {"type": "struct", "fields": [_col("id", "long", False), _col("ts", "timestamp"), _col("name", "string"),
                                       _col("x", "double"), _col("y", "double")]}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed_gets(url: str, count: int) -> list[float]:
    session = requests.Session()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        answer = session.get(url, timeout=600)
        times.append(time.perf_counter() - start)
        answer.raise_for_status()
    return times


def load_latency(server: str, root: Path, commits: int, loads: int) -> None:
    catalog = CatalogClient(server)
    catalog.create_scope("bench")
    catalog.create_table("bench", "history", SCHEMA)
    # The commits go through the catalog service on the same database (HTTP would only make setup slower).
    settings = Settings(database_url=f"sqlite:///{root / 'catalog.db'}", warehouse=str(root / "warehouse"))
    direct = Streamcat.create(settings)
    start = time.perf_counter()
    for i in range(commits):
        direct.catalog.commit("bench", "history", [Chunk(path=f"c/{i:06d}.parquet", kind=COLUMNAR, event_count=100,
                                                         bytes=4096)])
    direct.close()
    print(f"part 1: {commits} commits made in {time.perf_counter() - start:.1f} s")
    iceberg = f"{server}/iceberg/v1/namespaces/bench/tables/history"
    first = _timed_gets(iceberg, 1)[0]
    size = len(requests.get(iceberg, timeout=600).content)
    warm = _timed_gets(iceberg, loads)
    own = _timed_gets(f"{server}/v1/scopes/bench/tables/history", loads)
    print(f"  loadTable, first (writes {commits} manifest lists and their manifests): {first * 1000:.0f} ms")
    print(f"  loadTable ({size / 1e6:.1f} MB of JSON): p50 {statistics.median(warm) * 1000:.1f} ms, "
          f"p99 {_percentile(warm, 0.99) * 1000:.1f} ms over {loads} loads")
    print(f"  GET /v1/scopes/bench/tables/history: p50 {statistics.median(own) * 1000:.1f} ms, "
          f"p99 {_percentile(own, 0.99) * 1000:.1f} ms over {loads} gets")


def scan_ratio(server: str, rows: int, files: int, rounds: int) -> None:
    from pyiceberg.catalog.rest import RestCatalog

    catalog = CatalogClient(server)
    registry = RegistryClient(server, "bench")
    catalog.create_table("bench", "big", SCHEMA)
    serializer = Serializer(registry, "big", registry.latest_schemas("big")[0].schema, register=False)
    per_file = -(-rows // files)
    rng = np.random.default_rng(7)
    start = time.perf_counter()
    with StreamWriter(catalog, registry, "bench", "big", serializer=serializer) as writer:
        for first in range(0, rows, per_file):
            n = min(per_file, rows - first)
            writer.write_table(pa.table({
                "id": pa.array(np.arange(first, first + n), pa.int64()),
                "ts": pa.array(np.arange(first, first + n) * 1_000_000, pa.timestamp("us", "UTC")),
                "name": pa.array([f"n{i % 1000}" for i in range(n)], pa.string()),
                "x": pa.array(rng.random(n), pa.float64()),
                "y": pa.array(rng.random(n), pa.float64()),
            }))
    print(f"part 2: {rows:,} rows in {files} Parquet chunks written in {time.perf_counter() - start:.1f} s")
    location = catalog.get_table("bench", "big")["stream"]["location"]
    paths = [f"{location}/{c.path}" for c in catalog.snapshot("bench", "big")[1]]
    iceberg = RestCatalog("bench", uri=f"{server}/iceberg")
    best_ice = best_arrow = best_load = best_read = float("inf")
    ratios = []
    cpus: dict[str, float] = {}  # the least CPU time (every thread of this process) each reader took

    def via_iceberg() -> tuple[pa.Table, float]:
        start = time.perf_counter()
        table = iceberg.load_table("bench.big")
        loaded = time.perf_counter() - start
        return table.scan().to_arrow(), loaded

    for round_ in range(rounds):
        timed: dict[str, float] = {}
        for reader in (("iceberg", "arrow") if round_ % 2 == 0 else ("arrow", "iceberg")):
            start, cpu = time.perf_counter(), time.process_time()
            if reader == "iceberg":
                read, load = via_iceberg()
            else:
                direct = pq.read_table(paths)
            timed[reader] = time.perf_counter() - start
            cpus[reader] = min(cpus.get(reader, float("inf")), time.process_time() - cpu)
        ice, arrow = timed["iceberg"], timed["arrow"]
        assert read.num_rows == direct.num_rows == rows
        assert pc.sum(read["x"]).as_py() == pc.sum(direct["x"]).as_py()
        best_ice, best_arrow = min(best_ice, ice), min(best_arrow, arrow)
        best_load, best_read = min(best_load, load), min(best_read, ice - load)
        ratios.append(arrow / ice)
        print(f"  round {round_ + 1}: pyiceberg {rows / ice:,.0f} rows/s (load {load * 1000:.0f} ms, read "
              f"{(ice - load) * 1000:.0f} ms), pyarrow {rows / arrow:,.0f} rows/s ({arrow * 1000:.0f} ms)")
    print(f"  best: pyiceberg {rows / best_ice:,.0f} rows/s (load {best_load * 1000:.0f} ms, read "
          f"{best_read * 1000:.0f} ms), pyarrow {rows / best_arrow:,.0f} rows/s ({best_arrow * 1000:.0f} ms), "
          f"ratio {best_arrow / best_ice:.2f} (target >= 0.9); median of the rounds' ratios "
          f"{statistics.median(ratios):.2f}")
    print(f"  CPU time, least of the rounds: pyiceberg {cpus['iceberg'] * 1000:.0f} ms (the server included: it "
          f"runs in this process), pyarrow {cpus['arrow'] * 1000:.0f} ms, ratio {cpus['arrow'] / cpus['iceberg']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--loads", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"bench/iceberg.py --commits {args.commits} --rows {args.rows} --files {args.files} "
          f"--loads {args.loads} --rounds {args.rounds}")
    with served_catalog("streamcat-iceberg-bench-") as (server, root):
        load_latency(server, root, args.commits, args.loads)
        scan_ratio(server, args.rows, args.files, args.rounds)


if __name__ == "__main__":
    main()
