"""``from_registry`` decode rows/s beside Spark's built-in ``from_avro`` on the same Avro payloads.

    .venv/bin/python bench/registry_functions.py [--rows 2000000] [--cores 2] [--rounds 3] [--conf KEY=VALUE]...

Runs the whole application on a temporary SQLite database (served in a thread of this
process) and one local SparkSession (``local[cores]``). One Avro record schema of eight
fields (long, int, double, float, string, boolean, nullable string, long) is registered in a
group; ``--rows`` records are serialized once with fastavro and stored in a Parquet file with
three binary columns: the bare Avro payload, the same payload behind the Confluent prefix
(0x00 + the schema id) and behind the Pravega header (0x01 + the encoding id). Each contender
reads the file and sums every decoded field:

- ``from_avro``: Spark's own (``pyspark.sql.avro.functions.from_avro``) on the bare payloads,
  with the schema's JSON; the connector class it needs is built by ``bench/spark_avro_jar.py``.
- ``from_registry (confluent)`` and ``from_registry (pravega)``: this project's column function
  (an iterator Arrow UDF) on the framed payloads, resolving the writer schema through the registry.
- ``decode_registry (confluent)``: the same decoding over whole rows (``mapInArrow``).
- ``scan``: ``sum(length(payload))`` over the bare column: the floor (reading the file).

Figures are rows per wall-clock second and rows per CPU second (this process, Spark's JVM and
its Python workers, read from /proc), each the best of ``--rounds`` interleaved rounds (noise only
ever slows a run down; each round starts one contender later than the one before, so that no
contender always runs in the same slot), after a warm-up of each contender; ratios are to ``from_avro`` (target:
>= 0.5). The contenders must agree on the sums. The load average is printed too: the Arrow
UDF path keeps three threads busy per task (Spark's writer, the Python worker, Spark's reader)
where ``from_avro`` keeps one, so a machine busy with other work slows it more in wall time;
CPU time is the figure to trust there.

``--conf`` sets a Spark setting on the session, for every contender alike (``from_avro`` runs no
Python, so Python-UDF settings leave the baseline as it is). Spark 4.2 and later feed an Arrow UDF
whose input comes from a columnar scan (this Parquet file; not a Kafka source, whose rows are
rows) through ``spark.sql.execution.arrow.pythonUDF.columnarInput.enabled`` (default true), which
for a scan that is not Arrow-backed turns the scan's batches into rows, joins them to the UDF's
results and turns the joined rows back into column batches for the next operator to turn into
rows again; ``--conf spark.sql.execution.arrow.pythonUDF.columnarInput.enabled=false`` measures
the row path instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

import spark_plugin
from bench.harness import add_conf_option, conf_settings, local_session, served_catalog
from bench.spark_avro_jar import build as build_avro_jar
from registry.client import RegistryClient, schema_info
from registry.model import Compatibility, GroupProperties, SerializationFormat
from registry.serde.confluent import encode_prefix
from registry.serde.wire import encode_header

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Click",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "count", "type": "int"},
        {"name": "amount", "type": "double"},
        {"name": "ratio", "type": "float"},
        {"name": "user", "type": "string"},
        {"name": "flag", "type": "boolean"},
        {"name": "ref", "type": ["null", "string"], "default": None},
        {"name": "at", "type": "long"},
    ],
}
SUMS = ("sum(r.id)", "sum(r.count)", "sum(r.amount)", "sum(r.ratio)", "sum(length(r.user))",
        "sum(CAST(r.flag AS INT))", "sum(length(r.ref))", "sum(r.at - 1700000000000000)")


def record(i: int) -> dict[str, Any]:
    """Row ``i`` of the data."""
    return {"id": i, "count": i % 1000, "amount": i * 0.25, "ratio": float(i % 100), "user": f"user-{i % 10000}",
            "flag": i % 3 == 0, "ref": None if i % 2 else f"ref-{i % 77}", "at": 1700000000000000 + i}


def payloads(rows: int) -> list[bytes]:
    """The Avro payloads (no framing) of every row."""
    parsed = fastavro.parse_schema(SCHEMA)
    out = []
    for i in range(rows):
        buffer = BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record(i))
        out.append(buffer.getvalue())
    return out


def write_file(path: Path, bare: list[bytes], confluent: bytes, pravega: bytes, row_group: int) -> None:
    """The Parquet file every contender reads."""
    table = pa.table({
        "bare": pa.array(bare, pa.binary()),
        "confluent": pa.array([confluent + p for p in bare], pa.binary()),
        "pravega": pa.array([pravega + p for p in bare], pa.binary()),
    })
    pq.write_table(table, path, row_group_size=row_group)


def _cpu_of_tree(root: int) -> float:
    """CPU seconds used by process ``root`` and its descendants (reaped children included)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        total += times.get(pid, 0.0)
        pending.extend(child for child, parent in parents.items() if parent == pid)
    return total


def timed(run: Callable[[], list[Any]]) -> tuple[float, float, list[Any]]:
    """Wall seconds and CPU seconds (this process, the JVM, the Python workers) of one run, and its result."""
    cpu = _cpu_of_tree(os.getpid())
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, _cpu_of_tree(os.getpid()) - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    add_conf_option(parser)
    args = parser.parse_args()
    settings = conf_settings(parser, args)

    from pyspark.sql.avro.functions import from_avro

    from spark_plugin.functions import decode_registry, from_registry

    with served_catalog("streamcat-bench-functions-") as (uri, root):
        client = RegistryClient(uri, "bench")
        client.create_group("clicks", GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"),
                                                      False, {}))
        version = client.add_schema("clicks", schema_info("Avro", json.dumps(SCHEMA)))
        confluent = encode_prefix(version.id)
        pravega = encode_header(client.encoding_id("clicks", version))
        started = time.perf_counter()
        data = root / "payloads.parquet"
        write_file(data, payloads(args.rows), confluent, pravega, max(args.rows // (4 * args.cores), 1))
        print(f"{args.rows:,} payloads written in {time.perf_counter() - started:.1f} s")

        # Spark's from_avro, the baseline, comes in a jar of its own beside the catalog's.
        jars = {"spark.jars": f"{spark_plugin.spark_conf(uri)['spark.jars']},{build_avro_jar()}"}
        with local_session(uri, root, "streamcat-bench-functions", args.cores, "1g", {**jars, **settings},
                           {"spark.sql.shuffle.partitions": str(args.cores)}) as spark:
            schema_json = json.dumps(SCHEMA)

            def contender(decode: Callable[[Any], Any], column: str) -> Callable[[], list[Any]]:
                def run() -> list[Any]:
                    frame = spark.read.parquet(str(data)).select(decode(column).alias("r"))
                    return list(frame.selectExpr(*SUMS).collect()[0])

                return run

            def whole_rows() -> list[Any]:
                frame = spark.read.parquet(str(data)).select("confluent")
                decoded = decode_registry(frame, "confluent", uri, "clicks", namespace="bench")
                return list(decoded.withColumnRenamed("confluent", "r").selectExpr(*SUMS).collect()[0])

            def scan() -> list[Any]:
                return list(spark.read.parquet(str(data)).selectExpr("sum(length(bare))").collect()[0])

            contenders: dict[str, Callable[[], list[Any]]] = {
                "from_avro": contender(lambda c: from_avro(c, schema_json), "bare"),
                "from_registry (confluent)": contender(
                    lambda c: from_registry(c, uri, "clicks", namespace="bench"), "confluent"),
                "from_registry (pravega)": contender(
                    lambda c: from_registry(c, uri, "clicks", namespace="bench"), "pravega"),
                "decode_registry (confluent)": whole_rows,
                "scan": scan,
            }
            best: dict[str, float] = {}
            best_cpu: dict[str, float] = {}
            answers: dict[str, list[Any]] = {}
            for run in contenders.values():  # warm-up: JIT, Python workers, schema caches
                run()
            order = list(contenders)
            for round_number in range(args.rounds):
                # Each round starts one contender later: whatever a slot costs (the garbage the one
                # before it left, a JIT still settling) falls on every contender in turn, not on one.
                shift = round_number % len(order)
                for name in order[shift:] + order[:shift]:
                    seconds, cpu, answers[name] = timed(contenders[name])
                    best[name] = min(best.get(name, seconds), seconds)
                    best_cpu[name] = min(best_cpu.get(name, cpu), cpu)

    expected = answers["from_avro"]
    for name in contenders:
        if name != "scan" and answers[name] != expected:
            raise SystemExit(f"{name} disagrees with from_avro: {answers[name]} != {expected}")
    baseline = args.rows / best["from_avro"]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{args.rows:,} rows, local[{args.cores}], best of {args.rounds} rounds, load average {load}; "
          "ratio to from_avro (target: >= 0.5)" + "".join(f"\n  {k}={v}" for k, v in settings.items()))
    per_cpu = args.rows / best_cpu["from_avro"]
    print(f"  {'':<28} {'rows/s (wall)':>14}  ratio  {'rows per CPU-s':>14}  ratio")
    for name in contenders:
        rate, cpu_rate = args.rows / best[name], args.rows / best_cpu[name]
        print(f"  {name:<28} {rate:>14,.0f}  {rate / baseline:5.2f}  {cpu_rate:>14,.0f}  {cpu_rate / per_cpu:5.2f}")


if __name__ == "__main__":
    main()
