"""Every materialized table with its lag, for the pages that list them all (the overview, the list).

Computing a table's lag asks its sources for their commits: a few queries per table. Like the
server's /metrics (catalog_api/materialized/metrics.py), the UI reads them all at most every
``ttl`` seconds and lists from that (after an action taken through the UI, at once); a table's own
page always reads it afresh.
"""

from __future__ import annotations

import threading
import time

from catalog_api.materialized.model import MaterializedTable
from catalog_api.materialized.service import MaterializedService

#: How old the list may be, in seconds.
TTL_SECONDS = 5.0


class MaterializedStates:
    """The materialized tables of one server as MaterializedService.all_tables gives them, at most ``ttl`` old."""

    def __init__(self, service: MaterializedService, ttl: float = TTL_SECONDS) -> None:
        self.service = service
        self.ttl = ttl
        self._lock = threading.Lock()
        self._read_at = -float("inf")
        self._tables: list[MaterializedTable] = []

    def all(self) -> list[MaterializedTable]:
        """Every materialized table, read now if the list is older than ``ttl``."""
        with self._lock:
            if time.monotonic() - self._read_at >= self.ttl:
                self._tables = self.service.all_tables()
                self._read_at = time.monotonic()
            return self._tables

    def forget(self) -> None:
        """Read the tables again next time (a table's status was changed)."""
        with self._lock:
            self._read_at = -float("inf")
