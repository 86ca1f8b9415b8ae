"""Registry lookups on PostgreSQL at 100,000 groups and 1,000,000 versions, beside an empty registry.

Run::

    .venv/bin/python bench/registry_scale.py                                # full size, a few minutes
    .venv/bin/python bench/registry_scale.py --groups 2000 --versions 20000  # a quick check

It starts a PostgreSQL server of its own (``tests/support/postgres.py``), makes two databases
migrated to head and bulk-loads them with COPY (no HTTP, no per-row ORM): the *large* registry
holds ``--groups`` groups and ``--versions`` versions (each group a chain of small Avro records,
each version adding a nullable field; one encoding id per version; rows interleaved across
groups as if added over time), the *empty* one only ``--probe-groups`` groups of the same shape.
Both hold two chain groups of ``--chain`` versions (one under Backward, one under
BackwardTransitive). Both registries are served at once by ``streamcat serve`` (gunicorn, as in
production) on 127.0.0.1, and every lookup is driven against one and then the other in
interleaved rounds from ``--concurrency`` keep-alive connections. Each request of a round names
a key (group, id) not named before in that round, drawn from all the registry's groups, so the
servers' short-lived answer caches rarely answer for the database. It prints p50 and p99 of:

- GET schema by id, GET latest (``/schemas``), GET encoding info, PUT encodings (an existing
  encoding: the writer's start-up call), a keyset page of ``GET /v1/groups``, and GET latest of
  a chain group (``--chain`` versions);

with the ratio of the large registry's p99 to the empty one's (target <= 1.5: flat). Then it
times adding the next schema to each chain group (first add, on cold caches, and the median of
the following ``--adds`` - 1) under Backward and BackwardTransitive.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, bench/ comes first on sys.path, where a sibling could shadow a module: use the root.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import base64  # noqa: E402
import hashlib  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from functools import cache  # noqa: E402
from typing import Any  # noqa: E402

from sqlalchemy import Engine, text  # noqa: E402

from bench.registry_http import child_env, child_server, free_port  # noqa: E402
from catalog_api.server import migrate  # noqa: E402
from registry.api.models import Compatibility as CompatibilityDocument  # noqa: E402
from registry.db import make_engine  # noqa: E402
from registry.formats.avro import AvroFormat  # noqa: E402
from registry.model import Compatibility  # noqa: E402
from tests.support.postgres import PostgresServer, start_postgres  # noqa: E402

FLAT_TARGET = 1.5
NAMESPACE = "bench.scale"
CHAIN_TYPE = "bench.chain.Event"
CHAIN_GROUPS = {"chain-backward": "Backward", "chain-transitive": "BackwardTransitive"}
_PLACEHOLDER = "RPLACEHOLDER"


# -- generated content ---------------------------------------------------------------------------------


def record(name: str, namespace: str, extra_fields: int) -> bytes:
    """An Avro record: a long ``id`` and ``extra_fields`` nullable strings with a default (a chain's link)."""
    fields: list[dict[str, Any]] = [{"name": "id", "type": "long"}]
    fields += [{"name": f"f{k:04d}", "type": ["null", "string"], "default": None} for k in range(extra_fields)]
    return json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": fields}).encode()


@dataclass(frozen=True)
class Template:
    """One link of the group chains, with the record's name left to fill in: data and canonical form."""

    data: bytes
    canonical: bytes

    @classmethod
    def of(cls, extra_fields: int) -> Template:
        parsed = AvroFormat().parse(record(_PLACEHOLDER, NAMESPACE, extra_fields), "")
        return cls(parsed.data, parsed.canonical)

    def fill(self, name: str) -> tuple[bytes, str]:
        """(schema data, fingerprint) of the link for record ``name``; the same as the registry computes."""
        quoted_from, quoted_to = f'"{_PLACEHOLDER}"'.encode(), f'"{name}"'.encode()
        data = self.data.replace(quoted_from, quoted_to)
        canonical = self.canonical.replace(quoted_from, quoted_to)
        return data, hashlib.sha256(canonical).hexdigest()


@dataclass
class Keys:
    """What the lookups may name in one registry."""

    groups: int  # group ids 1..groups are named g0000001...
    #: (group name, type, version, schema id, encoding id) of every ordinary version
    versions: list[tuple[str, str, int, int, int]] = field(default_factory=list)


def group_name(group_id: int) -> str:
    """The name of the ordinary group with id ``group_id``."""
    return f"g{group_id:07d}"


def policy_json(policy: str) -> str:
    """A simple policy as the registry stores it (Pravega's Compatibility JSON)."""
    return CompatibilityDocument.of(Compatibility.of(policy)).model_dump_json()


@cache
def chain_links(chain: int) -> list[tuple[bytes, str]]:
    """(data, fingerprint) of each version of a chain group (parsed once: the long ones take a while)."""
    links = []
    for k in range(chain):
        parsed = AvroFormat().parse(record("Event", "bench.chain", k + 1), "")
        links.append((parsed.data, parsed.fingerprint))
    return links


def _copy(engine: Engine, table: str, columns: str, rows: Iterator[Sequence[Any]]) -> int:
    raw = engine.raw_connection()
    try:
        connection: Any = raw.driver_connection
        count = 0
        with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
        connection.commit()
        return count
    finally:
        raw.close()


def bulk_load(url: str, groups: int, versions: int, chain: int) -> Keys:
    """Fill a migrated database with ``groups`` groups holding ``versions`` versions, plus the chain groups."""
    engine = make_engine(url)
    now = int(time.time() * 1000)
    per_group, extra = divmod(versions, groups)
    longest = per_group + (1 if extra else 0)
    templates = [Template.of(k) for k in range(longest)]
    for probe in (1, groups):  # the generated content is what the registry itself would store
        name = f"R{probe}"
        data, fingerprint = templates[-1].fill(name)
        assert AvroFormat().parse(data, "").fingerprint == fingerprint, "generated fingerprints are wrong"
    backward = policy_json("Backward")
    keys = Keys(groups)

    def count_of(group_id: int) -> int:
        return per_group + (1 if group_id <= extra else 0)

    group_rows: list[Sequence[Any]] = [
        (g, "", group_name(g), "Avro", "", False, backward, "{}", now) for g in range(1, groups + 1)
    ]
    for offset, (name, policy) in enumerate(CHAIN_GROUPS.items(), start=groups + 1):
        group_rows.append((offset, "", name, "Avro", "", False, policy_json(policy), "{}", now))
    _copy(
        engine,
        "groups",
        "id, namespace, name, serialization_format, full_type_name, allow_multiple_types, "
        "compatibility, properties, created_at",
        iter(group_rows),
    )

    # Ids of the three tables differ on purpose (offsets), so a query joining the wrong columns
    # cannot answer right by accident. Rows go in version order across groups, as if each group
    # had grown over time: a group's rows are spread over the table, as in a long-lived registry.
    schema_rows: list[Sequence[Any]] = []
    version_rows: list[Sequence[Any]] = []
    encoding_rows: list[Sequence[Any]] = []
    version_id = 0
    for k in range(longest):
        for g in range(1, groups + 1):
            if k >= count_of(g):
                continue
            version_id += 1
            schema_id, encoding_id = version_id + 1_000_000_000 // 4, version_id + 1_000_000_000 // 2
            data, fingerprint = templates[k].fill(f"R{g}")
            type_name = f"{NAMESPACE}.R{g}"
            schema_rows.append((schema_id, "Avro", "", type_name, fingerprint, data, now))
            version_rows.append((version_id, g, schema_id, type_name, k, "{}", backward, now, False))
            encoding_rows.append((encoding_id, g, version_id, ""))
            keys.versions.append((group_name(g), type_name, k, schema_id, encoding_id))
    chain_schema_base = schema_rows[-1][0] + 1 if schema_rows else 1
    for k, (data, fingerprint) in enumerate(chain_links(chain)):
        schema_rows.append((chain_schema_base + k, "Avro", "", CHAIN_TYPE, fingerprint, data, now))
    for offset, (_, policy) in enumerate(CHAIN_GROUPS.items(), start=groups + 1):
        compatibility = policy_json(policy)
        for k in range(chain):
            version_id += 1
            version_rows.append(
                (version_id, offset, chain_schema_base + k, CHAIN_TYPE, k, "{}", compatibility, now, False)
            )
    _copy(
        engine,
        "schemas",
        "id, serialization_format, full_type_name, type_name, fingerprint, data, created_at",
        iter(schema_rows),
    )
    _copy(
        engine,
        "schema_versions",
        "id, group_id, schema_id, type_name, version, properties, compatibility, created_at, deleted",
        iter(version_rows),
    )
    _copy(engine, "encodings", "id, group_id, version_id, codec", iter(encoding_rows))
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        for table in ("groups", "schemas", "schema_versions", "encodings"):
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"))
        # What autovacuum does to a table that has lived a while: statistics and a visibility map.
        conn.execute(text("VACUUM ANALYZE"))
    engine.dispose()
    return keys


# -- load ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One HTTP request."""

    method: str
    path: str
    body: bytes | None = None


def _drive_thread(port: int, calls: Sequence[Call], latencies: list[float], failures: list[str]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json"}
    for call in calls:
        for attempt in range(2):
            start = time.perf_counter()
            try:
                connection.request(call.method, call.path, body=call.body, headers=headers)
                response = connection.getresponse()
                body = response.read()
            except (http.client.HTTPException, OSError):
                # The server closed an idle keep-alive connection: reconnect and send again, untimed.
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                if attempt:
                    raise
                continue
            latencies.append(time.perf_counter() - start)
            if response.status not in (200, 201):
                failures.append(f"{call.method} {call.path}: {response.status} {body[:200]!r}")
            break
    connection.close()


def drive(port: int, calls: Sequence[Call], threads: int) -> list[float]:
    """Send ``calls`` from ``threads`` keep-alive connections (each its share, in order); their latencies."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    failures: list[str] = []
    workers = [
        threading.Thread(target=_drive_thread, args=(port, calls[i::threads], latencies[i], failures), daemon=True)
        for i in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        raise RuntimeError(f"{len(failures)} of {len(calls)} requests failed, e.g. {failures[0]}")
    return [x for part in latencies for x in part]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` in milliseconds."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


#: Lookups, by label: how to make the request for one sampled version of a registry.
def _schema_by_id(v: tuple[str, str, int, int, int], _keys: Keys, _rng: random.Random) -> Call:
    return Call("GET", f"/v1/groups/{v[0]}/schemas/schema/{v[3]}")


def _latest(v: tuple[str, str, int, int, int], _keys: Keys, _rng: random.Random) -> Call:
    return Call("GET", f"/v1/groups/{v[0]}/schemas")


def _encoding_info(v: tuple[str, str, int, int, int], _keys: Keys, _rng: random.Random) -> Call:
    return Call("GET", f"/v1/groups/{v[0]}/encodings/{v[4]}")


def _encoding_id(v: tuple[str, str, int, int, int], _keys: Keys, _rng: random.Random) -> Call:
    body = {"versionInfo": {"type": v[1], "version": v[2], "id": v[3]}, "codecType": ""}
    return Call("PUT", f"/v1/groups/{v[0]}/encodings", json.dumps(body).encode())


def _page(_v: tuple[str, str, int, int, int], keys: Keys, rng: random.Random) -> Call:
    return Call("GET", f"/v1/groups?limit=100&continuationToken={rng.randrange(max(1, keys.groups - 100))}")


def _chain_latest(_v: tuple[str, str, int, int, int], _keys: Keys, rng: random.Random) -> Call:
    return Call("GET", f"/v1/groups/{rng.choice(list(CHAIN_GROUPS))}/schemas")


LOOKUPS = {
    "GET schema by id": _schema_by_id,
    "GET latest": _latest,
    "GET encoding info": _encoding_info,
    "PUT encodings (existing)": _encoding_id,
    "GET /v1/groups page of 100": _page,
    "GET latest, chain group": _chain_latest,
}
#: Its answers are long (a chain's newest schema): it is timed on fewer requests.
CHAIN_LOOKUP = "GET latest, chain group"


@dataclass
class Server:
    """One served registry and what its lookups may name."""

    label: str
    port: int
    keys: Keys


def measure_lookup(
    label: str, servers: list[Server], args: argparse.Namespace, rng: random.Random
) -> dict[str, list[float]]:
    """Latencies of one lookup on every server, in interleaved rounds (the order of servers alternating)."""
    make = LOOKUPS[label]
    found: dict[str, list[float]] = {s.label: [] for s in servers}
    for round_number in range(args.rounds):
        for server in servers if round_number % 2 == 0 else reversed(servers):
            count = args.chain_requests if label == CHAIN_LOOKUP else args.requests
            sample = rng.sample(server.keys.versions, min(count, len(server.keys.versions)))
            found[server.label] += drive(server.port, [make(v, server.keys, rng) for v in sample], args.concurrency)
    return found


def warm_up(servers: list[Server], args: argparse.Namespace, rng: random.Random) -> None:
    """Connections, imports, the database's catalog caches: a few of every lookup on every server."""
    for server in servers:
        sample = rng.sample(server.keys.versions, 5)
        drive(server.port, [make(v, server.keys, rng) for make in LOOKUPS.values() for v in sample], args.concurrency)


def time_adds(port: int, chain: int, adds: int) -> dict[str, list[float]]:
    """Seconds of each of ``adds`` adds of the next chain link to each chain group."""
    result: dict[str, list[float]] = {}
    for name, policy in CHAIN_GROUPS.items():
        times = []
        for n in range(adds):
            data = record("Event", "bench.chain", chain + n + 1)
            body = {
                "type": CHAIN_TYPE,
                "serializationFormat": {"serializationFormat": "Avro"},
                "schemaData": base64.b64encode(data).decode(),
                "properties": {},
            }
            call = Call("POST", f"/v1/groups/{name}/schemas", json.dumps(body).encode())
            start = time.perf_counter()
            drive(port, [call], 1)
            times.append(time.perf_counter() - start)
        result[policy] = times
    return result


# -- main ----------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--groups", type=int, default=100_000, help="groups of the large registry")
    parser.add_argument("--versions", type=int, default=1_000_000, help="versions of the large registry")
    parser.add_argument(
        "--probe-groups",
        type=int,
        help="groups of the empty registry, of the same shape as the large one's (default: a tenth of "
        "--groups, at most 1,000)",
    )
    parser.add_argument("--chain", type=int, default=1000, help="versions of each chain group")
    parser.add_argument("--requests", type=int, default=400, help="requests per lookup, registry and round")
    parser.add_argument(
        "--chain-requests", type=int, default=40, help="requests per round of GET latest of a chain group"
    )
    # Many short rounds: on a machine shared with other work, bursts of load then hit both alike.
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    parser.add_argument("--concurrency", type=int, default=2, help="client connections")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers of each server")
    parser.add_argument("--adds", type=int, default=4, help="adds timed per chain group")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Build both registries, serve them, measure, print."""
    args = parse_args(argv)
    if args.probe_groups is None:
        args.probe_groups = min(1000, max(1, args.groups // 10))
    if args.versions < args.groups or args.probe_groups > args.groups:
        raise SystemExit("--versions must be at least --groups, and --probe-groups at most --groups")
    per_group = args.versions / args.groups
    with ExitStack() as stack:
        postgres: PostgresServer = start_postgres()
        stack.callback(postgres.stop)
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamcat-scale-")))
        shapes = {
            "empty": (args.probe_groups, round(args.probe_groups * per_group)),
            "large": (args.groups, args.versions),
        }
        servers = []
        for label, (groups, versions) in shapes.items():
            url = postgres.create_database(f"scale_{label}")
            migrate.upgrade(url)
            start = time.perf_counter()
            keys = bulk_load(url, groups, versions, args.chain)
            print(
                f"{label} registry: {groups:,} groups, {versions:,} versions (+{len(CHAIN_GROUPS)} groups of "
                f"{args.chain:,}) loaded in {time.perf_counter() - start:.1f} s",
                flush=True,
            )
            port = free_port()
            env = {
                **child_env(),
                "STREAMCAT_DATABASE_URL": url,
                "STREAMCAT_WAREHOUSE": str(tmp / label),
                "STREAMCAT_HOST": "127.0.0.1",
                "STREAMCAT_PORT": str(port),
                "STREAMCAT_WORKERS": str(args.workers),
            }
            command = [sys.executable, "-m", "catalog_api.server.cli", "serve"]
            log = tmp / f"{label}.log"
            try:
                stack.enter_context(child_server(command, env, f"http://127.0.0.1:{port}/ping", log))
            except RuntimeError:
                print(log.read_text()[-3000:], file=sys.stderr)
                raise
            servers.append(Server(label, port, keys))

        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, PostgreSQL on 127.0.0.1; each registry: "
            f"gunicorn, {args.workers} workers; {args.concurrency} connections, {args.rounds} x {args.requests} "
            "requests per lookup and registry",
            flush=True,
        )
        rng = random.Random(7)
        warm_up(servers, args, rng)
        empty, large = servers[0].label, servers[1].label
        print(
            f"\n== lookups, ms: empty = {args.probe_groups:,} groups, large = {args.groups:,} groups / "
            f"{args.versions:,} versions; target: large p99 <= {FLAT_TARGET} x empty p99 =="
        )
        print(f"{'lookup':<30}{'empty p50':>10}{'p99':>8}{'large p50':>11}{'p99':>8}{'p99 ratio':>11}", flush=True)
        for label in LOOKUPS:
            by_server = measure_lookup(label, servers, args, rng)
            e, g = by_server[empty], by_server[large]
            ratio = percentile(g, 99) / percentile(e, 99)
            verdict = "flat" if ratio <= FLAT_TARGET else "NOT FLAT"
            print(
                f"{label:<30}{percentile(e, 50):>10.2f}{percentile(e, 99):>8.2f}{percentile(g, 50):>11.2f}"
                f"{percentile(g, 99):>8.2f}{ratio:>7.2f} {verdict}",
                flush=True,
            )

        adds = time_adds(servers[1].port, args.chain, args.adds)
        print(f"\n== add the next schema to a group of {args.chain:,} versions (large registry), seconds ==")
        for policy, times in adds.items():
            rest = f", then median {statistics.median(times[1:]):.3f} of {len(times) - 1}" if len(times) > 1 else ""
            print(f"{policy:<20} first (cold caches) {times[0]:.3f}{rest}")


if __name__ == "__main__":
    main()
