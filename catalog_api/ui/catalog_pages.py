"""The catalog's pages, built from CatalogService, ViewService and MaterializedService: scopes, a
scope's tables, views and materialized tables, and a table's page (columns, keys, partitioning,
commit timeline, partitions, change counts per commit, preview)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog_api.materialized.model import TABLE_PROPERTY
from catalog_api.model import Commit, PartitionSummary, Table, TableEntry
from catalog_api.streams.row_kinds import DELETES_KIND
from catalog_api.ui.charts import Chart, commit_timeline
from catalog_api.ui.feed import FeedCounts, feed_counts
from catalog_api.ui.preview import Preview, preview
from catalog_api.ui.services import Services, may_read
from registry.permissions import Access

#: Items per page of a scope's lists.
PAGE_SIZE = 100
#: Commits a table page lists and charts (the newest).
TIMELINE_COMMITS = 100
#: Commits whose change feed a table page counts by change type, when asked (the newest).
FEED_COMMITS = 20


@dataclass(frozen=True)
class ScopeEntry:
    """A scope the viewer may read in."""

    name: str
    comment: str


def scopes(services: Services, viewer: Access) -> list[ScopeEntry]:
    """Every scope in which the viewer may read something."""
    found: list[ScopeEntry] = []
    token = None
    while True:
        page = services.catalog.list_scopes(token, PAGE_SIZE)
        found += [ScopeEntry(s.name, s.comment) for s in page.items if may_read(viewer, s.name)]
        if len(page.items) < PAGE_SIZE:
            return found
        token = page.continuation_token


@dataclass(frozen=True)
class ScopePage:
    """A page of a scope's tables (those of them that are materialized apart) and its views."""

    name: str
    tables: list[TableEntry]
    views: list[str]
    materialized: list[str]
    next_token: str


def scope_page(services: Services, viewer: Access, scope: str, token: str | None) -> ScopePage:
    """One page of the scope's tables, with its views and materialized tables."""
    tables = services.catalog.list_table_entries(scope, token, PAGE_SIZE)
    views = services.views.list_views(scope, None, 1000)
    readable = [t for t in tables.items if may_read(viewer, scope, t.name)]
    return ScopePage(
        scope,
        readable,
        [v.name for v in views.items],
        # The table property says which are materialized, without asking each for its sources' state.
        [t.name for t in readable if t.properties.get(TABLE_PROPERTY) == "true"],
        tables.continuation_token if len(tables.items) == PAGE_SIZE else "",
    )


@dataclass(frozen=True)
class Column:
    """A column of a table."""

    name: str
    type: str
    nullable: bool
    key: bool
    comment: str


@dataclass(frozen=True)
class ChangeCounts:
    """What one commit changed, from the chunks it added and removed: rows written, rows its
    position deletes remove, rows of the chunks it removed."""

    number: int
    kind: str
    written: int
    deleted: int
    removed: int


@dataclass(frozen=True)
class TablePage:
    """Everything a table's page shows."""

    table: Table
    columns: list[Column]
    partition_fields: list[str]
    commits: list[Commit]
    timeline: Chart
    partitions: list[PartitionSummary]
    changes: list[ChangeCounts]
    preview: Preview | None
    materialized: bool
    #: the change feed of the last FEED_COMMITS commits counted by change type, when asked for
    feed: FeedCounts | None


def _type(spark_type: Any) -> str:
    if isinstance(spark_type, str):
        return spark_type
    if isinstance(spark_type, dict):
        kind = spark_type.get("type")
        if kind == "array":
            return f"array<{_type(spark_type.get('elementType'))}>"
        if kind == "map":
            return f"map<{_type(spark_type.get('keyType'))}, {_type(spark_type.get('valueType'))}>"
        if kind == "struct":
            inner = ", ".join(f"{f.get('name')}: {_type(f.get('type'))}" for f in spark_type.get("fields", []))
            return f"struct<{inner}>"
    return str(spark_type)


def columns(table: Table) -> list[Column]:
    """The table's columns (its Spark schema), with which are its key."""
    return [
        Column(
            str(f.get("name")), _type(f.get("type")), bool(f.get("nullable", True)), f.get("name") in table.primary_key,
            str((f.get("metadata") or {}).get("comment", "")),
        )
        for f in table.schema.get("fields", [])
    ]


def _change_counts(services: Services, scope: str, name: str, after: int) -> list[ChangeCounts]:
    found = []
    for change in services.catalog.changes(scope, name, after):
        written = sum(c.event_count for c in change.added if c.kind != DELETES_KIND)
        deleted = sum(c.event_count for c in change.added if c.kind == DELETES_KIND)
        removed = sum(c.event_count for c in change.removed if c.kind != DELETES_KIND)
        found.append(ChangeCounts(change.number, change.kind, written, deleted, removed))
    return found


def table_page(services: Services, scope: str, name: str, cut: int | None, feed: bool = False) -> TablePage:
    """A table's page (the caller checked read permission); a preview when ``cut`` is given, the
    change feed's counts when ``feed``."""
    table = services.catalog.get_table(scope, name)
    last = table.stream.last_commit
    after = max(table.stream.retained_from, last - TIMELINE_COMMITS, 0)
    commits = services.catalog.commits(scope, name, after, TIMELINE_COMMITS)
    chart = commit_timeline([(c.number, c.created_at, c.event_count, c.bytes, c.kind) for c in commits])
    partitions = services.catalog.partitions(scope, name).partitions if last else []
    return TablePage(
        table=table,
        columns=columns(table),
        partition_fields=[f"{f.transform}({f.source})" for f in table.partition_spec.fields],
        commits=list(reversed(commits)),
        timeline=chart,
        partitions=partitions,
        changes=list(reversed(_change_counts(services, scope, name, after))) if last else [],
        preview=preview(services, scope, name, cut) if cut is not None and cut > 0 else None,
        materialized=services.materialized.find(scope, name) is not None,
        feed=feed_counts(services, scope, name, max(after, last - FEED_COMMITS), last) if feed and last else None,
    )
