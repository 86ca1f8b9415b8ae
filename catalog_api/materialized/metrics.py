"""Per-table gauges of materialized tables for ``/metrics``: lag, freshness, stale, last refresh duration.

Read from the database at scrape time (every gunicorn worker and replica reports the same), at most
every ``ttl`` seconds: a scrape costs a few queries per materialized table (its sources' cuts).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily

from catalog_api.materialized.model import MaterializedTable

#: How long a scrape's reading is reused.
TTL_SECONDS = 5.0


class MaterializedMetrics:
    """A prometheus_client collector over ``tables()`` (MaterializedService.all)."""

    def __init__(self, tables: Callable[[], list[MaterializedTable]], ttl: float = TTL_SECONDS) -> None:
        self._tables = tables
        self.ttl = ttl
        self._lock = threading.Lock()
        self._read_at = -float("inf")
        self._cached: list[MaterializedTable] = []

    def _current(self) -> list[MaterializedTable]:
        with self._lock:
            if time.monotonic() - self._read_at >= self.ttl:
                self._cached = self._tables()
                self._read_at = time.monotonic()
            return self._cached

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The gauges, one sample per table (labels ``scope``, ``table``)."""
        labels = ["scope", "table"]
        lag = GaugeMetricFamily(
            "streamcat_materialized_lag_seconds",
            "how long ago the oldest source commit a materialized table does not reflect was made", labels=labels)
        freshness = GaugeMetricFamily(
            "streamcat_materialized_freshness_seconds", "the freshness a materialized table declares", labels=labels)
        stale = GaugeMetricFamily(
            "streamcat_materialized_stale", "1 when a materialized table lags more than its freshness", labels=labels)
        duration = GaugeMetricFamily(
            "streamcat_materialized_refresh_duration_seconds", "how long the last successful refresh took",
            labels=labels)
        failures = GaugeMetricFamily(
            "streamcat_materialized_refresh_failures", "failed refreshes in a row", labels=labels)
        for t in self._current():
            names = [t.scope, t.name]
            lag.add_metric(names, t.lag_ms / 1000)
            freshness.add_metric(names, t.definition.freshness_ms / 1000)
            stale.add_metric(names, 1.0 if t.stale else 0.0)
            failures.add_metric(names, float(t.state.failures))
            if t.state.last_refresh_duration_ms is not None:
                duration.add_metric(names, t.state.last_refresh_duration_ms / 1000)
        yield from (lag, freshness, stale, duration, failures)
