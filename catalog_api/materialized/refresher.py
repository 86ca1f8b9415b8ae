"""The refresher: the loop ``streamcat refresher`` runs on a SparkSession that has the Streamcat catalog.

Each pass lists the materialized tables of every scope (REST) and refreshes those that are due by
``CALL <catalog>.system.refresh_materialized_table`` on its Spark session, so that the refresh itself
(lease, pinned source cuts, one overwrite commit) is the very code users run by hand. A table is due
when it is not suspended, not waiting out a failure's backoff, not leased by another live refresher,
and behind its sources, and then, in full mode, either never refreshed, failed before, or lagging by
half its freshness or more: so its lag stays below its freshness while a refresh takes less than half
of it.
Several refreshers may run against one server: the lease makes each table one refresher's at a time.

A continuous table is refreshed by the same procedure, which then runs an incremental step (its source's
change feed since the recorded cut, applied to the table in one commit) where its query allows. It is
due as soon as a source moved, and the loop looks every tenth of the smallest freshness of the
continuous tables it saw: steps follow the sources closely (their trigger is that pass interval), so
the lag stays near the time of a step or two, well inside the freshness.
Only the client side of the project is imported here (plus pyspark).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from catalog_api.client import CatalogClient

log = logging.getLogger(__name__)

#: The shortest wait between passes, however small a continuous table's freshness.
MIN_PASS_SECONDS = 0.2


@dataclass(frozen=True)
class Attempt:
    """What one pass did with one table: ``succeeded``, ``unchanged``, ``skipped`` (another refresher had
    it) or ``failed`` (the error is recorded on the table too)."""

    table: str
    outcome: str
    detail: str = ""


def is_due(table: dict[str, Any], now_ms: int, holder: str) -> bool:
    """Whether a materialized table (its REST answer) should be refreshed now by ``holder``: full mode
    waits until the lag reaches half the freshness (fewer, larger recomputes), continuous mode steps as
    soon as a source moved (a step costs what changed)."""
    if table["status"] == "suspended":
        return False
    if table.get("nextAttemptAt") is not None and table["nextAttemptAt"] > now_ms:
        return False
    leased = table.get("leaseHolder")
    if leased not in (None, holder) and (table.get("leaseExpiresAt") or 0) > now_ms:
        return False
    if not table["behind"]:
        return False
    if table["effectiveRefreshMode"] == "continuous":
        return True
    return table["refreshCommit"] == 0 or table["status"] == "failed" or table["lagMs"] * 2 >= table["freshnessMs"]


def pass_interval(tables: Iterable[dict[str, Any]], poll_seconds: float) -> float:
    """Seconds to wait before the next pass: ``poll_seconds``, shortened to a tenth of the smallest
    freshness of the continuous tables that are not suspended (their trigger interval)."""
    wait = poll_seconds
    for table in tables:
        if table["effectiveRefreshMode"] == "continuous" and table["status"] != "suspended":
            wait = min(wait, max(MIN_PASS_SECONDS, table["freshnessMs"] / 10_000))
    return wait


class Refresher:
    """Refreshes the due materialized tables of one server on one SparkSession."""

    def __init__(self, spark: Any, client: CatalogClient, catalog: str = "streamcat", holder: str | None = None,
                 lease_seconds: int = 60) -> None:
        self.spark = spark
        self.client = client
        self.catalog = catalog
        self.holder = holder or f"refresher-{uuid.uuid4().hex[:12]}"
        self.lease_seconds = lease_seconds
        #: the tables the last pass listed (their REST answers), for the wait before the next one
        self.seen: list[dict[str, Any]] = []

    def tables(self) -> Iterator[dict[str, Any]]:
        """Every materialized table of every scope the refresher may read."""
        for scope in self.client.list_scopes():
            yield from self.client.list_materialized_tables(scope["scopeName"])

    def refresh(self, scope: str, name: str) -> Attempt:
        """Refresh one table now (if a source moved), on this refresher's Spark session."""
        label = f"{scope}.{name}"
        started = time.monotonic()
        try:
            rows = self.spark.sql(
                f"CALL `{self.catalog.replace('`', '``')}`.system.refresh_materialized_table("
                "table => :table, holder => :holder, lease_seconds => :lease)",
                args={"table": label, "holder": self.holder, "lease": self.lease_seconds},
            ).collect()
        except Exception as e:  # every failure is the table's, recorded on it; the loop goes on
            message = str(e)
            if "RefreshLeaseHeld" in message or "holds the lease" in message:
                return Attempt(label, "skipped", "another refresher holds its lease")
            log.warning("refresh of %s failed: %s", label, message.splitlines()[0] if message else e)
            return Attempt(label, "failed", message)
        outcome = rows[0]["outcome"] if rows else "unchanged"
        commit = rows[0]["commit"] if rows else None
        method = f", {rows[0]['method']}" if rows and rows[0]["method"] else ""
        return Attempt(label, outcome, f"{time.monotonic() - started:.1f} s, commit {commit}{method}")

    def run_once(self) -> list[Attempt]:
        """One pass: refresh every due table, one after the other."""
        attempts = []
        self.seen = list(self.tables())
        for table in self.seen:
            if is_due(table, int(time.time() * 1000), self.holder):
                attempts.append(self.refresh(table["scopeName"], table["tableName"]))
        return attempts

    def run(self, poll_seconds: float = 5.0, stop: threading.Event | None = None) -> None:
        """Passes every ``poll_seconds`` (less for continuous tables: :func:`pass_interval`) until ``stop``
        is set (or forever)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                for attempt in self.run_once():
                    log.info("%s: %s %s", attempt.table, attempt.outcome, attempt.detail[:200])
            except Exception:  # the server is unreachable for a while: try again at the next pass
                log.exception("refresher pass failed")
            stop.wait(pass_interval(self.seen, poll_seconds))
