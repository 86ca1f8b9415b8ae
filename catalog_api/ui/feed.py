"""A table's change feed counted by change type, commit by commit, read on the server with a bound on bytes.

The feed is the one every client reads (``StreamReader.change_batches``: ``insert``,
``update_preimage``, ``update_postimage``, ``delete``), over the services (catalog_api/ui/reader.py).
It reads the chunks the commits add and remove and, for a primary-key table, the merged state before
the first of them: counted only when all of that is under FEED_BYTES.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from catalog_api.streams.changelog import CHANGE_TYPE, COMMIT_VERSION
from catalog_api.ui.reader import reader_of
from catalog_api.ui.services import Services
from registry.serde import SerdeError

#: The change types of a feed, in the order the page shows them.
CHANGE_TYPES = ("insert", "update_preimage", "update_postimage", "delete")
#: Bytes of chunk files a count reads at most.
FEED_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class FeedCounts:
    """Rows of the feed per commit and change type (commits without rows are left out), or why not counted."""

    after: int
    to: int
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    bytes_read: int = 0
    refused: str = ""


def feed_counts(services: Services, scope: str, table: str, after: int, to: int) -> FeedCounts:
    """The change feed of the commits in (``after``, ``to``] of ``scope.table``, counted."""
    reader = reader_of(services, scope, table)
    changes = services.catalog.changes(scope, table, after, to)
    size = sum(c.bytes for change in changes for c in [*change.added, *change.removed])
    if reader.layout.is_keyed and after > 0:
        size += sum(c.bytes for c in services.catalog.snapshot(scope, table, after, None, None).chunks)
    if size > FEED_BYTES:
        return FeedCounts(after, to, refused=f"counting the feed of commits {after + 1} to {to} reads {size:,} "
                                             f"bytes of chunks; the page reads {FEED_BYTES:,} at most")
    counts: dict[int, dict[str, int]] = {}
    try:
        for batch in reader.change_batches(after, to):
            grouped = pa.table(batch).group_by([COMMIT_VERSION, CHANGE_TYPE]).aggregate([([], "count_all")])
            for number, kind, n in zip(*(grouped.column(c).to_pylist() for c in
                                         (COMMIT_VERSION, CHANGE_TYPE, "count_all")), strict=True):
                per = counts.setdefault(int(number), dict.fromkeys(CHANGE_TYPES, 0))
                per[str(kind)] = per.get(str(kind), 0) + int(n)
    except (SerdeError, OSError, pa.ArrowException) as e:
        return FeedCounts(after, to, refused=f"the change feed cannot be read here: {e}")
    return FeedCounts(after, to, dict(sorted(counts.items(), reverse=True)), size)
