"""The wire models of ``/v1/scopes/{scope}/materializedTables``, declared once: the views read and answer
with them, and the OpenAPI document is generated from them. No Flask, werkzeug or SQLAlchemy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from catalog_api.materialized import model as domain
from catalog_api.views.wire import QueryText, ViewSchema
from registry.api.wire import Int64, Name, NullMeansDefault, Wire

Freshness = Annotated[str, Field(min_length=1, max_length=64)]
Holder = Annotated[str, Field(min_length=1, max_length=255)]
ColumnName = Annotated[str, Field(min_length=1, max_length=1024)]
OptionKey = Annotated[str, Field(min_length=1, max_length=1024)]
OptionValue = Annotated[str, Field(max_length=4096)]


class SourceTable(Wire):
    """A table a materialized table's query reads."""

    scope_name: Name
    table_name: Name


class SourceCut(Wire):
    """A source as the table's content reflects it: the cut last consumed (null before the first
    refresh), the source's newest commit, and since when (epoch ms) a commit that changed rows waits."""

    scope_name: str
    table_name: str
    consumed_cut: int | None
    latest_cut: int
    pending_since: int | None


class _QueryBody(Wire):
    """A query and what it reads, as the Spark shim analyzed it."""

    query_text: QueryText
    current_catalog: Annotated[str, Field(max_length=255)] | None = None
    current_namespace: Annotated[list[Annotated[str, Field(min_length=1, max_length=255)]], NullMeansDefault] = Field(
        default_factory=list
    )
    sources: list[SourceTable]
    #: the query's output schema (a Spark StructType in its JSON form): the table's columns
    schema_: ViewSchema = Field(alias="schema")

    def definition(self, freshness_ms: int, mode: domain.RefreshMode) -> domain.Definition:
        """The stored definition of this query."""
        return domain.Definition(
            query_text=self.query_text,
            sources=tuple(domain.SourceTable(s.scope_name, s.table_name) for s in self.sources),
            freshness_ms=freshness_ms,
            refresh_mode=mode,
            current_catalog=self.current_catalog,
            current_namespace=tuple(self.current_namespace),
        )


class CreateMaterializedTableRequest(_QueryBody):
    """``POST /v1/scopes/{scope}/materializedTables``: a table whose content is its query's result,
    refreshed so that it lags its sources by at most ``freshness`` (``'10 seconds'``, ``'1 hour'``)."""

    table_name: Name
    freshness: Freshness
    refresh_mode: domain.RefreshMode = "auto"
    primary_key: Annotated[list[ColumnName], NullMeansDefault] = Field(default_factory=list)
    format: Literal["avro", "protobuf", "json"] = "avro"
    comment: Annotated[str, NullMeansDefault] = ""
    #: identity partition columns (PARTITIONED BY)
    partitioned_by: Annotated[list[ColumnName], NullMeansDefault] = Field(default_factory=list)
    #: WITH options: ``partition.fields.<col>.date-formatter`` (kept with the definition) and the catalog's
    #: table properties (``merge-engine``, ``sequence.field``, ``fields.<col>.<option>``); others: 400
    options: Annotated[dict[OptionKey, OptionValue], NullMeansDefault] = Field(default_factory=dict)


class NewQuery(_QueryBody):
    """A new query for a materialized table; its schema must be compatible with the table's."""


class AlterMaterializedTableRequest(Wire):
    """``PATCH .../materializedTables/{table}``: any of a new freshness, refresh mode or query, and
    ``action`` ``suspend`` (no refresh starts until resumed) or ``resume``."""

    freshness: Freshness | None = None
    refresh_mode: domain.RefreshMode | None = None
    query: NewQuery | None = None
    action: Literal["suspend", "resume"] | None = None


class LeaseRequest(Wire):
    """``POST .../materializedTables/{table}/lease``: hold or renew the refresh lease for ``ttlMs``."""

    holder: Holder
    ttl_ms: Annotated[Int64, Field(ge=1, le=86_400_000)] = 60_000


class RefreshReport(Wire):
    """``POST .../materializedTables/{table}/refreshes``: what a refresh of the lease holder came to."""

    holder: Holder
    outcome: Literal["succeeded", "failed", "unchanged"]
    #: the overwrite commit holding the result (succeeded)
    commit: Annotated[Int64, Field(ge=1)] | None = None
    #: the source cuts the refresh read, by ``scope.table`` (succeeded)
    cuts: dict[str, Annotated[Int64, Field(ge=0)]] | None = None
    duration_ms: Annotated[Int64, Field(ge=0)] | None = None
    error: Annotated[str, Field(max_length=65536)] | None = None
    #: give the lease up (default) or keep it for another refresh
    release: bool = True
    #: the scheduled time (epoch ms, a multiple of the freshness) a succeeded scheduled refresh ran for
    scheduled_at: Annotated[Int64, Field(ge=0)] | None = None


class MaterializedTable(Wire):
    """A materialized table: definition, refresh mode asked for and in effect, status, source cuts and lag."""

    scope_name: str
    table_name: str
    query_text: str
    current_catalog: str | None
    current_namespace: list[str]
    #: the WITH options kept with the definition (a partition column's date formatter)
    options: dict[str, str]
    sources: list[SourceCut]
    freshness_ms: int
    refresh_mode: domain.RefreshMode
    #: ``auto`` resolved against the server's threshold (STREAMCAT_FRESHNESS_THRESHOLD)
    effective_refresh_mode: Literal["continuous", "full"]
    status: Literal["initializing", "activated", "suspended", "failed"]
    #: the table's commit holding the last refresh's result (0: none yet)
    refresh_commit: int
    last_refresh_at: int | None
    last_refresh_duration_ms: int | None
    last_error: str | None
    last_error_at: int | None
    #: failed refreshes in a row; the next attempt waits until ``nextAttemptAt``
    failures: int
    next_attempt_at: int | None
    #: how long ago (ms) the oldest source commit the content does not reflect was made
    lag_ms: int
    #: when the next refresh is due (epoch ms; at or before now: due now); null: none scheduled. Full mode
    #: refreshes at every multiple of the freshness since the epoch (docs/materialized-tables.md)
    next_refresh_at: int | None
    #: the scheduled time the last scheduled refresh ran for
    scheduled_at: int | None
    #: the lag exceeds the freshness
    stale: bool
    #: a refresh would change the content (never refreshed, a source never consumed, or commits pending)
    behind: bool
    #: how continuous mode maintains the query, as the last refresh's analysis found:
    #: ``incremental: grouped aggregate``, ``incremental: projection`` or ``full refreshes: <reason>``
    incremental_plan: str | None
    #: how the last refresh was made: ``incremental: <kind>`` or ``full: <reason>``
    last_refresh_method: str | None
    lease_holder: str | None
    lease_expires_at: int | None
    version: int
    created_at: int
    updated_at: int

    @classmethod
    def of(cls, table: domain.MaterializedTable) -> MaterializedTable:
        """The wire form of ``table``."""
        d, s = table.definition, table.state
        return cls.model_construct(
            scope_name=table.scope,
            table_name=table.name,
            query_text=d.query_text,
            current_catalog=d.current_catalog,
            current_namespace=list(d.current_namespace),
            options=dict(d.options),
            sources=[
                SourceCut.model_construct(
                    scope_name=c.source.scope, table_name=c.source.table, consumed_cut=c.consumed,
                    latest_cut=c.latest, pending_since=c.pending_since,
                )
                for c in table.sources_now
            ],
            freshness_ms=d.freshness_ms,
            refresh_mode=d.refresh_mode,
            effective_refresh_mode=table.effective_mode,
            status=s.status,
            refresh_commit=s.refresh_commit,
            last_refresh_at=s.last_refresh_at,
            last_refresh_duration_ms=s.last_refresh_duration_ms,
            last_error=s.last_error,
            last_error_at=s.last_error_at,
            failures=s.failures,
            next_attempt_at=s.next_attempt_at,
            lag_ms=table.lag_ms,
            next_refresh_at=table.next_refresh_at,
            scheduled_at=s.scheduled_at,
            stale=table.stale,
            behind=table.behind,
            incremental_plan=table.incremental_plan,
            last_refresh_method=table.last_refresh_method,
            lease_holder=s.lease_holder,
            lease_expires_at=s.lease_expires_at,
            version=table.version,
            created_at=table.created_at,
            updated_at=table.updated_at,
        )


class MaterializedTableList(Wire):
    """A page of materialized tables and the token of the next page."""

    materialized_tables: list[MaterializedTable]
    continuation_token: str
