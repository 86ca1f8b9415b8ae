"""Request ids, structured JSON logs, Prometheus metrics and health checks."""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from flask import Blueprint, Flask, Response, current_app, has_request_context, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import Engine, func, select, text

from catalog_api.materialized.metrics import MaterializedMetrics
from catalog_api.orm import CommitRow, ScopeRow, StreamRow
from catalog_api.server.answers import ANSWERED
from catalog_api.server.migrate import current_revisions, head_revisions
from registry.store.orm import GroupRow, SchemaRow, VersionRow

REQUESTS = Counter("streamcat_http_requests", "HTTP requests answered", ["route", "method", "status"])
LATENCY = Histogram(
    "streamcat_http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["route", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
ACCESS_LOG = logging.getLogger("streamcat.access")
#: Where a request's id is kept: a key of its WSGI environ.
REQUEST_ID = "streamcat.request_id"
_COUNTS = "streamcat.row_counts"
_MATERIALIZED = "streamcat.materialized_metrics"


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request id of the request being served."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = request.environ.get(REQUEST_ID) if has_request_context() else None
        if request_id is not None:
            entry["request_id"] = request_id
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str = "INFO") -> None:
    """Send every log record to stderr as JSON lines."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class _Observed:
    """The application's WSGI callable, wrapped: gives every request an id (``X-Request-Id``,
    echoed or made), counts and times it by route, method and status, and writes the access log.

    A WSGI wrapper rather than Flask's before/after-request hooks: Flask runs every hook through
    its coroutine check and every ``request`` and ``g`` access through a context-local proxy, which
    together cost a cached GET about a tenth of its time. The labelled children of the two metrics
    are kept per (route, method, status), so that ``labels()`` (a lock and a lookup) runs once each.
    """

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        started = time.perf_counter()
        request_id = environ.get("HTTP_X_REQUEST_ID") or secrets.token_hex(16)
        environ[REQUEST_ID] = request_id

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            headers.append(("X-Request-Id", request_id))
            self._observe(environ, status.split(" ", 1)[0], time.perf_counter() - started)
            return start_response(status, headers, exc_info)

        return self.app(environ, start)

    def _observe(self, environ: dict[str, Any], status: str, elapsed: float) -> None:
        # Flask's request object, which matched the route (absent if the app failed before making it).
        made = environ.get("werkzeug.request")
        answered = environ.get(ANSWERED)  # answered without Flask, from the immutable answers
        if answered is not None:
            route, path = answered
        else:
            rule = getattr(made, "url_rule", None)
            route = rule.rule if rule is not None else "unmatched"
            path = made.path if made is not None else environ.get("PATH_INFO", "")
        method = made.method if made is not None else str(environ.get("REQUEST_METHOD", "")).upper()
        key = (route, method, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (REQUESTS.labels(route, method, status), LATENCY.labels(route, method))
        children[0].inc()
        children[1].observe(elapsed)
        if ACCESS_LOG.isEnabledFor(logging.INFO):
            ACCESS_LOG.info(
                "%s %s %s",
                method,
                path,
                status,
                extra={
                    "fields": {
                        "method": method,
                        "path": path,
                        "route": route,
                        "status": int(status),
                        "duration_ms": round(elapsed * 1000, 3),
                    }
                },
            )


#: How long the row counts of a scrape are reused, in seconds.
COUNTS_TTL_SECONDS = 30.0
#: Tables that PostgreSQL's planner estimates at fewer rows than this are counted exactly.
EXACT_COUNT_BELOW = 100_000
_COUNTED = (
    ("groups", GroupRow),
    ("schemas", SchemaRow),
    ("schema_versions", VersionRow),
    ("scopes", ScopeRow),
    ("streams", StreamRow),
    ("commits", CommitRow),
)
# The planner's own estimate: rows per page at the last ANALYZE or VACUUM (autovacuum keeps it
# fresh), times the pages the table has now; NULL when the table was never analyzed.
_ESTIMATE = text(
    "SELECT CASE WHEN c.reltuples < 0 THEN NULL WHEN c.relpages = 0 THEN c.reltuples"
    " ELSE c.reltuples / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::int) END"
    " FROM pg_class c WHERE c.oid = to_regclass(:table)"
)


class _CatalogCounts:
    """Row-count gauges read from the database, so that every process reports the same.

    A table-wide ``COUNT(*)`` scans the table (a good part of a second at a million versions), so
    a scrape does not run one each time: counts are reused for ``COUNTS_TTL_SECONDS``, and on
    PostgreSQL a table the planner estimates at ``EXACT_COUNT_BELOW`` rows or more reports that
    estimate (within a few percent once autovacuum has analyzed it) instead of a count.
    """

    def __init__(self, engine_of: Callable[[], Engine], ttl: float = COUNTS_TTL_SECONDS) -> None:
        self._engine_of = engine_of
        self.ttl = ttl
        self._lock = threading.Lock()
        self._read_at = -math.inf
        self._values: dict[str, float] = {}

    def values(self) -> dict[str, float]:
        """The row count of each table, at most ``ttl`` seconds old."""
        with self._lock:
            if time.monotonic() - self._read_at >= self.ttl:
                self._values = self._read()
                self._read_at = time.monotonic()
            return dict(self._values)

    def _read(self) -> dict[str, float]:
        engine = self._engine_of()
        estimated = engine.dialect.name == "postgresql"
        values: dict[str, float] = {}
        with engine.connect() as conn:
            for name, row in _COUNTED:
                estimate = conn.execute(_ESTIMATE, {"table": name}).scalar() if estimated else None
                if estimate is not None and estimate >= EXACT_COUNT_BELOW:
                    values[name] = round(estimate)
                else:
                    values[name] = conn.execute(select(func.count()).select_from(row)).scalar_one()
        return values

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The gauges (prometheus_client's collector protocol)."""
        for name, value in self.values().items():
            yield GaugeMetricFamily(f"streamcat_{name}", f"{name.replace('_', ' ')} in the database", value)


health = Blueprint("health", __name__)


@health.get("/health/live")
def live() -> Any:
    return {"status": "ok"}


@health.get("/health/ready")
def ready() -> Any:
    ext = current_app.extensions["streamcat"]
    try:
        with ext.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        current = current_revisions(ext.engine)
    except Exception as e:  # any database failure means "not ready", which is the answer
        return {"status": "unavailable", "reason": f"database unreachable: {type(e).__name__}"}, 503
    heads = head_revisions(ext.settings.database_url)
    if current != heads:
        return {
            "status": "unavailable",
            "reason": "database not migrated; run `streamcat db upgrade`",
            "current": sorted(current),
            "head": sorted(heads),
        }, 503
    return {"status": "ok", "revision": sorted(current)}


@health.get("/metrics")
def metrics() -> Response:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # gunicorn workers each count their own requests; the collector sums their files.
        MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY

        registry = REGISTRY
    body = generate_latest(registry)
    counts = CollectorRegistry()
    counts.register(current_app.extensions[_COUNTS])
    counts.register(current_app.extensions[_MATERIALIZED])
    return Response(body + generate_latest(counts), content_type=CONTENT_TYPE_LATEST)


def init_app(app: Flask, access_log: bool) -> None:
    """Give every request an id, count and time it, and serve health and metrics.

    The access log (one JSON line per request) is off unless asked for: it costs about a
    tenth of a cached GET, and a load balancer usually logs requests already.
    """
    ACCESS_LOG.setLevel(logging.INFO if access_log else logging.WARNING)
    app.wsgi_app = _Observed(app.wsgi_app)  # type: ignore[method-assign]
    app.extensions[_COUNTS] = _CatalogCounts(lambda: app.extensions["streamcat"].engine)
    app.extensions[_MATERIALIZED] = MaterializedMetrics(lambda: app.extensions["streamcat"].materialized.all_tables())
    app.register_blueprint(health)
