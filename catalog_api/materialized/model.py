"""The domain objects of materialized tables and the rules that need no database: which refresh mode
a freshness gets, how far behind a table is, how long a failed table waits before the next attempt."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

RefreshMode = Literal["auto", "continuous", "full"]
REFRESH_MODES: tuple[RefreshMode, ...] = ("auto", "continuous", "full")
EffectiveMode = Literal["continuous", "full"]
Status = Literal["initializing", "activated", "suspended", "failed"]

#: Freshness at or above which ``auto`` means full refresh (Flink's default threshold).
DEFAULT_FRESHNESS_THRESHOLD_MS = 30 * 60 * 1000
#: The commit property that names the refresher a commit to a materialized table comes from.
HOLDER_PROPERTY = "streamcat.materialized.holder"
#: The commit property that records the source cuts a refresh read (JSON: {"scope.table": cut}).
CUTS_PROPERTY = "streamcat.materialized.cuts"
#: The commit property of a refresh that says how continuous mode maintains the query
#: (``incremental: grouped aggregate``, ``full refreshes: a join``), as that refresh's analysis found.
PLAN_PROPERTY = "streamcat.materialized.plan"
#: The commit property of a refresh that says how it was made (``incremental: projection``, ``full: why``).
METHOD_PROPERTY = "streamcat.materialized.method"
#: The table property that marks a materialized table (the Spark shim refuses writes to it).
TABLE_PROPERTY = "streamcat.materialized"
#: Backoff after a failed refresh: first wait, doubled per further failure, capped.
BACKOFF_FIRST_MS = 5_000
BACKOFF_MAX_MS = 10 * 60 * 1000

_UNITS = {
    "ms": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_FRESHNESS = re.compile(r"^\s*(?:INTERVAL\s+)?'?\s*(\d+)\s*'?\s*([a-zA-Z]+)\s*$", re.IGNORECASE)


def parse_freshness(text: str) -> int:
    """Milliseconds of a freshness as users write it: ``'10 seconds'``, ``'1 hour'``, ``INTERVAL '5' MINUTE``,
    ``'30s'``. ValueError naming the accepted units otherwise (and for zero)."""
    found = _FRESHNESS.match(text)
    unit = found and _UNITS.get(found.group(2).lower())
    if not found or not unit:
        raise ValueError(
            f"freshness {text!r} is not a positive number of milliseconds, seconds, minutes, hours or days "
            "(e.g. '10 seconds', '1 hour')"
        )
    value = int(found.group(1)) * unit
    if value <= 0:
        raise ValueError(f"freshness {text!r} must be positive")
    return value


def effective_mode(mode: RefreshMode, freshness_ms: int, threshold_ms: int) -> EffectiveMode:
    """The mode a table is refreshed in: ``auto`` is continuous below the threshold, full at or above it."""
    if mode == "auto":
        return "continuous" if freshness_ms < threshold_ms else "full"
    return mode


def backoff_ms(failures: int) -> int:
    """How long to wait after the ``failures``-th failure in a row before trying again."""
    return int(min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** max(0, failures - 1)))


@dataclass(frozen=True)
class SourceTable:
    """A table the query reads."""

    scope: str
    table: str

    @property
    def key(self) -> str:
        """``scope.table``: how cuts name it."""
        return f"{self.scope}.{self.table}"


@dataclass(frozen=True)
class Definition:
    """What a materialized table is: its query (resolved against ``current_catalog`` and
    ``current_namespace``, as Spark resolves a view's), the tables it reads, its freshness and the
    refresh mode asked for."""

    query_text: str
    sources: tuple[SourceTable, ...]
    freshness_ms: int
    refresh_mode: RefreshMode = "auto"
    current_catalog: str | None = None
    current_namespace: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceState:
    """A source as a refresh sees it: the cut the table's content reflects, and the source's newest commit."""

    source: SourceTable
    consumed: int | None
    latest: int
    #: when the oldest commit past ``consumed`` was made (None: nothing new)
    pending_since: int | None = None


@dataclass(frozen=True)
class RefreshState:
    """Where a materialized table's refreshes stand."""

    status: Status
    cuts: dict[str, int] = field(default_factory=dict)
    refresh_commit: int = 0
    last_refresh_at: int | None = None
    last_refresh_duration_ms: int | None = None
    last_error: str | None = None
    last_error_at: int | None = None
    failures: int = 0
    next_attempt_at: int | None = None
    lease_holder: str | None = None
    lease_expires_at: int | None = None


@dataclass(frozen=True)
class MaterializedTable:
    """A stored materialized table, with what its sources say now (``sources_now``, ``lag_ms``)."""

    scope: str
    name: str
    definition: Definition
    state: RefreshState
    effective_mode: EffectiveMode
    version: int
    created_at: int
    updated_at: int
    sources_now: tuple[SourceState, ...] = ()
    #: how long ago the oldest source commit the content does not reflect was made (0: up to date)
    lag_ms: int = 0
    #: how continuous mode maintains the query, and how the last refresh was made (from its commit;
    #: None before the first refresh, or when that commit predates these properties)
    incremental_plan: str | None = None
    last_refresh_method: str | None = None

    @property
    def behind(self) -> bool:
        """Whether a refresh would change the content: there was none yet, a source was never consumed (the
        query changed), or some source has commits the content does not reflect."""
        return self.state.refresh_commit == 0 or any(
            s.consumed is None or s.pending_since is not None for s in self.sources_now)

    @property
    def stale(self) -> bool:
        """Whether the table lags more than its freshness allows."""
        return self.lag_ms > self.definition.freshness_ms
