"""The domain objects of materialized tables and the rules that need no database: which refresh mode
a freshness gets, how far behind a table is, how long a failed table waits before the next attempt,
which WITH options a table takes, and when its next refresh is due (:func:`next_refresh_at`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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

#: The WITH option that makes a full-mode table's scheduled refresh recompute one partition: the value of
#: partition column <col> is the scheduled time formatted with this Java date pattern, in UTC (Flink's option).
DATE_FORMATTER = re.compile(r"^partition\.fields\.([^.]+)\.date-formatter$")
#: WITH options that are the catalog's table properties (docs/changelog-tables.md): set on the table.
TABLE_OPTIONS = ("merge-engine", "sequence.field")
_FIELD_OPTION = re.compile(r"^fields\.[^.]+\.[a-z-]+$")

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


def split_options(options: Mapping[str, str], partitioned_by: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """A CREATE's WITH options as (the materialized table's own, table properties): a date formatter of a
    partition column, and the catalog's table properties (``merge-engine``, ``sequence.field``,
    ``fields.<col>.<option>``). ValueError naming the first key that is neither, or a formatter of a column
    that is not a partition column, or an empty formatter."""
    own: dict[str, str] = {}
    table: dict[str, str] = {}
    for key, value in options.items():
        formatter = DATE_FORMATTER.match(key)
        if formatter:
            if formatter.group(1) not in partitioned_by:
                raise ValueError(f"option {key!r} names column {formatter.group(1)!r}, which is not a partition "
                                 f"column (PARTITIONED BY ({', '.join(partitioned_by)}))")
            if not value.strip():
                raise ValueError(f"option {key!r} needs a date pattern, such as 'yyyy-MM-dd'")
            own[key] = value
        elif key in TABLE_OPTIONS or _FIELD_OPTION.match(key):
            table[key] = value
        else:
            raise ValueError(f"unknown option {key!r}: a materialized table takes "
                             "'partition.fields.<column>.date-formatter' and the table properties "
                             f"{', '.join(TABLE_OPTIONS)} and fields.<column>.<option>")
    if len(own) > 1:
        raise ValueError(f"options {', '.join(sorted(own))}: one partition column may have a date formatter")
    return own, table


def formatter(options: Mapping[str, str]) -> tuple[str, str] | None:
    """The partition column a scheduled refresh recomputes and its date pattern, when the options name one."""
    for key, value in options.items():
        found = DATE_FORMATTER.match(key)
        if found:
            return found.group(1), value
    return None


def tick(freshness_ms: int, at_ms: int) -> int:
    """The scheduled time at or before ``at_ms``: full-mode refreshes are due every freshness interval
    counted from the epoch (as Flink's cron: freshness 1 hour is on the hour)."""
    return at_ms - at_ms % freshness_ms


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
    #: the WITH options kept with the definition (a partition column's date formatter)
    options: dict[str, str] = field(default_factory=dict)


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
    #: the scheduled time (:func:`tick`) the last scheduled refresh ran for (None: none recorded yet)
    scheduled_at: int | None = None


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
    #: when the next refresh is due (:func:`next_refresh_at`; None: not scheduled)
    next_refresh_at: int | None = None

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


def next_refresh_at(table: MaterializedTable, now: int) -> int | None:
    """When ``table``'s next refresh is due (epoch ms; at or before ``now``: due now), None when none is
    scheduled (suspended, or a continuous table that reflects its sources). The one place this is decided:
    REST, DESCRIBE and the refresher show it.

    A failure's backoff, or a refresh asked for, sets the time. A table never refreshed is due at once.
    Continuous mode: as soon as a source moved. Full mode: at the scheduled times (:func:`tick`), the latest
    one being due when no scheduled refresh ran for it yet and a source moved before it (a table with a
    partition date formatter: whether or not one moved, since that time names a partition of its own);
    otherwise at the next one; none while no source moved (and there is no formatter).
    """
    state = table.state
    if state.status == "suspended":
        return None
    if state.next_attempt_at is not None:
        return state.next_attempt_at
    if state.refresh_commit == 0:
        return table.created_at
    if table.effective_mode == "continuous":
        return now if table.behind else None
    partitioned = formatter(table.definition.options) is not None
    if not table.behind and not partitioned:
        return None  # refreshed at the first scheduled time after a source moves
    freshness = table.definition.freshness_ms
    latest = tick(freshness, now)
    last = state.scheduled_at if state.scheduled_at is not None else state.last_refresh_at
    moved_before = table.behind and (table.lag_ms == 0 or now - table.lag_ms < latest)
    if (last is None or last < latest) and (moved_before or partitioned):
        return latest
    return latest + freshness
