"""Which cuts of a table Iceberg can express, and the manifests each one's files are in.

A cut is expressible when its live chunks read, as Iceberg reads them, exactly what Streamcat reads at it
(:func:`catalog_api.streams.merge.needs_merge`): every live chunk is columnar or (an append table) a
position-deletes chunk written in Iceberg's form too (:mod:`catalog_api.streams.row_kinds`; its statistics
hold ``file_path`` bounds), and the table is an append table, or a primary-key table whose live chunks are
one compaction's output. Event chunks, position deletes written before they had Iceberg's form and a
primary-key table's unmerged changes are not, until a compaction (or an overwrite) removes them.

Iceberg matches position delete files to data files by partition. A deletes chunk names rows of chunks of
any partition, so it is listed once per partition (of any spec) of the chunks live at its commit that it
names (its statistics' ``"files"``, kept for up to 64), or that it may name (whose paths lie within its
``path`` bounds): each listing applies it to the files of that partition only.

Files are grouped into manifests by what they hold (data or deletes), spec and aligned blocks of the commit
numbers that added them (1, 2, 3-4, 5-8, ...: the binary decomposition of 1..cut), so a snapshot lists
O(log cuts) manifests and a block's manifest is written once and shared by every later snapshot until one of
its files is removed.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from catalog_api.iceberg.model import (
    APPEND_OP,
    COMMIT_PROPERTY,
    DATA_CONTENT,
    DELETE_OP,
    OVERWRITE_OP,
    POSITION_DELETES_CONTENT,
    REPLACE_OP,
    DataFile,
    IcebergSnapshot,
    ManifestKey,
    TableHistory,
)
from catalog_api.iceberg.store import StreamFacts
from catalog_api.model import APPEND, COLUMNAR, COMPACTION, DELETES, OVERWRITE, ROW_LEVEL, Chunk

_OPERATIONS = {APPEND: APPEND_OP, OVERWRITE: OVERWRITE_OP, COMPACTION: REPLACE_OP}
#: A partition of some spec: (spec id, values).
_Partition = tuple[int, tuple[Any, ...]]


def blocks(cut: int) -> Iterator[tuple[int, int]]:
    """The aligned blocks ``(first, last)`` whose union is the commits 1..cut, oldest first."""
    start = 1
    while start <= cut:
        size = 1
        while (start - 1) % (size * 2) == 0 and start + size * 2 - 1 <= cut:
            size *= 2
        yield start, start + size - 1
        start += size


def _partition(chunk: Chunk) -> _Partition:
    if not chunk.partition:
        return 0, ()
    return int(chunk.partition["specId"]), tuple(chunk.partition.get("values") or ())


def _bounds(chunk: Chunk, column: str) -> tuple[str, str] | None:
    """The lowest and highest value of a string ``column`` of a position-deletes chunk (None: not recorded)."""
    found = (chunk.stats.get("columns") or {}).get(column) or {}
    low, high = found.get("min"), found.get("max")
    return (low, high) if isinstance(low, str) and isinstance(high, str) else None


def iceberg_deletes(chunk: Chunk) -> bool:
    """Whether a position-deletes chunk is an Iceberg position delete file too (written with ``file_path``)."""
    return _bounds(chunk, "file_path") is not None and _bounds(chunk, "path") is not None


@dataclass(frozen=True)
class _Entry:
    """A file as one manifest lists it, and when its chunk was removed."""

    file: DataFile
    removed_at: int | None


@dataclass
class _Block:
    """The entries one block of commits added, of one content and spec, and when those removed were removed."""

    entries: list[_Entry] = field(default_factory=list)
    removals: list[int] = field(default_factory=list)

    def key_at(self, content: int, spec_id: int, first: int, last: int, cut: int) -> ManifestKey | None:
        """The manifest of this block at ``cut`` (None when all of its entries are removed by then)."""
        removed = bisect.bisect_right(self.removals, cut)
        if removed == len(self.entries):
            return None
        return ManifestKey(spec_id, first, last, self.removals[removed - 1] if removed else 0, content)


class _Index:
    """Every entry by (content, spec, block) at every block size."""

    def __init__(self, entries: list[_Entry], last: int) -> None:
        self._blocks: dict[tuple[int, int, int, int], _Block] = {}
        self.kinds = sorted({(e.file.content, e.file.spec_id) for e in entries}) or [(DATA_CONTENT, 0)]
        levels = max(last, 1).bit_length() + 1
        for entry in entries:
            kind = (entry.file.content, entry.file.spec_id)
            for level in range(levels):
                size = 1 << level
                first = ((entry.file.commit - 1) // size) * size + 1
                block = self._blocks.setdefault((*kind, first, first + size - 1), _Block())
                block.entries.append(entry)
                if entry.removed_at is not None:
                    block.removals.append(entry.removed_at)
        for block in self._blocks.values():
            block.removals.sort()

    def manifests(self, cut: int) -> tuple[ManifestKey, ...]:
        found = []
        for first, last in blocks(cut):
            for content, spec in self.kinds:
                block = self._blocks.get((content, spec, first, last))
                key = block.key_at(content, spec, first, last, cut) if block is not None else None
                if key is not None:
                    found.append(key)
        return tuple(found)

    def files(self, key: ManifestKey) -> list[DataFile]:
        block = self._blocks.get((key.content, key.spec_id, key.first, key.last))
        if block is None:
            return []
        return [e.file for e in block.entries if e.removed_at is None or e.removed_at > key.removal]


def _data_entry(chunk: Chunk) -> _Entry:
    spec, values = _partition(chunk)
    return _Entry(DataFile(chunk.path, chunk.commit, chunk.event_count, chunk.bytes, spec, values), chunk.removed_at)


def _delete_entries(chunk: Chunk, live: _Live) -> list[_Entry]:
    """A position-deletes chunk's entries: one per partition of the data chunks ``live`` at its commit that
    it may name: those its statistics name (``"files"``), or when they name none, those whose paths lie
    within its ``path`` bounds."""
    paths, uris = _bounds(chunk, "path"), _bounds(chunk, "file_path")
    if paths is None or uris is None:
        return []  # not an Iceberg position delete file: no cut it is live at is shown
    named = chunk.stats.get("files")
    if isinstance(named, list):
        chunks = [live.chunks[p] for p in named if p in live.chunks]
        partitions = sorted({_partition(c) for c in chunks if c.kind == COLUMNAR}, key=repr)
    else:
        partitions = live.partitions_within(*paths)
    return [_Entry(DataFile(chunk.path, chunk.commit, chunk.event_count, chunk.bytes, spec, values,
                            POSITION_DELETES_CONTENT, uris), chunk.removed_at)
            for spec, values in partitions]


def _readable(c: Chunk, keyed: bool) -> bool:
    """Whether Iceberg readers read chunk ``c`` of a table as Streamcat does (``keyed``: a primary-key table):
    a columnar chunk, or an append table's position deletes written in Iceberg's form."""
    return c.kind == COLUMNAR or (c.kind == DELETES and not keyed and iceberg_deletes(c))


@dataclass
class _Live:
    """What the chunks live at a cut of a table (``keyed``: a primary-key table) come to for Iceberg."""

    keyed: bool
    chunks: dict[str, Chunk] = field(default_factory=dict)
    odd: int = 0  # chunks Iceberg cannot read as they are
    commits: Counter[int] = field(default_factory=Counter)  # chunks by the commit that added them
    distinct: int = 0  # commits that added a live chunk
    uncompacted: int = 0  # chunks that sort at their own commit (no compaction's output)
    rows: int = 0  # rows of data files
    deletes: int = 0  # position delete files
    deleted: int = 0  # the positions they name
    paths: dict[_Partition, list[str]] = field(default_factory=dict)  # sorted paths of data chunks by partition

    def _count(self, c: Chunk, sign: int) -> None:
        self.odd += sign * (not _readable(c, self.keyed))
        self.commits[c.commit] += sign
        self.distinct += sign * (self.commits[c.commit] == (1 if sign > 0 else 0))
        self.uncompacted += sign * (not (c.sequence and c.sequence < c.commit))
        if c.kind == DELETES:
            self.deletes += sign
            self.deleted += sign * c.event_count
        else:
            self.rows += sign * c.event_count
        if c.kind == COLUMNAR:
            paths = self.paths.setdefault(_partition(c), [])
            if sign > 0:
                bisect.insort(paths, c.path)
            else:
                del paths[bisect.bisect_left(paths, c.path)]

    def remove(self, c: Chunk) -> None:
        if self.chunks.pop(c.path, None) is not None:
            self._count(c, -1)

    def add(self, c: Chunk) -> None:
        self.chunks[c.path] = c
        self._count(c, 1)

    @property
    def data_files(self) -> int:
        return len(self.chunks) - self.deletes

    def partitions_within(self, low: str, high: str) -> list[_Partition]:
        """The partitions (in a stable order) with a live data chunk whose path is between ``low`` and ``high``."""
        found = []
        for partition, paths in self.paths.items():
            at = bisect.bisect_left(paths, low)
            if at < len(paths) and paths[at] <= high:
                found.append(partition)
        return sorted(found, key=repr)


def _operation(kind: str, added: list[Chunk]) -> str:
    """Iceberg's operation of a commit of ``kind`` that added ``added``: a row-level commit that adds no row
    is a ``delete`` (position deletes, or whole files removed), one that adds rows an ``overwrite``."""
    if kind == ROW_LEVEL:
        return OVERWRITE_OP if any(c.kind != DELETES and c.event_count for c in added) else DELETE_OP
    return _OPERATIONS.get(kind, OVERWRITE_OP)


def history(facts: StreamFacts, keyed: bool, versions: Mapping[int, int] | None = None) -> TableHistory:
    """The expressible snapshots of a table whose stream is ``facts`` (``keyed``: a primary-key table);
    ``versions`` maps the group's encoding ids to schema versions, so that each snapshot names the schema
    its rows were written with (that of the newest commit at or before it that wrote rows)."""
    visible = [c for c in facts.chunks if c.commit > facts.truncated_at]
    added: dict[int, list[Chunk]] = {}
    removed: dict[int, list[Chunk]] = {}
    for c in visible:
        added.setdefault(c.commit, []).append(c)
        if c.removed_at is not None:
            removed.setdefault(c.removed_at, []).append(c)
    first_cut = max(facts.truncated_at + 1, facts.retained_from, 1)
    live = _Live(keyed)
    entries: list[_Entry] = []
    shown: list[tuple[int, int, str, int | None, dict[str, str], int | None]] = []
    previous_cut: int | None = None
    written_with: int | None = None
    known = versions or {}
    last_updated = 0
    for commit in facts.commits:
        n = commit.number
        last_updated = max(last_updated, commit.created_at)
        for c in removed.get(n, ()):
            live.remove(c)
        now = added.get(n, [])
        written = [known[e] for c in now if c.kind != DELETES for e in c.encoding_ids if e in known]
        written_with = max(written, default=written_with)
        for c in now:
            if c.kind == DELETES and not keyed:
                entries.extend(_delete_entries(c, live))
            elif c.kind == COLUMNAR:
                entries.append(_data_entry(c))
        for c in now:
            if c.removed_at is None or c.removed_at > n:
                live.add(c)
        if n < first_cut:
            continue
        expressible = live.odd == 0 and (
            not keyed or not live.chunks or (live.distinct == 1 and live.uncompacted == 0)
        )
        if not expressible:
            continue
        operation = _operation(commit.kind, now)
        if previous_cut != n - 1 and operation != OVERWRITE_OP and previous_cut is not None:
            operation = OVERWRITE_OP  # the commits in between changed rows Iceberg never showed
        summary = {
            "operation": operation,
            COMMIT_PROPERTY: str(n),
            "total-records": str(live.rows),
            "total-data-files": str(live.data_files),
            "total-delete-files": str(live.deletes),
            "total-position-deletes": str(live.deleted),
        }
        shown.append((n, commit.created_at, operation, previous_cut, summary, written_with))
        previous_cut = n
    index = _Index(entries, facts.last_commit)
    snapshots = tuple(IcebergSnapshot(n, at, operation, parent, index.manifests(n), summary, schema)
                      for n, at, operation, parent, summary, schema in shown)
    return TableHistory(snapshots, facts.last_commit, last_updated, index.files)
