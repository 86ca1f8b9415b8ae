"""Avro events/s through Serializer / Deserializer beside raw fastavro on the same records.

Run: ``.venv/bin/python bench/serde.py [--records N] [--rounds R] [--codec NAME]``

A registry server runs in this process on a temporary SQLite database; encoding ids are
resolved before timing starts, so the timed loops only serialize and deserialize. Raw
and ours alternate round by round and each keeps its best round, measured in CPU time of
this process (the server thread is idle meanwhile), so that other load on the machine
disturbs the ratio as little as possible. Target, without a codec: at least 85% of raw
fastavro. With ``--codec`` the ratio shows what the codec costs per event.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from typing import Any

import fastavro
from werkzeug.serving import make_server

from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient, schema_info
from registry.model import Compatibility, GroupProperties, SerializationFormat
from registry.serde import Deserializer, Serializer

TARGET = 0.85

SCHEMA = {
    "type": "record",
    "name": "PageView",
    "namespace": "bench.serde",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "timestamp", "type": "long"},
        {"name": "user_id", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "ratio", "type": "double"},
        {"name": "url", "type": "string"},
        {"name": "country", "type": "string"},
        {"name": "is_mobile", "type": "boolean"},
        {"name": "referrer", "type": ["null", "string"], "default": None},
        {"name": "score", "type": ["null", "double"], "default": None},
    ],
}


def make_records(n: int) -> list[dict[str, Any]]:
    """``n`` varied records of SCHEMA: every third without a referrer, every other without a score."""
    return [
        {
            "id": i,
            "timestamp": 1_700_000_000_000_000 + i * 1_000,
            "user_id": (i * 7919) % 100_000,
            "price": i * 0.25,
            "ratio": (i % 100) / 100,
            "url": f"https://example.com/products/{i % 5000}",
            "country": ("FR", "DE", "US", "JP")[i % 4],
            "is_mobile": i % 2 == 0,
            "referrer": None if i % 3 else f"https://search.example/{i}",
            "score": None if i % 2 else i / 7,
        }
        for i in range(n)
    ]


@contextmanager
def registry_server() -> Iterator[str]:
    """The registry app on a fresh, migrated SQLite database, served on a free port."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="streamcat-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'registry.db'}"
        migrate.upgrade(url)
        app = create_app(Settings(database_url=url, warehouse=str(Path(tmp) / "warehouse")))
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()
            thread.join(timeout=10)


def best_times(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The best CPU time of each contender over ``rounds`` rounds, contenders alternating."""
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for name, run in contenders.items():
            start = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - start)
    return best


def main() -> None:
    """Run the benchmark and print events/s and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--codec", default="", help="codec type name (default: none)")
    args = parser.parse_args()

    records = make_records(args.records)
    parsed = fastavro.parse_schema(SCHEMA)
    write, read = fastavro.schemaless_writer, fastavro.schemaless_reader

    with registry_server() as url:
        client = RegistryClient(url, "bench")
        client.create_group(
            "pageviews", GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"))
        )
        serializer = Serializer(client, "pageviews", schema_info("Avro", json.dumps(SCHEMA)), args.codec)
        deserializer = Deserializer(client, "pageviews")
        events = serializer.serialize_many(records)
        assert list(deserializer.deserialize_many(events)) == records  # also resolves the encoding id

    payloads = []
    for record in records:
        out = BytesIO()
        write(out, parsed, record)
        payloads.append(out.getvalue())

    def raw_write() -> None:
        for record in records:
            out = BytesIO()
            write(out, parsed, record)
            out.getvalue()

    def raw_read() -> None:
        for payload in payloads:
            read(BytesIO(payload), parsed, None)

    serialize, deserialize = serializer.serialize, deserializer.deserialize

    def our_write() -> None:
        for record in records:
            serialize(record)

    def our_read() -> None:
        for event in events:
            deserialize(event)

    def our_write_batch() -> None:
        serializer.serialize_many(records)

    def our_read_batch() -> None:
        for _ in deserializer.deserialize_many(events):
            pass

    times = best_times(
        {
            "raw fastavro schemaless_writer": raw_write,
            "Serializer.serialize": our_write,
            "Serializer.serialize_many": our_write_batch,
            "raw fastavro schemaless_reader": raw_read,
            "Deserializer.deserialize": our_read,
            "Deserializer.deserialize_many": our_read_batch,
        },
        args.rounds,
    )
    rate = {name: len(records) / seconds for name, seconds in times.items()}
    codec = args.codec or "none"
    print(f"{len(records)} records of {len(SCHEMA['fields'])} fields, codec {codec}, best of {args.rounds} rounds")
    for side, raw in (("write", "raw fastavro schemaless_writer"), ("read", "raw fastavro schemaless_reader")):
        print(f"  {raw:32s} {rate[raw]:>10,.0f} events/s")
        for name in rate:
            if name.startswith("Serializer" if side == "write" else "Deserializer"):
                ratio = rate[name] / rate[raw]
                if args.codec:
                    verdict = "includes the codec; the target is for codec none"
                else:
                    verdict = "ok" if ratio >= TARGET else f"below the {TARGET:.0%} target"
                print(f"  {name:32s} {rate[name]:>10,.0f} events/s  {ratio:6.1%} of raw  ({verdict})")


if __name__ == "__main__":
    main()
