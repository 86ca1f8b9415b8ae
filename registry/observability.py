"""Request ids, structured JSON logs, Prometheus metrics and health checks."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, has_request_context, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import func, select, text

from registry.migrate import current_revisions, head_revisions

REQUESTS = Counter("streamcat_http_requests", "HTTP requests answered", ["route", "method", "status"])
LATENCY = Histogram(
    "streamcat_http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["route", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
ACCESS_LOG = logging.getLogger("streamcat.access")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request id of the request being served."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if has_request_context() and "request_id" in g:
            entry["request_id"] = g.request_id
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


def _route() -> str:
    return request.url_rule.rule if request.url_rule is not None else "unmatched"


def _before() -> None:
    g.request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex
    g.started = time.perf_counter()


def _after(response: Response) -> Response:
    elapsed = time.perf_counter() - g.get("started", time.perf_counter())
    route = _route()
    REQUESTS.labels(route, request.method, str(response.status_code)).inc()
    LATENCY.labels(route, request.method).observe(elapsed)
    response.headers["X-Request-Id"] = g.get("request_id", "")
    if ACCESS_LOG.isEnabledFor(logging.INFO):
        ACCESS_LOG.info(
            "%s %s %s",
            request.method,
            request.path,
            response.status_code,
            extra={
                "fields": {
                    "method": request.method,
                    "path": request.path,
                    "route": route,
                    "status": response.status_code,
                    "duration_ms": round(elapsed * 1000, 3),
                }
            },
        )
    return response


class _CatalogCounts:
    """Gauges read from the database at scrape time: counts every process agrees on."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from catalog_api.orm import CommitRow, ScopeRow, StreamRow
        from registry.store.orm import GroupRow, SchemaRow, VersionRow

        engine = self.app.extensions["streamcat"].engine
        counted = (
            ("groups", GroupRow),
            ("schemas", SchemaRow),
            ("schema_versions", VersionRow),
            ("scopes", ScopeRow),
            ("streams", StreamRow),
            ("commits", CommitRow),
        )
        with engine.connect() as conn:
            for name, row in counted:
                value = conn.execute(select(func.count()).select_from(row)).scalar_one()
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
    counts.register(_CatalogCounts(current_app._get_current_object()))  # type: ignore[attr-defined]
    return Response(body + generate_latest(counts), content_type=CONTENT_TYPE_LATEST)


def init_app(app: Flask, access_log: bool) -> None:
    """Give every request an id, count and time it, and serve health and metrics.

    The access log (one JSON line per request) is off unless asked for: it costs about a
    tenth of a cached GET, and a load balancer usually logs requests already.
    """
    ACCESS_LOG.setLevel(logging.INFO if access_log else logging.WARNING)
    app.before_request(_before)
    app.after_request(_after)
    app.register_blueprint(health)
