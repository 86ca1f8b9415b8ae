"""Which cuts of a table Iceberg can express, and the manifests each one's files are in.

A cut is expressible when a plain union of its live chunks' Parquet rows is what Streamcat reads at
it (:func:`catalog_api.streams.merge.needs_merge`): every live chunk is columnar, and the table is an
append table, or a primary-key table whose live chunks are one compaction's output. Event chunks,
position deletes and a primary-key table's unmerged changes are not, until a compaction (or an
overwrite) removes them.

Files are grouped into manifests by aligned blocks of the commit numbers that added them (1, 2, 3-4,
5-8, ...: the binary decomposition of 1..cut), so a snapshot lists O(log cuts) manifests and a block's
manifest is written once and shared by every later snapshot until one of its files is removed.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from catalog_api.iceberg.model import (
    APPEND_OP,
    COMMIT_PROPERTY,
    OVERWRITE_OP,
    REPLACE_OP,
    DataFile,
    IcebergSnapshot,
    ManifestKey,
    TableHistory,
)
from catalog_api.iceberg.store import StreamFacts
from catalog_api.model import APPEND, COLUMNAR, COMPACTION, OVERWRITE, Chunk

_OPERATIONS = {APPEND: APPEND_OP, OVERWRITE: OVERWRITE_OP, COMPACTION: REPLACE_OP}


def blocks(cut: int) -> Iterator[tuple[int, int]]:
    """The aligned blocks ``(first, last)`` whose union is the commits 1..cut, oldest first."""
    start = 1
    while start <= cut:
        size = 1
        while (start - 1) % (size * 2) == 0 and start + size * 2 - 1 <= cut:
            size *= 2
        yield start, start + size - 1
        start += size


def _spec_id(chunk: Chunk) -> int:
    return int(chunk.partition["specId"]) if chunk.partition else 0


def _data_file(chunk: Chunk) -> DataFile:
    values = tuple(chunk.partition.get("values") or ()) if chunk.partition else ()
    return DataFile(chunk.path, chunk.commit, chunk.event_count, chunk.bytes, _spec_id(chunk), values)


@dataclass
class _Block:
    """The chunks one block of commits added, of one spec, and when those removed were removed."""

    chunks: list[Chunk] = field(default_factory=list)
    removals: list[int] = field(default_factory=list)

    def key_at(self, spec_id: int, first: int, last: int, cut: int) -> ManifestKey | None:
        """The manifest of this block at ``cut`` (None when all of its chunks are removed by then)."""
        removed = bisect.bisect_right(self.removals, cut)
        if removed == len(self.chunks):
            return None
        return ManifestKey(spec_id, first, last, self.removals[removed - 1] if removed else 0)


class _Index:
    """Every chunk by (spec, block) at every block size."""

    def __init__(self, chunks: list[Chunk], last: int) -> None:
        self._blocks: dict[tuple[int, int, int], _Block] = {}
        self.specs = sorted({_spec_id(c) for c in chunks}) or [0]
        levels = max(last, 1).bit_length() + 1
        for chunk in chunks:
            spec = _spec_id(chunk)
            for level in range(levels):
                size = 1 << level
                first = ((chunk.commit - 1) // size) * size + 1
                block = self._blocks.setdefault((spec, first, first + size - 1), _Block())
                block.chunks.append(chunk)
                if chunk.removed_at is not None:
                    block.removals.append(chunk.removed_at)
        for block in self._blocks.values():
            block.removals.sort()

    def manifests(self, cut: int) -> tuple[ManifestKey, ...]:
        found = []
        for first, last in blocks(cut):
            for spec in self.specs:
                block = self._blocks.get((spec, first, last))
                key = block.key_at(spec, first, last, cut) if block is not None else None
                if key is not None:
                    found.append(key)
        return tuple(found)

    def files(self, key: ManifestKey) -> list[DataFile]:
        block = self._blocks.get((key.spec_id, key.first, key.last))
        if block is None:
            return []
        return [_data_file(c) for c in block.chunks if c.removed_at is None or c.removed_at > key.removal]


def history(facts: StreamFacts, keyed: bool) -> TableHistory:
    """The expressible snapshots of a table whose stream is ``facts`` (``keyed``: a primary-key table)."""
    visible = [c for c in facts.chunks if c.commit > facts.truncated_at]
    index = _Index(visible, facts.last_commit)
    added: dict[int, list[Chunk]] = {}
    removed: dict[int, list[Chunk]] = {}
    for c in visible:
        added.setdefault(c.commit, []).append(c)
        if c.removed_at is not None:
            removed.setdefault(c.removed_at, []).append(c)
    first_cut = max(facts.truncated_at + 1, facts.retained_from, 1)
    live: dict[str, Chunk] = {}
    odd = 0  # live chunks that are not columnar
    commits: Counter[int] = Counter()  # live chunks by the commit that added them
    distinct = 0  # commits that added a live chunk
    uncompacted = 0  # live chunks that sort at their own commit (no compaction's output)
    rows = 0
    snapshots: list[IcebergSnapshot] = []
    previous_cut: int | None = None
    last_updated = 0
    for commit in facts.commits:
        n = commit.number
        last_updated = max(last_updated, commit.created_at)
        for c in removed.get(n, ()):
            if live.pop(c.path, None) is not None:
                odd -= c.kind != COLUMNAR
                commits[c.commit] -= 1
                distinct -= commits[c.commit] == 0
                uncompacted -= not (c.sequence and c.sequence < c.commit)
                rows -= c.event_count
        for c in added.get(n, ()):
            if c.removed_at is not None and c.removed_at <= n:
                continue
            live[c.path] = c
            odd += c.kind != COLUMNAR
            commits[c.commit] += 1
            distinct += commits[c.commit] == 1
            uncompacted += not (c.sequence and c.sequence < c.commit)
            rows += c.event_count
        if n < first_cut:
            continue
        expressible = odd == 0 and (
            not keyed or not live or (distinct == 1 and uncompacted == 0)
        )
        if not expressible:
            continue
        gap = previous_cut is None or previous_cut != n - 1
        operation = _OPERATIONS.get(commit.kind, OVERWRITE_OP)
        if gap and operation != OVERWRITE_OP and previous_cut is not None:
            operation = OVERWRITE_OP  # the commits in between changed rows Iceberg never showed
        summary = {
            "operation": operation,
            COMMIT_PROPERTY: str(n),
            "total-records": str(rows),
            "total-data-files": str(len(live)),
            "total-delete-files": "0",
        }
        snapshots.append(IcebergSnapshot(n, commit.created_at, operation, previous_cut, index.manifests(n), summary))
        previous_cut = n
    return TableHistory(tuple(snapshots), facts.last_commit, last_updated, index.files)
