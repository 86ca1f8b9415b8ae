"""The rules of materialized tables: creation beside their table, the lifecycle (suspend, resume, alter),
the refresher's lease, what a refresh records, and who may commit to such a table.

A materialized table is a catalog table (stream, schema group, Spark schema) plus a row of
``materialized_tables``. Its content changes only by refreshes: each is ONE overwrite commit of the
refresher holding the lease, carrying the source cuts it read (commit properties), so the content
always equals the query at those cuts (docs/materialized-tables.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from catalog_api.materialized.errors import LeaseHeld, MaterializedWriteRefused
from catalog_api.materialized.model import (
    CUTS_PROPERTY,
    DEFAULT_FRESHNESS_THRESHOLD_MS,
    HOLDER_PROPERTY,
    METHOD_PROPERTY,
    PLAN_PROPERTY,
    TABLE_PROPERTY,
    Definition,
    MaterializedTable,
    RefreshMode,
    SourceState,
    Status,
    backoff_ms,
    effective_mode,
    next_refresh_at,
    split_options,
)
from catalog_api.materialized.store import Progress, Record, SqlMaterializedStore
from catalog_api.model import COMPACTION
from catalog_api.schema.fieldids import without_field_ids
from catalog_api.service import CatalogService, TableRequest
from catalog_api.store import Page
from registry.db import now_ms
from registry.errors import BadRequest, Conflict

Outcome = Literal["succeeded", "failed", "unchanged"]
#: A table's commits read at a time when looking for a refresh commit its refresher did not record.
_SCAN = 100


class MaterializedService:
    """Materialized tables of the catalog's scopes, over a store and the catalog service."""

    def __init__(
        self, store: SqlMaterializedStore, catalog: CatalogService,
        threshold_ms: int = DEFAULT_FRESHNESS_THRESHOLD_MS,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.threshold_ms = threshold_ms

    # -- reading ----------------------------------------------------------------------------------

    def _views(self, records: Sequence[Record]) -> list[MaterializedTable]:
        """The records with their sources' state now and their lag, read from the catalog at once."""
        progress = self.store.progress(records)
        now = now_ms()
        return [self._view(r, progress, now) for r in records]

    def _view(self, record: Record, progress: Progress, now: int) -> MaterializedTable:
        sources = []
        for s in record.definition.sources:
            consumed = record.state.cuts.get(s.key)
            # A dropped source has nothing pending (latest 0).
            latest = progress.latest.get((s.scope, s.table), 0)
            sources.append(SourceState(s, consumed, latest, progress.pending.get((s.scope, s.table, consumed or 0))))
        pending = [s.pending_since for s in sources if s.pending_since is not None]
        if record.state.refresh_commit == 0 and not pending:
            pending = [record.created_at]  # never refreshed: behind since it was created
        lag = max(0, now - min(pending)) if pending else 0
        mode = effective_mode(record.definition.refresh_mode, record.definition.freshness_ms, self.threshold_ms)
        # What the last refresh commit says of the query's plan and of how it was made: the analysis is
        # Spark's (the refresher's), so the commit it wrote is where the server learns it.
        facts = progress.refresh_properties.get((record.scope, record.name), {})
        plan, method = facts.get(PLAN_PROPERTY), facts.get(METHOD_PROPERTY)
        table = MaterializedTable(
            record.scope, record.name, record.definition, record.state, mode, record.version,
            record.created_at, record.updated_at, tuple(sources), lag, plan, method,
        )
        return replace(table, next_refresh_at=next_refresh_at(table, now))

    def get(self, scope: str, name: str) -> MaterializedTable:
        """A materialized table with its sources' state now and its lag."""
        return self._views([self.store.get(scope, name)])[0]

    def find(self, scope: str, name: str) -> MaterializedTable | None:
        """The materialized table, or None when ``scope.name`` is none (a plain table, or nothing)."""
        record = self.store.find(scope, name)
        return None if record is None else self._views([record])[0]

    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's materialized tables (each with its lag)."""
        page = self.store.list_tables(scope, token, limit)
        return Page(self._views(page.items), page.continuation_token)

    def all_tables(self) -> list[MaterializedTable]:
        """Every materialized table (for /metrics and the UI), in a constant number of queries."""
        return self._views(self.store.all_tables())

    def readers_of(self, scope: str, name: str) -> list[tuple[str, str]]:
        """The materialized tables whose query reads ``scope.name``, as (scope, name); no lag is read."""
        return [(r.scope, r.name) for r in self.store.all_tables()
                if any((s.scope, s.table) == (scope, name) for s in r.definition.sources)]

    # -- lifecycle --------------------------------------------------------------------------------

    def _check(self, scope: str, name: str, definition: Definition) -> None:
        if definition.freshness_ms <= 0:
            raise BadRequest("freshness must be positive")
        for source in definition.sources:
            if (source.scope, source.table) == (scope, name):
                raise BadRequest(f"the query of {scope}.{name} reads {scope}.{name} itself")
            self.catalog.get_table(source.scope, source.table)  # TableNotFound when it is not a table

    def create(
        self, scope: str, name: str, definition: Definition, schema: dict[str, Any],
        primary_key: Sequence[str] = (), table_format: str = "avro", comment: str = "",
        partitioned_by: Sequence[str] = (),
    ) -> MaterializedTable:
        """Create the table (schema: the query's, as Spark derived it; identity partitions by
        ``partitioned_by``) and its definition, initializing. The definition's options are the WITH
        options: the table's properties among them go to the table, the rest stay with the definition.

        Two transactions: the table, then the definition; when the second fails the table is dropped
        again, so that a refused definition leaves nothing.
        """
        self._check(scope, name, definition)
        try:
            own, table_properties = split_options(definition.options, partitioned_by)
        except ValueError as e:
            raise BadRequest(f"WITH: {e}") from None
        definition = replace(definition, options=own)
        properties = {**table_properties, TABLE_PROPERTY: "true"}
        if primary_key:
            properties["primary-key"] = ",".join(primary_key)
        partitioning = ", ".join(f"`{c.replace('`', '``')}`" for c in partitioned_by) or None
        # The query's columns may carry their sources' field ids, which mean nothing in this table: it gets
        # its own (at once when partitioned, else at its first column change).
        self.catalog.create_table(
            scope, TableRequest(name, without_field_ids(schema), table_format, comment=comment,
                                properties=properties, partitioning=partitioning)
        )
        try:
            record = self.store.insert(scope, name, definition)
        except BaseException:
            self.catalog.drop_table(scope, name, purge=True)
            raise
        return self._views([record])[0]

    def alter(
        self, scope: str, name: str, *, freshness_ms: int | None = None, refresh_mode: RefreshMode | None = None,
        query: tuple[Definition, dict[str, Any]] | None = None,
    ) -> MaterializedTable:
        """Change the freshness, the refresh mode or the query. A new query (its definition and the
        schema Spark derived for it) must keep the table's columns compatible: the schema group's policy
        decides (IncompatibleSchema, 409). The content stays the old query's until the next refresh,
        which then recomputes (the recorded cuts are dropped)."""
        current = self.store.get(scope, name)
        definition = current.definition
        if query is not None:
            definition = replace(query[0], options=definition.options)  # WITH options are the table's
        definition = replace(
            definition,
            freshness_ms=definition.freshness_ms if freshness_ms is None else freshness_ms,
            refresh_mode=definition.refresh_mode if refresh_mode is None else refresh_mode,
        )
        self._check(scope, name, definition)
        if query is not None:
            self.catalog.replace_schema(scope, name, query[1])

        def change(record: Record, _now: int) -> Record:
            state = record.state
            if query is not None:
                state = replace(state, cuts={})
            return replace(record, definition=definition, state=state)

        return self._views([self.store.update(scope, name, change)])[0]

    def suspend(self, scope: str, name: str) -> MaterializedTable:
        """Stop refreshing the table (a refresh under way may still commit; none starts after)."""

        def change(record: Record, _now: int) -> Record:
            return replace(record, state=replace(record.state, status="suspended"))

        return self._views([self.store.update(scope, name, change)])[0]

    def resume(self, scope: str, name: str) -> MaterializedTable:
        """Refresh the table again: activated (initializing if it was never refreshed), failures forgotten."""

        def change(record: Record, _now: int) -> Record:
            status: Status = "activated" if record.state.refresh_commit else "initializing"
            return replace(record, state=replace(record.state, status=status, failures=0, next_attempt_at=None))

        return self._views([self.store.update(scope, name, change)])[0]

    def request_refresh(self, scope: str, name: str) -> MaterializedTable:
        """Make the table due now (its next attempt is now, a failure's backoff cut short): a running
        refresher refreshes it at its next pass, however small its lag. Nothing changes for a table that
        reflects its sources (a refresh would change nothing); Conflict for a suspended one. Its next
        refresh clears the request."""
        current = self.get(scope, name)
        if current.state.status != "suspended" and not current.behind:
            return current

        def change(record: Record, now: int) -> Record:
            if record.state.status == "suspended":
                raise Conflict(f"{scope}.{name} is suspended; resume it first")
            return replace(record, state=replace(record.state, next_attempt_at=now))

        return self._views([self.store.update(scope, name, change)])[0]

    # -- the refresher ----------------------------------------------------------------------------

    def _adopted(self, scope: str, name: str, refresh_commit: int) -> tuple[int, dict[str, int], int] | None:
        """The newest refresh commit of the table past ``refresh_commit``, as (number, cuts, time): a
        refresher that died after its commit and before recording it left one."""
        found = None
        after = refresh_commit
        while True:
            commits = self.catalog.commits(scope, name, after, _SCAN)
            for c in commits:
                if CUTS_PROPERTY in c.properties:
                    try:
                        cuts = {str(k): int(v) for k, v in json.loads(c.properties[CUTS_PROPERTY]).items()}
                    except (ValueError, AttributeError):
                        continue
                    found = (c.number, cuts, c.created_at)
            if len(commits) < _SCAN:
                return found
            after = commits[-1].number

    def acquire_lease(self, scope: str, name: str, holder: str, ttl_ms: int) -> MaterializedTable:
        """Hold (or renew) the table's lease for ``ttl_ms``: LeaseHeld while another holder's lease
        runs, Conflict for a suspended table. A refresh commit its holder made but did not record (it
        died in between) is adopted first."""
        if not holder:
            raise BadRequest("a lease needs a holder")
        if ttl_ms <= 0:
            raise BadRequest("a lease needs a positive time to live")
        current = self.store.get(scope, name)
        adopted = self._adopted(scope, name, current.state.refresh_commit)

        def change(record: Record, now: int) -> Record:
            state = record.state
            if state.status == "suspended":
                raise Conflict(f"{scope}.{name} is suspended; resume it first")
            if state.lease_holder not in (None, holder) and (state.lease_expires_at or 0) > now:
                raise LeaseHeld(
                    f"refresher {state.lease_holder!r} holds the lease of {scope}.{name} for another "
                    f"{((state.lease_expires_at or 0) - now) / 1000:.1f} s"
                )
            if adopted is not None and adopted[0] > state.refresh_commit:
                status = "activated" if state.status in ("initializing", "failed") else state.status
                state = replace(state, refresh_commit=adopted[0], cuts=adopted[1], last_refresh_at=adopted[2],
                                status=status)
            return replace(record, state=replace(state, lease_holder=holder, lease_expires_at=now + ttl_ms))

        return self._views([self.store.update(scope, name, change)])[0]

    def record_refresh(
        self, scope: str, name: str, holder: str, outcome: Outcome, *, commit: int | None = None,
        cuts: Mapping[str, int] | None = None, duration_ms: int | None = None, error: str | None = None,
        release: bool = True, scheduled_at: int | None = None,
    ) -> MaterializedTable:
        """Record what a refresh of the lease holder came to: ``succeeded`` (its commit and the cuts it
        read: the content now equals the query at those cuts), ``failed`` (the error; the next attempt
        waits a backoff that doubles per failure in a row) or ``unchanged`` (no source had moved).
        With ``release`` the lease is given up. A refresh that ran for a scheduled time (succeeded or
        unchanged) names it (``scheduled_at``): the next scheduled one is due at the time after it."""

        def change(record: Record, now: int) -> Record:
            state = record.state
            if state.lease_holder != holder:
                raise LeaseHeld(
                    f"{holder!r} does not hold the lease of {scope}.{name} (held by {state.lease_holder!r})"
                )
            keep = state.status == "suspended"
            if outcome == "succeeded":
                if commit is None or cuts is None:
                    raise BadRequest("a succeeded refresh names its commit and the cuts it read")
                state = replace(
                    state, status=state.status if keep else "activated", cuts=dict(cuts),
                    refresh_commit=max(commit, state.refresh_commit), last_refresh_at=now,
                    last_refresh_duration_ms=duration_ms, failures=0, next_attempt_at=None,
                )
            elif outcome == "failed":
                failures = state.failures + 1
                state = replace(
                    state, status=state.status if keep else "failed", last_error=(error or "unknown error")[:8000],
                    last_error_at=now, failures=failures, next_attempt_at=now + backoff_ms(failures),
                )
            elif state.next_attempt_at is not None and state.next_attempt_at <= now:
                # Unchanged: the attempt that was due (a refresh asked for, a backoff run out) was made.
                state = replace(state, next_attempt_at=None)
            if outcome != "failed" and scheduled_at is not None:
                state = replace(state, scheduled_at=max(scheduled_at, state.scheduled_at or scheduled_at))
            if release:
                state = replace(state, lease_holder=None, lease_expires_at=None)
            return replace(record, state=state)

        return self._views([self.store.update(scope, name, change)])[0]

    def guard_commit(self, scope: str, stream: str, properties: Mapping[str, str], kind: str) -> None:
        """Refuse a commit to a materialized table unless it comes from the refresher holding its
        (unexpired) lease; compactions, which change no row, are let through."""
        if kind == COMPACTION:
            return
        record = self.store.find(scope, stream)
        if record is None:
            return
        holder = properties.get(HOLDER_PROPERTY)
        state = record.state
        if holder is None:
            raise MaterializedWriteRefused(
                f"{scope}.{stream} is a materialized table: its content is the result of its query, written "
                "only by its refreshes; change the query with CALL <catalog>.system.alter_materialized_table"
            )
        if holder != state.lease_holder or (state.lease_expires_at or 0) <= now_ms():
            raise MaterializedWriteRefused(
                f"refresher {holder!r} no longer holds the lease of {scope}.{stream} "
                f"(held by {state.lease_holder!r}); its refresh is dropped"
            )

