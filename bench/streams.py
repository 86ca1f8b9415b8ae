"""Stream client throughput: events/s through StreamWriter and StreamReader, beside raw fastavro.

    .venv/bin/python bench/streams.py [--events N] [--segments S] [--profile]

Runs the whole application on a temporary SQLite database and local warehouse, served in a
thread of this process, pinned to one core; rates are events per CPU second of the process.
A 10-field Avro record is written with routing keys through StreamWriter (Serializer,
buffering, chunk files, one commit per flush), then read back through StreamReader (chunk
files, Deserializer under the latest schema). The baseline, measured in the same run on the
same records, is what no stream client can beat: fastavro's schemaless writer and reader on
in-memory buffers, plus writing and reading the same bytes as one file. Target: write plus read
through the stream client at >= 0.90 of that baseline (printed as a ratio, with its verdict).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from catalog_api.streams import StreamReader, StreamWriter
from registry.client import RegistryClient, schema_info
from registry.model import Compatibility, GroupProperties, SerializationFormat
from tests.support.net import serve_in_thread

TARGET = 300_000  # events/s, write plus read, one core
#: Write plus read through the stream client, as a fraction of raw fastavro's (the baseline).
RATIO_TARGET = 0.90

SCHEMA: dict[str, Any] = {
    "type": "record", "name": "Click", "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"}, {"name": "user", "type": "string"}, {"name": "amount", "type": "double"},
        {"name": "count", "type": "int"}, {"name": "flag", "type": "boolean"}, {"name": "ts", "type": "long"},
        {"name": "country", "type": "string"}, {"name": "score", "type": "float"},
        {"name": "kind", "type": "string"}, {"name": "seq", "type": "long"},
    ],
}


def records(n: int) -> list[dict[str, Any]]:
    """``n`` records of the benchmark schema."""
    return [{"id": i, "user": f"user-{i % 1000}", "amount": i * 0.25, "count": i % 100, "flag": i % 2 == 0,
             "ts": 1_700_000_000_000 + i, "country": ("NL", "DE", "FR")[i % 3], "score": 1.5, "kind": "click",
             "seq": i} for i in range(n)]


def timed(what: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds ``what`` took (this process, every thread: the server's share included), and its result.

    CPU time, not wall time: on a shared machine a busy neighbour stretches wall time, but
    events per CPU second is what "events/s on one core" means.
    """
    start = time.process_time()
    result = what()
    return time.process_time() - start, result


def baseline(rows: list[dict[str, Any]], workdir: Path) -> dict[str, float]:
    """Seconds for raw fastavro write and read in memory, and for a file of the same bytes."""
    parsed = fastavro.parse_schema(SCHEMA)

    def write() -> list[bytes]:
        out = []
        for row in rows:
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, parsed, row)
            out.append(buffer.getvalue())
        return out

    def read(events: list[bytes]) -> int:
        n = 0
        for event in events:
            fastavro.schemaless_reader(io.BytesIO(event), parsed, None)
            n += 1
        return n

    write_s, events = timed(write)
    read_s, _ = timed(lambda: read(events))
    path = workdir / "baseline.bin"
    file_write_s, _ = timed(lambda: path.write_bytes(b"".join(events)))
    file_read_s, _ = timed(path.read_bytes)
    return {"write": write_s + file_write_s, "read": read_s + file_read_s, "avro_write": write_s,
            "avro_read": read_s, "file_write": file_write_s, "file_read": file_read_s}


def through_streams(url: str, rows: list[dict[str, Any]], segments: int,
                    profile: cProfile.Profile | None) -> dict[str, float]:
    """Seconds to write ``rows`` through StreamWriter and to read them back through StreamReader."""
    catalog = CatalogClient(url)
    scope, stream = f"bench{uuid.uuid4().hex[:6]}", "clicks"
    catalog.create_scope(scope)
    catalog.create_stream(scope, stream, segments=segments)
    registry = RegistryClient(url, scope)
    registry.create_group(stream, GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"), False,
                                                  {}))
    schema = schema_info("Avro", json.dumps(SCHEMA))
    writer = StreamWriter(catalog, registry, scope, stream, schema=schema, max_chunk_events=1_000_000)
    writer.serializer.serialize(rows[0])  # type: ignore[union-attr]  # registration is not throughput
    keys = [r["user"] for r in rows]

    def write() -> None:
        for row, key in zip(rows, keys, strict=True):
            writer.write(row, routing_key=key)
        writer.flush()

    reader = StreamReader(catalog, registry, scope, stream)

    def read() -> int:
        n = 0
        for _ in reader.read():
            n += 1
        return n

    if profile:
        profile.enable()
    write_s, _ = timed(write)
    read_s, count = timed(read)
    batches_s, _ = timed(lambda: sum(b.num_rows for b in reader.read_batches()))
    if profile:
        profile.disable()
    assert count == len(rows), f"read {count} of {len(rows)} events"

    # The bulk path: the same records as Arrow columns, one columnar chunk per segment's share.
    catalog.create_stream(scope, "bulk", segments=segments)
    registry.create_group("bulk", GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"), False,
                                                  {}))
    bulk = StreamWriter(catalog, registry, scope, "bulk", schema=schema)
    bulk.serializer.serialize(rows[0])  # type: ignore[union-attr]

    def write_columnar() -> None:
        table = pa.Table.from_pylist(rows)
        share = -(-len(rows) // segments)
        for segment in range(segments):
            bulk.write_table(table.slice(segment * share, share), segment=segment)
        bulk.flush()

    bulk_reader = StreamReader(catalog, registry, scope, "bulk")
    columnar_write_s, _ = timed(write_columnar)
    columnar_read_s, columnar_count = timed(lambda: sum(b.num_rows for b in bulk_reader.read_batches()))
    assert columnar_count == len(rows)
    return {"write": write_s, "read": read_s, "read_batches": batches_s, "columnar_write": columnar_write_s,
            "columnar_read": columnar_read_s}


def main() -> None:
    """Run the benchmark and print events/s beside the baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each is kept")
    parser.add_argument("--profile", action="store_true", help="print the top functions of the stream run")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    rows = records(args.events)
    profile = cProfile.Profile() if args.profile else None
    base: dict[str, float] = {}
    ours: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="streamcat-bench-") as tmp:
        root = Path(tmp)
        database = f"sqlite:///{root / 'catalog.db'}"
        migrate.upgrade(database)
        with serve_in_thread(create_app(Settings(database_url=database, warehouse=str(root / "warehouse")))) as url:
            # Rounds alternate baseline and streams and keep each one's best, so that a burst of
            # load from elsewhere on the machine does not decide the ratio.
            for _ in range(args.rounds):
                for key, value in baseline(rows, root).items():
                    base[key] = min(value, base.get(key, value))
                for key, value in through_streams(url, rows, args.segments, profile).items():
                    ours[key] = min(value, ours.get(key, value))

    n = args.events
    rate = {k: n / v for k, v in ours.items()}
    base_rate = {k: n / v for k, v in base.items()}
    both, base_both = n / (ours["write"] + ours["read"]), n / (base["write"] + base["read"])
    print(f"{n:,} events of a 10-field Avro record, {args.segments} segments, one core, "
          f"best of {args.rounds} rounds (events per CPU second)")
    print(f"{'':24}{'streams':>14}{'baseline':>14}{'ratio':>8}")
    for label, mine, theirs in (("write", rate["write"], base_rate["write"]),
                                ("read", rate["read"], base_rate["read"]),
                                ("write+read", both, base_both)):
        print(f"{label + ' events/s':24}{mine:>14,.0f}{theirs:>14,.0f}{mine / theirs:>8.2f}")
    print(f"{'read_batches events/s':24}{rate['read_batches']:>14,.0f}")
    columnar = n / (ours["columnar_write"] + ours["columnar_read"])
    print(f"bulk path (from_pylist + write_table, read_batches): write {rate['columnar_write']:,.0f}/s, "
          f"read {rate['columnar_read']:,.0f}/s, write+read {columnar:,.0f}/s")
    print(f"baseline parts: fastavro write {base_rate['avro_write']:,.0f}/s, read {base_rate['avro_read']:,.0f}/s; "
          f"file write {base_rate['file_write']:,.0f}/s, read {base_rate['file_read']:,.0f}/s")
    ratio = both / base_both
    verdict = "meets" if ratio >= RATIO_TARGET else "below"
    print(f"target >= {RATIO_TARGET:.2f} of raw fastavro, events write plus read: {ratio:.2f} {verdict}")
    for label, value in (("events (write, read)", both), ("bulk (write_table, read_batches)", columnar)):
        verdict = "meets" if value >= TARGET else "below"
        print(f"target >= {TARGET:,} events/s write plus read on one core, {label}: {value:,.0f} {verdict}")
    print(f"(per-event Avro in Python is bounded by the baseline: {base_both:,.0f} events/s)")
    if profile:
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
