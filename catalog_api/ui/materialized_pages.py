"""The materialized tables' pages, built from MaterializedService and CatalogService: their status,
the lag of their refreshes against the freshness asked for, the last refreshes, and their lineage."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from catalog_api.materialized.model import CUTS_PROPERTY, METHOD_PROPERTY, MaterializedTable
from catalog_api.model import Commit
from catalog_api.ui.charts import Chart, Graph, Node, lag_chart, lineage
from catalog_api.ui.services import Services, may_read, may_write
from registry.errors import NotFound
from registry.permissions import Access

#: Refresh commits a page looks at (the newest).
REFRESHES = 100
#: Commits of each source a page looks at for the lag before each refresh (the newest ones they read).
SOURCE_COMMITS = 1000


def every_table(services: Services, viewer: Access) -> list[MaterializedTable]:
    """Every materialized table the viewer may read, by scope and name (at most TTL_SECONDS old:
    catalog_api/ui/states.py)."""
    tables = [t for t in services.materialized_states.all() if may_read(viewer, t.scope, t.name)]
    return sorted(tables, key=lambda t: (t.scope, t.name))


@dataclass(frozen=True)
class Refresh:
    """One refresh commit: when, what it wrote, how it was made."""

    commit: int
    at: int
    rows: int
    bytes: int
    method: str
    #: how long it took (known for the last refresh only)
    duration_ms: int | None


@dataclass(frozen=True)
class MaterializedPage:
    """Everything a materialized table's page shows."""

    table: MaterializedTable
    refreshes: list[Refresh]
    lag: Chart
    graph: Graph
    may_act: bool


def _table_href(scope: str, name: str) -> str:
    return "catalog/table?" + urlencode({"scope": scope, "table": name})


def _refresh_commits(services: Services, table: MaterializedTable) -> list[Commit]:
    last = services.catalog.get_stream(table.scope, table.name).last_commit
    commits = services.catalog.commits(table.scope, table.name, max(0, last - REFRESHES), REFRESHES)
    return [c for c in commits if CUTS_PROPERTY in c.properties]


def _cuts(commit: Commit) -> dict[str, int]:
    try:
        return {str(k): int(v) for k, v in json.loads(commit.properties[CUTS_PROPERTY]).items()}
    except (ValueError, AttributeError, TypeError):
        return {}


def _lag_samples(services: Services, table: MaterializedTable, refreshes: list[Commit]) -> list[tuple[int, int]]:
    """The lag just before each refresh (how old the oldest source commit it took in was) and just
    after it, then the lag now: a saw tooth under the freshness line."""
    times: dict[str, dict[int, int]] = {}
    for source in table.definition.sources:
        newest = max((_cuts(c).get(source.key, 0) for c in refreshes), default=0)
        try:
            commits = services.catalog.commits(source.scope, source.table, max(0, newest - SOURCE_COMMITS),
                                               SOURCE_COMMITS)
        except NotFound:
            continue
        times[source.key] = {c.number: c.created_at for c in commits}
    samples: list[tuple[int, int]] = []
    before: dict[str, int] = {}
    for commit in refreshes:
        cuts = _cuts(commit)
        taken_in = [
            at for key, cut in cuts.items() for number, at in times.get(key, {}).items()
            if before.get(key, 0) < number <= cut
        ]
        if taken_in:
            samples.append((commit.created_at, max(0, commit.created_at - min(taken_in))))
        samples.append((commit.created_at, 0))
        before = cuts
    samples.append((int(time.time() * 1000), table.lag_ms))
    return samples


def _dependants(services: Services, viewer: Access, table: MaterializedTable) -> list[Node]:
    """Materialized tables that read this one, and views of its scope whose query names it."""
    found = [
        Node(0, 0, f"{s}.{n}", "materialized table", _table_href(s, n) if may_read(viewer, s, n) else "")
        for s, n in services.materialized.readers_of(table.scope, table.name)
    ]
    pattern = re.compile(rf"(?<![\w.]){re.escape(table.name)}(?!\w)", re.IGNORECASE)
    found += [
        Node(0, 0, f"{v.scope}.{v.name}", "view", "")
        for v in services.views.list_views(table.scope, None, 1000).items
        if pattern.search(v.definition.query_text)
    ]
    return found


def materialized_page(services: Services, viewer: Access, scope: str, name: str) -> MaterializedPage:
    """A materialized table's page (the caller checked read permission)."""
    table = services.materialized.get(scope, name)
    commits = _refresh_commits(services, table)
    refreshes = [
        Refresh(c.number, c.created_at, c.event_count, c.bytes, c.properties.get(METHOD_PROPERTY, "") or "-",
                table.state.last_refresh_duration_ms if c.number == table.state.refresh_commit else None)
        for c in reversed(commits)
    ]
    sources = [
        Node(0, 0, s.key, "source", _table_href(s.scope, s.table) if may_read(viewer, s.scope, s.table) else "")
        for s in table.definition.sources
    ]
    graph = lineage(sources, Node(0, 0, f"{scope}.{name}", "this table", _table_href(scope, name)),
                    _dependants(services, viewer, table))
    return MaterializedPage(
        table=table,
        refreshes=refreshes,
        lag=lag_chart(_lag_samples(services, table, commits), table.definition.freshness_ms),
        graph=graph,
        may_act=may_write(viewer, scope, name),
    )
