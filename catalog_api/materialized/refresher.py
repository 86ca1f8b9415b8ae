"""The refresher: the loop ``streamcat refresher`` runs on a SparkSession that has the Streamcat catalog.

Each pass lists the materialized tables of every scope (REST) and refreshes those that are due by
``CALL <catalog>.system.refresh_materialized_table`` on its Spark session, so that the refresh itself
(lease, pinned source cuts, one overwrite commit) is the very code users run by hand. A table is due
when the server's ``nextRefreshAt`` (catalog_api.materialized.model.next_refresh_at, the one place it is
decided) has come and no other live refresher holds its lease: in full mode, at every multiple of its
freshness since the epoch (as Flink's cron), when a source moved before it (a table with a partition date
formatter: always; the refresh then recomputes that time's partition).
Several refreshers may run against one server: the lease makes each table one refresher's at a time.

A continuous table is refreshed by the same procedure, which then runs an incremental step (its source's
change feed since the recorded cut, applied to the table in one commit) where its query allows. It is
due as soon as a source moved, and the loop looks every tenth of the smallest freshness of the
continuous tables it saw: steps follow the sources closely (their trigger is that pass interval), so
the lag stays near the time of a step or two, well inside the freshness.
Before a continuous table's first step, the refresher warms its session with dry runs of that step
(``refresh_materialized_table(dry_run => true)``: the step's own code and Spark job, writing nothing), so that
the first step after a start costs what later ones cost (:meth:`Refresher.warm`). Warming yields to due work:
a dry run runs in a thread of its own under a Spark job group of its own, and is cancelled as soon as any table
becomes due (:meth:`Refresher.dry_run`), so that a table whose source moves never waits for another's warm-up.
Only the client side of the project is imported here (plus pyspark).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from catalog_api.client import CatalogClient

log = logging.getLogger(__name__)

#: The shortest wait between passes, however small a continuous table's freshness.
MIN_PASS_SECONDS = 0.2
#: Dry runs of a continuous table's step before its first (Refresher.warm): at least two (measured on the 2-core
#: machine, one left the first step at twice a later one's time: the JIT still compiling), more while each is
#: more than WARMING times faster than the one before (still warming), at most MAX_DRY_RUNS.
MAX_DRY_RUNS = 4
WARMING = 1.5
#: How often, while a dry run is under way, the refresher asks the server whether a table has become due (one
#: list of the materialized tables per scope).
CHECK_SECONDS = 0.2


class Interrupted(Exception):
    """A dry run cancelled because due work came first (:meth:`Refresher.dry_run`); ``reason`` says which,
    e.g. ``shop.clicks was due``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Attempt:
    """What one pass did with one table: ``succeeded``, ``unchanged`` (no source had moved), ``failed`` (the
    error is recorded on the table too), ``skipped`` (not due, or another refresher had it; for warming: a due
    table came first), or ``warmed`` / ``not warmed`` (:meth:`Refresher.warm`: its dry run failed, or was
    interrupted by due work); ``detail`` says how (duration, commit, method), why it failed, or why it was
    skipped, in one line."""

    table: str
    outcome: str
    detail: str = ""
    #: warming that gave way to due work (:meth:`Refresher.warm`): the loop's next pass follows at once
    yielded: bool = False

    def line(self) -> str:
        """The attempt as one line of the refresher's output."""
        return f"{self.table}: {self.outcome}" + (f": {self.detail}" if self.detail else "")


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC, to the second."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_refresh(table: dict[str, Any], now_ms: int, holder: str) -> tuple[int | None, str]:
    """When ``holder`` would refresh a materialized table (its REST answer): epoch milliseconds (at or before
    ``now_ms`` if it is due; ``None`` until a source changes or the table is resumed), and why then. The time
    is the server's ``nextRefreshAt``, unless another live refresher holds the lease: continuous mode steps as
    soon as a source moved (a step costs what changed), full mode at the scheduled times (multiples of the
    freshness)."""
    if table["status"] == "suspended":
        return None, "suspended until resume_materialized_table"
    if table.get("nextAttemptAt") is not None and table["nextAttemptAt"] > now_ms:
        failures = table.get("failures") or 0
        return table["nextAttemptAt"], f"waiting out the backoff after {failures} failed refresh(es)"
    leased = table.get("leaseHolder")
    if leased not in (None, holder) and (table.get("leaseExpiresAt") or 0) > now_ms:
        return table["leaseExpiresAt"], f"refresher {leased} holds its lease"
    when: int | None = table.get("nextRefreshAt")
    if when is None:
        return None, "up to date: refreshed when a source changes"
    due = min(when, now_ms)
    if table["effectiveRefreshMode"] == "continuous":
        return due, "a source changed"
    if table["refreshCommit"] == 0:
        return due, "never refreshed"
    if table["status"] == "failed":
        return due, "its last refresh failed"
    if table.get("nextAttemptAt") is not None:  # MaterializedService.request_refresh (the UI's "Refresh now")
        return due, "a refresh was asked for"
    every = f"every {table['freshnessMs'] / 1000:g} s from the epoch"
    # a partition date formatter (model.DATE_FORMATTER): each scheduled refresh recomputes its time's partition
    partitioned = any(k.startswith("partition.") for k in table.get("options") or {})
    what = "recomputes the partition of its time" if partitioned else "if a source moved before it"
    if when <= now_ms:
        return when, f"scheduled at {iso(when)}, {every}; {what}"
    return when, f"scheduled {every}; {what}"


def is_due(table: dict[str, Any], now_ms: int, holder: str) -> bool:
    """Whether a materialized table (its REST answer) should be refreshed now by ``holder``
    (:func:`next_refresh`)."""
    when, _ = next_refresh(table, now_ms, holder)
    return when is not None and when <= now_ms


def plan_line(table: dict[str, Any], now_ms: int, holder: str) -> str:
    """One line on a materialized table: its mode, freshness and when it will next be refreshed."""
    when, why = next_refresh(table, now_ms, holder)
    mode = table["effectiveRefreshMode"]
    if table["refreshMode"] == "auto":
        mode = f"{mode} (auto)"
    at = "not scheduled" if when is None else "now" if when <= now_ms else iso(when)
    return (f"{table['scopeName']}.{table['tableName']}: {mode}, freshness {table['freshnessMs'] / 1000:g} s, "
            f"next refresh {at} ({why})")


#: How the procedure words a failed refresh (StreamcatMaterialized.java): the table, then the cause.
_REFRESH_FAILED = re.compile(r"\[STREAMCAT_REFRESH_FAILED\] the refresh of materialized table \S+ failed: ")


def one_line(error: BaseException) -> str:
    """An exception's message in one line: a Java exception's own message rather than Py4J's wrapping, the
    first line of a Spark error (its plan follows), the cause of a failed refresh (the line names the table)."""
    java = getattr(error, "java_exception", None)
    message = str(java.getMessage()) if java is not None else str(error)
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return _REFRESH_FAILED.sub("", lines[0], count=1) if lines else type(error).__name__


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
                 lease_seconds: int = 60, scopes: Sequence[str] = ()) -> None:
        self.spark = spark
        #: the scopes whose tables it refreshes (empty: every scope)
        self.scopes = tuple(scopes)
        self.client = client
        self.catalog = catalog
        self.holder = holder or self.new_holder()
        self.lease_seconds = lease_seconds
        #: the tables the last pass listed (their REST answers), for the wait before the next one
        self.seen: list[dict[str, Any]] = []
        #: the continuous tables (:func:`warm_key`) this session has run a dry run or a step of
        self.warmed: set[tuple[str, str, str]] = set()
        #: how many dry runs it has started (each under the Spark job group ``<holder>: dry run <n> of <table>``)
        self.dry_runs = 0

    @staticmethod
    def new_holder() -> str:
        """A refresher's name in leases when it is given none."""
        return f"refresher-{uuid.uuid4().hex[:12]}"

    def tables(self) -> Iterator[dict[str, Any]]:
        """Every materialized table of its scopes (default: of every scope it may read)."""
        return all_tables(self.client, self.scopes)

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
            message = one_line(e)
            if "RefreshLeaseHeld" in message or "holds the lease" in message:
                return Attempt(label, "skipped", "another refresher took its lease first")
            return Attempt(label, "failed", message)
        outcome = rows[0]["outcome"] if rows else "unchanged"
        commit = rows[0]["commit"] if rows else None
        method = f", {rows[0]['method']}" if rows and rows[0]["method"] else ""
        took = f"{time.monotonic() - started:.1f} s"
        if outcome == "unchanged":
            return Attempt(label, outcome, f"no source moved past the cuts of commit {commit} ({took})")
        return Attempt(label, outcome, f"commit {commit} in {took}{method}")

    def dry_run(self, label: str, interrupt: Callable[[], str | None] = lambda: None) -> tuple[float, str]:
        """``refresh_materialized_table(dry_run => true)`` of one table: seconds taken, and how its step is made.

        The call runs in a thread of its own under a Spark job group of its own (a classic session with pinned
        threads, PySpark's default: the group is that Python thread's), while this thread asks ``interrupt``
        every :data:`CHECK_SECONDS` whether due work came first (why, or ``None``). When it did, the group is
        cancelled, its running job and any it would start later (``cancelJobGroupAndFutureJobs``), the dry run
        is waited for and :class:`Interrupted` raised. What a cancel cannot cut short is the driver's part under
        way (the CALL's resolution, the query's analysis and planning: its job is refused when it is submitted)
        and an executor's task until its next check for a kill (measured: within a row or two). A cancelled
        dry run leaves what a failed one leaves: nothing (StreamcatMaterialized.rehearseWrite deletes the
        temporary directory it writes into, whatever happens)."""
        self.dry_runs += 1
        group = f"{self.holder}: dry run {self.dry_runs} of {label}"
        context = self.spark.sparkContext
        answer: list[Any] = []
        failure: list[Exception] = []

        def call() -> None:
            try:
                context.setJobGroup(group, f"dry run of the step of {label}", interruptOnCancel=True)
                answer.extend(self.spark.sql(
                    f"CALL `{self.catalog.replace('`', '``')}`.system.refresh_materialized_table("
                    "table => :table, dry_run => true)", args={"table": label}).collect())
            except Exception as e:  # raised again in the caller's thread
                failure.append(e)

        started = time.monotonic()
        worker = threading.Thread(target=call, name=group, daemon=True)
        worker.start()
        why = None
        try:
            while why is None and worker.is_alive():
                worker.join(CHECK_SECONDS)
                if worker.is_alive():
                    why = interrupt()
        finally:
            if worker.is_alive():  # due work came first (or asking failed): nothing may run beside the next step
                context._jsc.sc().cancelJobGroupAndFutureJobs(group, f"the refresher yields to due work: {why}")
                worker.join()
        if why is not None:
            raise Interrupted(why)
        if failure:
            raise failure[0]
        return time.monotonic() - started, (answer[0]["method"] if answer else None) or "nothing to run"

    def warm(self, tables: Iterable[dict[str, Any]] | None = None,
             stop: threading.Event | None = None) -> list[Attempt]:
        """Prepare the session for the first step of each continuous table (of ``tables``, default: all) it has
        not stepped yet: dry runs of its step (:data:`MAX_DRY_RUNS`). The first loads and compiles what the step
        runs (the catalog and its procedures, the query's analysis, which the session keeps, the change feed's
        read, the step's job and write, Python workers when that path uses them) and costs what a cold step
        costs; the next ones, at a warm step's price, let the JIT compile the rest.

        Warming yields to due work: before each dry run, and every :data:`CHECK_SECONDS` during one, it asks the
        server whether any table is due (:meth:`first_due`; ``stop`` set counts too). When one is (the table
        being warmed included: its step warms it at once), the dry run under way is cancelled
        (:meth:`dry_run`) and warming stops, so that the loop steps the due tables now: the table whose warming
        was cut is ``not warmed: interrupted (S.u was due)``, those not begun ``skipped``, and a later pass warms
        them (a cut warming never counts as done)."""
        waiting = [(key, table) for table in (self.tables() if tables is None else tables)
                   if (key := warm_key(table)) is not None and key not in self.warmed]

        def interrupt() -> str | None:
            if stop is not None and stop.is_set():
                return "the refresher is stopping"
            try:
                due = self.first_due()
            except Exception as e:  # not the dry run's failure: warming stops, and the next pass retries it
                return f"the server could not say what is due: {one_line(e)}"
            return None if due is None else f"{due} was due"

        attempts = []
        for number, (key, table) in enumerate(waiting):
            label = f"{table['scopeName']}.{table['tableName']}"
            runs: list[tuple[float, str]] = []
            begun = False
            try:
                while len(runs) < MAX_DRY_RUNS and (len(runs) < 2 or runs[-1][0] * WARMING < runs[-2][0]):
                    why = interrupt()
                    if why is not None:
                        raise Interrupted(why)
                    begun = True
                    runs.append(self.dry_run(label, interrupt))
            except Interrupted as e:
                if begun:
                    attempts.append(Attempt(label, "not warmed", f"interrupted ({e.reason})", yielded=True))
                attempts.extend(Attempt(f"{t['scopeName']}.{t['tableName']}", "skipped",
                                        f"warming put off ({e.reason})", yielded=True)
                                for _, t in waiting[number + 1 if begun else number:])
                return attempts
            except Exception as e:  # its refresh will meet the same cause, and record it on the table
                self.warmed.add(key)
                attempts.append(Attempt(label, "not warmed", f"the dry run failed: {one_line(e)}"))
                continue
            self.warmed.add(key)
            took = ", ".join(f"{seconds:.1f} s" for seconds, _ in runs)
            attempts.append(Attempt(label, "warmed", f"dry runs of its step in {took} ({runs[-1][1]})"))
        return attempts

    def first_due(self) -> str | None:
        """The first table (of its scopes) that is due now, asked of the server anew, as ``scope.table``; or
        ``None``."""
        now = int(time.time() * 1000)
        return next((f"{t['scopeName']}.{t['tableName']}" for t in self.tables() if is_due(t, now, self.holder)),
                    None)

    def run_once(self) -> list[Attempt]:
        """One pass: refresh every due table, one after the other; a table that is not due is ``skipped``,
        with the reason and when it will be refreshed."""
        attempts = []
        self.seen = list(self.tables())
        for table in self.seen:
            now = int(time.time() * 1000)
            when, why = next_refresh(table, now, self.holder)
            if when is not None and when <= now:
                attempts.append(self.refresh(table["scopeName"], table["tableName"]))
                key = warm_key(table)
                if key is not None:
                    self.warmed.add(key)  # its step was the warm-up
            else:
                later = f"; next refresh {iso(when)}" if when is not None else ""
                attempts.append(Attempt(f"{table['scopeName']}.{table['tableName']}", "skipped", why + later))
        return attempts

    def run(self, poll_seconds: float = 5.0, stop: threading.Event | None = None) -> None:
        """Passes every ``poll_seconds`` (less for continuous tables: :func:`pass_interval`) until ``stop``
        is set (or forever); after each, the continuous tables it saw first are warmed (:meth:`warm`). Warming
        that gave way to due work is followed by the next pass at once (after :data:`MIN_PASS_SECONDS`)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            hurry = False
            try:
                _log(self.run_once())
                warming = self.warm(self.seen, stop)
                _log(warming)
                hurry = any(attempt.yielded for attempt in warming)
            except Exception:  # the server is unreachable for a while: try again at the next pass
                log.exception("refresher pass failed")
            stop.wait(MIN_PASS_SECONDS if hurry else pass_interval(self.seen, poll_seconds))


def _log(attempts: Iterable[Attempt]) -> None:
    """The attempts of a pass in the refresher's log: failures as warnings, skipped tables at DEBUG."""
    for attempt in attempts:
        if attempt.outcome == "failed":
            log.warning("%s", attempt.line())
        else:
            log.log(logging.DEBUG if attempt.outcome == "skipped" else logging.INFO, "%s", attempt.line())


def warm_key(table: dict[str, Any]) -> tuple[str, str, str] | None:
    """What a warm session has prepared for a continuous table (its REST answer): its name and query (a new
    query is analyzed and compiled anew); ``None`` for a table that is not continuous or is suspended."""
    if table["effectiveRefreshMode"] != "continuous" or table["status"] == "suspended":
        return None
    return table["scopeName"], table["tableName"], table["queryText"]


def all_tables(client: CatalogClient, scopes: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """Every materialized table (REST answers) of ``scopes``, or of every scope ``client`` may read."""
    for scope in scopes or [s["scopeName"] for s in client.list_scopes()]:
        yield from client.list_materialized_tables(scope)
