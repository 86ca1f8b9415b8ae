"""The overview: how much there is (namespaces, groups, tables, materialized tables and how many are
stale) and what happened lately (schemas added, commits, refreshes, failures), as the viewer may see it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from catalog_api.ui.catalog_pages import scopes
from catalog_api.ui.materialized_pages import every_table
from catalog_api.ui.services import Services, may_read
from registry.ids import Namespace
from registry.permissions import EVERYTHING, Access, Permission, Resource

#: Events the overview lists.
RECENT = 15
#: Rows of each kind looked at for them (the viewer may read fewer).
LOOKED_AT = 50
#: Names read at a time to count the groups and tables a viewer with grants on single ones may read.
COUNTED = 5000


@dataclass(frozen=True)
class Event:
    """Something that happened: when, what kind, what it says, and the page it leads to."""

    at: int
    kind: str
    text: str
    href: str


@dataclass(frozen=True)
class Overview:
    """The overview's counts and events."""

    namespaces: int
    groups: int
    tables: int
    materialized: int
    stale: int
    events: list[Event]


def _group_href(namespace: str, group: str) -> str:
    return "registry/group?" + urlencode({"namespace": namespace, "group": group})


def _table_href(page: str, scope: str, table: str) -> str:
    return f"{page}?" + urlencode({"scope": scope, "table": table})


def _count_groups(services: Services, viewer: Access, namespace: str, total: int) -> int:
    if viewer.allows(Permission.READ, Resource.of_namespace(namespace)):
        return total
    count, after = 0, ""
    while True:
        names = services.registry.group_names(Namespace(namespace), "", after, COUNTED)
        count += sum(1 for name in names if may_read(viewer, namespace, name))
        if len(names) < COUNTED:
            return count
        after = names[-1]


def _count_tables(services: Services, viewer: Access) -> int:
    if viewer.allows(Permission.READ, EVERYTHING):
        return services.catalog.count_tables()
    count = 0
    for scope in scopes(services, viewer):
        token = None
        while True:
            page = services.catalog.list_table_entries(scope.name, token, COUNTED)
            count += sum(1 for t in page.items if may_read(viewer, scope.name, t.name))
            if len(page.items) < COUNTED:
                break
            token = page.continuation_token
    return count


def overview(services: Services, viewer: Access) -> Overview:
    """The overview as ``viewer`` may see it."""
    namespaces = [(n, c) for n, c in services.registry.namespaces() if may_read(viewer, n)]
    materialized = every_table(services, viewer)
    events = [
        Event(at, "schema", f"{ns or '(default)'}/{group} version {v.version} (id {v.id})", _group_href(ns, group))
        for ns, group, v, at in services.registry.recent_versions(LOOKED_AT)
        if may_read(viewer, ns, group)
    ]
    events += [
        Event(c.created_at, "commit", f"{scope}.{stream} commit {c.number} ({c.kind}, {c.event_count} rows)",
              _table_href("catalog/table", scope, stream))
        for scope, stream, c in services.catalog.recent_commits(LOOKED_AT)
        if may_read(viewer, scope, stream)
    ]
    for t in materialized:
        href = _table_href("materialized/table", t.scope, t.name)
        if t.state.last_refresh_at is not None:
            events.append(Event(t.state.last_refresh_at, "refresh", f"{t.scope}.{t.name} refreshed", href))
        if t.state.last_error_at is not None:
            events.append(Event(t.state.last_error_at, "failure", f"{t.scope}.{t.name} failed to refresh", href))
    events.sort(key=lambda e: e.at, reverse=True)
    return Overview(
        namespaces=len(namespaces),
        groups=sum(_count_groups(services, viewer, n, c) for n, c in namespaces),
        tables=_count_tables(services, viewer),
        materialized=len(materialized),
        stale=sum(1 for t in materialized if t.stale),
        events=events[:RECENT],
    )
