"""Registry throughput and latency under its production server, beside a bare Flask endpoint.

Run: ``.venv/bin/python bench/registry_http.py [--duration S] [--concurrency N] [--versions V]``

Part 1 starts ``streamcat serve`` (gunicorn, on a fresh, migrated SQLite database in a
temporary directory) and, with the very same gunicorn configuration (``catalog_api.server.wsgi``'s
GunicornServer: worker count, gthread worker class, threads, keep-alive), a bare Flask app
whose one endpoint returns the same JSON document as the registry's encoding-info answer.
Client threads with keep-alive connections then GET, for ``--duration`` seconds each (after
a warm-up, so the registry's caches are warm): encoding info, schema by id, and the bare
endpoint. Target: each cached registry GET at >= 90% of the bare endpoint (requests/s, and
server CPU per request). The registry runs in its default configuration (STREAMCAT_AUTH=none,
metrics on, access log off): after the first answer, these GETs are answered by the immutable
answers layer (catalog_api/server/answers.py), which still authenticates and checks every
caller, and counts every request.

Part 2 builds a group of ``--versions`` Avro versions over HTTP, each adding one nullable
field with a default (so every version can read all earlier ones), and times ``validate``
and ``add`` of one more schema under BackwardTransitive. Target: add < 1 s at 1,000 versions.
By default the chain is built under AllowAny and the policy switched afterwards, because the
chain is BackwardTransitive-compatible by construction and building it under the checking
policy costs what part 2 measures, a thousand times over; ``--setup-policy
BackwardTransitive`` builds it under the real policy. ``--profile`` runs one validate under
cProfile in this process, on the benchmark's database, and prints where the time goes.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory (bench/) comes first on sys.path, where a sibling script
# could shadow a module of the same name: put the repository root there instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import cProfile  # noqa: E402
import http.client  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import requests  # noqa: E402
from flask import Flask  # noqa: E402

from catalog_api.server import migrate  # noqa: E402
from catalog_api.server.config import Settings  # noqa: E402
from catalog_api.server.wsgi import GunicornServer  # noqa: E402
from registry.client import RegistryClient, schema_info  # noqa: E402
from registry.db import make_engine  # noqa: E402
from registry.ids import GroupName, Namespace  # noqa: E402
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat  # noqa: E402
from registry.service import RegistryService  # noqa: E402
from registry.store.sql import SqlRegistryStore  # noqa: E402

GET_TARGET = 0.90
ADD_TARGET_SECONDS = 1.0
BIG_GROUP = "big"


# -- servers ----------------------------------------------------------------------------------------


def bare_app(payload: Any) -> Flask:
    """A Flask app with one JSON endpoint, ``GET /bare``, answering ``payload``."""
    app = Flask("bare")
    app.json.sort_keys = False  # type: ignore[attr-defined]  # as the registry's app does

    @app.get("/bare")
    def bare() -> Any:
        return payload

    return app


class BareServer(GunicornServer):
    """The registry's gunicorn configuration, serving the bare app instead of the registry."""

    def __init__(self, settings: Settings, payload: Any) -> None:
        self.payload = payload
        super().__init__(settings)

    def load(self) -> Flask:
        return bare_app(self.payload)


def child_env() -> dict[str, str]:
    """This environment, with the repository importable from wherever the benchmark was started."""
    paths = [str(_HERE.parent), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_cpu_seconds(root: int) -> float:
    """CPU time (user + system) used so far by process ``root`` and all its descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process is gone
        fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "; comm may hold spaces
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier += children
    return sum(times.get(pid, 0.0) for pid in tree)


@contextmanager
def child_server(command: list[str], env: dict[str, str], probe: str, log: Path) -> Iterator[int]:
    """Run a server process until the block ends; wait until ``probe`` answers 200. Yields its pid."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"{command} exited with {process.returncode}; see {log}")
                try:
                    if requests.get(probe, timeout=5).ok:
                        break
                except (requests.ConnectionError, requests.Timeout):
                    pass  # not listening yet, or a busy machine: ask again
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{probe} did not answer in 60 s; see {log}")
                time.sleep(0.1)
            yield process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


# -- load generator -----------------------------------------------------------------------------------


@dataclass
class Load:
    """Requests made against one path: how many, over how long, their latencies, failures."""

    label: str
    count: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    server_cpu: float = 0.0  # CPU seconds the server's processes spent meanwhile

    @property
    def cpu_per_request(self) -> float:
        """Server CPU microseconds per request: what the server can do per core, whatever else runs."""
        return 1e6 * self.server_cpu / self.count if self.count else float("nan")

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.count / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        """Latency at percentile ``p`` (0-100), in milliseconds."""
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


class _Budget:
    """A shared, thread-safe count of requests still allowed."""

    def __init__(self, total: int) -> None:
        self._left = total
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


def _hammer_thread(port: int, path: str, deadline: float, budget: _Budget, out: Load, lock: threading.Lock) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    latencies: list[float] = []
    errors = 0
    while time.perf_counter() < deadline and budget.take():
        start = time.perf_counter()
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
        except (http.client.HTTPException, OSError):
            # The server closed an idle keep-alive connection: reconnect, count nothing.
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        latencies.append(time.perf_counter() - start)
        if response.status != 200 or not body:
            errors += 1
    connection.close()
    with lock:
        out.latencies += latencies
        out.count += len(latencies)
        out.errors += errors


def hammer(port: int, path: str, threads: int, seconds: float, max_requests: int) -> Load:
    """GET ``path`` from ``threads`` keep-alive connections for ``seconds`` or ``max_requests``."""
    out = Load(path)
    lock = threading.Lock()
    budget = _Budget(max_requests)
    start = time.perf_counter()
    deadline = start + seconds
    workers = [
        threading.Thread(target=_hammer_thread, args=(port, path, deadline, budget, out, lock), daemon=True)
        for _ in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out.seconds = time.perf_counter() - start
    return out


def _hammer_star(args: tuple[int, str, int, float, int]) -> Load:
    return hammer(*args)


def load(label: str, server: int, port: int, path: str, args: argparse.Namespace) -> Load:
    """Warm up, then measure ``path`` with ``args.concurrency`` connections over ``args.client_processes``."""
    hammer(port, path, args.concurrency, min(1.0, args.duration / 5), args.max_requests)
    cpu_before = tree_cpu_seconds(server)
    processes = max(1, min(args.client_processes, args.concurrency))
    per_process = [(port, path, args.concurrency // processes + (i < args.concurrency % processes), args.duration,
                    args.max_requests // processes) for i in range(processes)]
    if processes == 1:
        parts = [hammer(*per_process[0])]
    else:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            parts = pool.map(_hammer_star, per_process)
    total = Load(label, server_cpu=tree_cpu_seconds(server) - cpu_before)
    for part in parts:
        total.count += part.count
        total.errors += part.errors
        total.latencies += part.latencies
        total.seconds = max(total.seconds, part.seconds)
    if total.errors:
        raise RuntimeError(f"{label}: {total.errors} of {total.count} requests failed")
    return total


# -- part 1: cached GETs ---------------------------------------------------------------------------------


SEED_SCHEMA = {
    "type": "record",
    "name": "PageView",
    "namespace": "bench.registry",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "url", "type": "string"},
        {"name": "country", "type": "string"},
        {"name": "referrer", "type": ["null", "string"], "default": None},
    ],
}


def part_gets(args: argparse.Namespace, registry_url: str, registry_pid: int, tmp: Path) -> list[Load]:
    """Measure the cached GETs and the bare endpoint; return them, bare first."""
    client = RegistryClient(registry_url)
    client.create_group("bench", GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward")))
    version = client.add_schema("bench", schema_info("Avro", json.dumps(SEED_SCHEMA)))
    encoding = client.encoding_id("bench", version)
    encoding_path = f"/v1/groups/bench/encodings/{encoding}"
    schema_path = f"/v1/groups/bench/schemas/schema/{version.id}"
    payload = requests.get(registry_url + encoding_path, timeout=10).json()

    bare_port = free_port()
    payload_file = tmp / "payload.json"
    payload_file.write_text(json.dumps(payload))
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-bare", str(bare_port),
               "--workers", str(args.workers), "--payload", str(payload_file)]
    registry_port = int(registry_url.rsplit(":", 1)[1])
    with child_server(command, child_env(), f"http://127.0.0.1:{bare_port}/bare", tmp / "bare.log") as bare_pid:
        results: dict[str, Load] = {}
        # Interleaved rounds, so that drift in the machine's load hits every endpoint alike.
        for _ in range(args.rounds):
            for label, pid, port, path in (("bare Flask endpoint", bare_pid, bare_port, "/bare"),
                                           ("GET encoding info", registry_pid, registry_port, encoding_path),
                                           ("GET schema by id", registry_pid, registry_port, schema_path)):
                measured = load(label, pid, port, path, args)
                total = results.setdefault(label, Load(label))
                total.count += measured.count
                total.seconds += measured.seconds
                total.latencies += measured.latencies
                total.server_cpu += measured.server_cpu
    return list(results.values())


def _verdict(ratio: float) -> str:
    return "met" if ratio >= GET_TARGET else "MISSED"


def print_gets(loads: list[Load], args: argparse.Namespace) -> None:
    """The table of part 1.

    Two ratios to the bare endpoint: of requests/s as measured, and of server CPU per request
    (bare / registry). The second is what the server could serve per core; it holds when other
    processes compete for the CPUs, which skews the first.
    """
    bare = loads[0]
    print(f"\n== cached GETs: {args.concurrency} keep-alive connections, {args.duration:g} s x {args.rounds} "
          f"round(s) each, {args.workers} gunicorn worker(s) x gthread; target >= {GET_TARGET:.0%} of bare ==")
    print(f"{'endpoint':<22}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'cpu us/req':>11}"
          f"{'req/s vs bare':>15}{'cpu vs bare':>13}")
    for item in loads:
        rps_ratio = item.rps / bare.rps if bare.rps else float("nan")
        cpu_ratio = bare.cpu_per_request / item.cpu_per_request if item.server_cpu else float("nan")
        ratios = "" if item is bare else (f"{rps_ratio:>9.2f} {_verdict(rps_ratio):<6}"
                                          f"{cpu_ratio:>7.2f} {_verdict(cpu_ratio)}")
        print(f"{item.label:<22}{item.rps:>8.0f}{item.percentile(50):>8.2f}{item.percentile(99):>8.2f}"
              f"{item.cpu_per_request:>11.0f}{ratios}")
    load_average = os.getloadavg()[0]
    if load_average > (os.cpu_count() or 1):
        print(f"(load average {load_average:.1f} on {os.cpu_count()} CPUs: other processes compete; "
              "trust the CPU ratio more than the req/s ratio)")


# -- part 2: a long BackwardTransitive history --------------------------------------------------------------


def chain_schema(length: int) -> SchemaInfo:
    """Version ``length`` of the chain: an id and ``length`` nullable fields with defaults."""
    fields: list[dict[str, Any]] = [{"name": "id", "type": "long"}]
    fields += [{"name": f"f{k:04d}", "type": ["null", "string"], "default": None} for k in range(length)]
    return schema_info("Avro", json.dumps({"type": "record", "name": "Event", "namespace": "bench.big",
                                           "fields": fields}))


def _timed(call: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call(*args)
    return time.perf_counter() - start, result


def part_history(args: argparse.Namespace, registry_url: str) -> dict[str, Any]:
    """Build the chain over HTTP, then time validate and add under BackwardTransitive."""
    transitive = Compatibility.of("BackwardTransitive")
    client = RegistryClient(registry_url, timeout=24 * 3600)
    setup_policy = Compatibility.of(args.setup_policy)
    client.create_group(BIG_GROUP, GroupProperties(SerializationFormat("Avro"), setup_policy))
    checkpoints = sorted({int(c) for c in args.checkpoints.split(",") if c} | {args.versions})
    validates: dict[int, float] = {}
    print(f"\n== group of {args.versions} versions, built over HTTP under {args.setup_policy} ==", flush=True)
    start = time.perf_counter()
    last = 0.0
    for length in range(1, args.versions + 1):
        last, version = _timed(client.add_schema, BIG_GROUP, chain_schema(length))
        assert version.version == length - 1, version
        if length % 100 == 0 or length == args.versions:
            print(f"  {length:>5} versions after {time.perf_counter() - start:7.1f} s (last add {last:.3f} s)",
                  flush=True)
        if length in checkpoints and length < args.versions:
            took, reasons = _timed(client.validate, BIG_GROUP, chain_schema(length + 1), transitive)
            assert not reasons, reasons
            validates[length] = took
            print(f"  validate under BackwardTransitive at {length} versions: {took:.3f} s", flush=True)
    setup = time.perf_counter() - start - sum(validates.values())

    client.update_compatibility(BIG_GROUP, transitive)
    took, reasons = _timed(client.validate, BIG_GROUP, chain_schema(args.versions + 1))
    assert not reasons, reasons
    validates[args.versions] = took
    print(f"  validate under BackwardTransitive at {args.versions} versions: {took:.3f} s", flush=True)
    adds: list[float] = []
    budget_end = time.perf_counter() + args.time_budget
    while len(adds) < args.adds and (not adds or time.perf_counter() + adds[-1] < budget_end):
        length = args.versions + 1 + len(adds)
        took, version = _timed(client.add_schema, BIG_GROUP, chain_schema(length))
        assert version.version == length - 1, version
        adds.append(took)
        print(f"  add under BackwardTransitive at {length - 1} versions: {took:.3f} s", flush=True)
    return {"setup": setup, "validates": validates, "adds": adds}


def print_history(result: dict[str, Any], args: argparse.Namespace) -> None:
    """The summary of part 2."""
    adds = result["adds"]
    median = statistics.median(adds)
    verdict = "met" if median < ADD_TARGET_SECONDS else "MISSED"
    print(f"\n== BackwardTransitive, {args.versions} versions ==")
    print(f"setup: {result['setup']:.1f} s for {args.versions} adds over HTTP under {args.setup_policy} "
          f"({result['setup'] / args.versions * 1000:.0f} ms per add on average)")
    for length, took in sorted(result["validates"].items()):
        print(f"validate at {length:>5} versions: {took:9.3f} s")
    print(f"add at {args.versions} versions: median {median:.3f} s of {len(adds)} add(s) "
          f"({', '.join(f'{a:.3f}' for a in adds)})   target < {ADD_TARGET_SECONDS:g} s: {verdict}")


def profile_validate(database_url: str, versions: int) -> None:
    """One validate of the next chain schema, in this process under cProfile: where the time goes."""
    engine = make_engine(database_url)
    service = RegistryService(SqlRegistryStore(engine))
    profiler = cProfile.Profile()
    profiler.enable()
    reasons = service.validate(Namespace(""), GroupName(BIG_GROUP), chain_schema(versions + 1), None)
    profiler.disable()
    engine.dispose()
    assert not reasons, reasons
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
    print(f"\n== cProfile of one validate at {versions}+ versions (sorted by own time) ==")
    print(out.getvalue())


# -- main ----------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per endpoint and round")
    parser.add_argument("--concurrency", type=int, default=8, help="client connections (threads)")
    parser.add_argument("--client-processes", type=int, default=1,
                        help="spread the client threads over this many processes")
    parser.add_argument("--max-requests", type=int, default=500_000, help="cap on requests per endpoint and round")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the three GET loads")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers of both servers")
    parser.add_argument("--versions", type=int, default=1000, help="versions in the BackwardTransitive group")
    parser.add_argument("--checkpoints", default="100,250,500",
                        help="also time a validate at these version counts while building (comma separated)")
    parser.add_argument("--adds", type=int, default=3, help="adds to time at the full length (median reported)")
    parser.add_argument("--time-budget", type=float, default=900.0,
                        help="stop timing adds (after the first) once this many seconds have gone on them")
    parser.add_argument("--setup-policy", default="AllowAny", choices=["AllowAny", "BackwardTransitive"],
                        help="policy the chain is built under (then BackwardTransitive is set)")
    parser.add_argument("--skip-gets", action="store_true", help="skip part 1")
    parser.add_argument("--skip-history", action="store_true", help="skip part 2")
    parser.add_argument("--profile", action="store_true", help="cProfile one validate after part 2")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--payload", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (or, with --serve-bare, serve the bare app)."""
    args = parse_args(argv)
    if args.serve_bare:
        payload = json.loads(Path(args.payload).read_text())
        settings = Settings(database_url="sqlite://", port=args.serve_bare, workers=args.workers)
        BareServer(settings, payload).run()
        return
    with tempfile.TemporaryDirectory(prefix="streamcat-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        database_url = f"sqlite:///{tmp / 'registry.db'}"
        migrate.upgrade(database_url)
        port = free_port()
        env = {**child_env(), "STREAMCAT_DATABASE_URL": database_url, "STREAMCAT_WAREHOUSE": str(tmp / "warehouse"),
               "STREAMCAT_HOST": "127.0.0.1", "STREAMCAT_PORT": str(port), "STREAMCAT_WORKERS": str(args.workers)}
        url = f"http://127.0.0.1:{port}"
        options = GunicornServer(Settings(database_url=database_url, workers=args.workers)).options
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; both servers: gunicorn workers="
              f"{options['workers']} worker_class={options['worker_class']} threads={options['threads']} "
              f"keepalive={options['keepalive']}")
        command = [sys.executable, "-m", "catalog_api.server.cli", "serve"]
        with child_server(command, env, f"{url}/ping", tmp / "registry.log") as registry_pid:
            if not args.skip_gets:
                print_gets(part_gets(args, url, registry_pid, tmp), args)
            history = None if args.skip_history else part_history(args, url)
            if history is not None:
                print_history(history, args)
        if args.profile and history is not None:
            profile_validate(database_url, args.versions + len(history["adds"]))


if __name__ == "__main__":
    main()
