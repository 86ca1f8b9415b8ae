"""Removing chunk files that nothing needs any more: what a writer that died before committing left
behind, and what expiry and truncation made unreadable.

The catalog's database says which files are needed: those of the chunks visible at some retained
cut (from the stream's ``retained_from`` to its latest commit) or at a registered reader's offset
or after it (``CatalogStore.chunk_paths``). A chunk removed by an overwrite, a row-level commit or a
compaction stays needed until expiry moves past the commit that removed it, and never before every
registered reader has read past it. Storage may hold more (a writer killed between writing files
and committing them, an aborted transaction whose clean-up failed, commits hidden by truncation,
chunks removed before the oldest retained cut). Files under ``metadata/`` are never collected: they
are the table's Iceberg metadata, which no chunk lists (docs/iceberg.md). A grace period protects
files a live writer has written and is about to commit.
This runs next to the database (the admin host), not through the REST API: deleting files is an
operator's decision, not a client's. It deletes only regular files inside the location of the
stream it collects, reached without a symlink, and only in locations the server would give today
(``CatalogService.garbage``; the rules are catalog_api/locations.py's).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from catalog_api import storage
from catalog_api.errors import LocationNotAllowed
from catalog_api.service import CatalogService
from registry.errors import NotFound

log = logging.getLogger(__name__)

#: Default grace period: far longer than any writer takes between writing a chunk and committing it.
DEFAULT_GRACE_SECONDS = 6 * 3600.0


@dataclass(frozen=True)
class Collected:
    """The files removed (or, in a dry run, that would be removed) under one stream."""

    scope: str
    stream: str
    location: str
    paths: list[str]
    bytes: int


def _scopes(catalog: CatalogService) -> Iterator[str]:
    token: str | None = None
    while True:
        page = catalog.list_scopes(token, 500)
        yield from (s.name for s in page.items)
        if len(page.items) < 500:
            return
        token = page.continuation_token


def _streams(catalog: CatalogService, scope: str) -> Iterator[str]:
    token: str | None = None
    while True:
        page = catalog.list_streams(scope, token, 500)
        yield from (s.name for s in page.items)
        if len(page.items) < 500:
            return
        token = page.continuation_token


def garbage(catalog: CatalogService, scope: str, stream: str, grace_seconds: float) -> Collected:
    """The files under a stream that no retained cut and no registered reader needs and that are older
    than the grace period; LocationNotAllowed if the stream's location is not one the server would give."""
    location, found = catalog.garbage(scope, stream, grace_seconds)
    return Collected(scope, stream, location, sorted(f.path for f in found), sum(f.size for f in found))


def collect_garbage(catalog: CatalogService, scope: str, stream: str,
                    grace_seconds: float = DEFAULT_GRACE_SECONDS, *, dry_run: bool = False) -> Collected:
    """Delete (with ``dry_run``: only list) the files of one stream that nothing needs, older than the grace period."""
    if grace_seconds < 0:
        raise ValueError("the grace period cannot be negative")
    found = garbage(catalog, scope, stream, grace_seconds)
    if dry_run or not found.paths:
        return found
    sizes = {f.path: f.size for f in storage.list_files(found.location)}
    # The service's own pass decides what goes: the very rule the server applies, checked afresh.
    removed = sorted(catalog.collect_garbage(scope, stream, grace_seconds))
    return Collected(scope, stream, found.location, removed, sum(sizes.get(p, 0) for p in removed))


def collect_all(catalog: CatalogService, scope: str | None = None, stream: str | None = None,
                grace_seconds: float = DEFAULT_GRACE_SECONDS, *, dry_run: bool = False) -> Iterator[Collected]:
    """:func:`collect_garbage` over every stream (of ``scope``; named ``stream``), one result per stream.

    A named scope or stream that does not exist raises ScopeNotFound / StreamNotFound; without
    ``scope``, ``stream`` picks the streams of that name in every scope. A stream whose location
    is not one the server would give is skipped with a warning when walking, refused when named.
    """
    if scope is not None and stream is not None:
        yield collect_garbage(catalog, scope, stream, grace_seconds, dry_run=dry_run)
        return
    for name in [scope] if scope is not None else list(_scopes(catalog)):
        for each in list(_streams(catalog, name)):
            if stream is not None and each != stream:
                continue
            try:
                found = collect_garbage(catalog, name, each, grace_seconds, dry_run=dry_run)
            except NotFound:
                continue  # dropped while we walked the catalog: nothing left to collect
            except LocationNotAllowed as e:
                log.warning("%s", e.message)
                continue
            yield found
