"""Conflict checks of row-level and compaction commits, and the commit loop that runs them.

The rules are those of ``docs/changelog-tables.md`` ("Conflicts"). The committing client checks
the commits made since the cut its statement read (``CatalogClient.changes``), then commits with
``expected_last_commit`` = the newest commit it checked; when that compare-and-set loses a race it
checks the newer commits and tries again. So a commit is refused only for a real conflict:

* a ``row-level`` commit that read cut r conflicts with any commit in (r, now] that is an
  ``overwrite``; on an append table, with a ``row-level`` commit whose position deletes name a
  chunk it also deletes from (and with a compaction that removed such a chunk); on a primary-key
  table, with any commit that changed a key it changes;
* a ``compaction`` with base cut m conflicts with any ``overwrite`` in (m, now], with an
  append table's ``row-level`` commits there that delete rows (those that only add rows are kept
  like appends), and with a commit that removed a chunk it removes (another compaction);
* appends never conflict.

What a commit touches is read from its chunk files: the key columns of change and data chunks
(event chunks decoded through the registry), the chunk paths of position-deletes chunks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.api import models as wire
from catalog_api.client import CatalogClient
from catalog_api.errors import CommitConflict
from catalog_api.model import Chunk, CommitOptions
from catalog_api.streams.chunks import split_event_chunk
from catalog_api.streams.committing import CommitInDoubt, commit_resolved
from catalog_api.streams.row_kinds import DELETES_KIND, read_position_deletes
from registry.client import RegistryClient

#: How often the commit loop re-checks after losing the compare-and-set before it gives up.
DEFAULT_ATTEMPTS = 50
#: Keys named in a conflict message.
_SAMPLE = 3

ROW_LEVEL, COMPACTION, OVERWRITE = "row-level", "compaction", "overwrite"


@dataclass(frozen=True)
class Intent:
    """What a commit is about to change, for the conflict check.

    ``cut`` is the read cut of a row-level commit or the base cut of a compaction. ``keys`` (a
    table of the key columns; primary-key tables) are the keys a row-level commit changes;
    ``deleted_from`` (append tables) the chunks its position deletes name; ``removes`` the chunk
    paths the commit removes.
    """

    kind: str
    cut: int
    keys: pa.Table | None = None
    deleted_from: frozenset[str] = frozenset()
    removes: tuple[str, ...] = ()


def as_chunk(found: Any) -> Chunk:
    """A chunk of a ``changes`` answer (a wire dict or already a Chunk) as a Chunk."""
    if isinstance(found, Chunk):
        return found
    return wire.ChunkInfo.model_validate(found).to_domain()


def delete_quietly(location: str | None, paths: Iterable[str]) -> None:
    """Remove files a failed write left (those already gone are no error)."""
    if not location:
        return
    fs, root = storage.resolve(location)
    for path in paths:
        with contextlib.suppress(FileNotFoundError, OSError):
            fs.delete_file(f"{root}/{path}")


@dataclass
class Table:
    """One table (a stream and its key) as the conflict checks see it."""

    catalog: CatalogClient
    scope: str
    stream: str
    location: str
    key: tuple[str, ...] = ()
    registry: RegistryClient | None = None
    _keys: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    _deleted: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _deserializer: Any = field(default=None, repr=False)

    @classmethod
    def of(cls, catalog: CatalogClient, scope: str, stream: str, registry: RegistryClient | None = None) -> Table:
        """The table ``scope.stream`` as the catalog describes it (its location and primary key)."""
        answer = catalog.get_table(scope, stream)
        key = answer.get("primaryKey")
        if key is None:
            from catalog_api.streams.row_kinds import primary_key

            key = primary_key(answer.get("properties") or {})
        return cls(catalog, scope, stream, str(answer["stream"]["location"]), tuple(key), registry)

    @property
    def name(self) -> str:
        """``scope.table`` as users write it."""
        return f"{self.scope}.{self.stream}"

    @property
    def is_keyed(self) -> bool:
        """Whether the table has a primary key."""
        return bool(self.key)

    # -- what chunks touch ---------------------------------------------------------------------------

    def changed_keys(self, chunks: Iterable[Chunk]) -> pa.Table:
        """The key columns of every row the chunks upsert or delete (one table; duplicates kept)."""
        tables = [self._chunk_keys(c) for c in chunks if c.kind != DELETES_KIND]
        tables = [t for t in tables if t.num_rows]
        if not tables:
            return pa.table({k: pa.array([], pa.null()) for k in self.key})
        if len(tables) == 1:
            return tables[0]
        first = tables[0].schema
        try:
            return pa.concat_tables([t.cast(first) for t in tables])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return pa.Table.from_pylist([row for t in tables for row in t.to_pylist()])

    def deleted_from(self, chunks: Iterable[Chunk]) -> frozenset[str]:
        """The chunk paths that the position-deletes chunks among ``chunks`` delete rows of."""
        found: set[str] = set()
        for chunk in chunks:
            if chunk.kind != DELETES_KIND:
                continue
            cached = self._deleted.get(chunk.path)
            if cached is None:
                cached = self._deleted[chunk.path] = frozenset(read_position_deletes(self.location, [chunk.path]))
            found |= cached
        return frozenset(found)

    def _chunk_keys(self, chunk: Chunk) -> pa.Table:
        cached = self._keys.get(chunk.path)
        if cached is None:
            cached = self._event_keys(chunk) if chunk.kind == "events" else self._columnar_keys(chunk)
            self._keys[chunk.path] = cached
        return cached

    def _columnar_keys(self, chunk: Chunk) -> pa.Table:
        fs, root = storage.resolve(self.location)
        with fs.open_input_file(f"{root}/{chunk.path}") as source:
            parquet = pq.ParquetFile(source)
            present = {n.lower(): n for n in parquet.schema_arrow.names}
            missing = [k for k in self.key if k.lower() not in present]
            if missing:
                raise CommitConflict(f"chunk {chunk.path} of table {self.name} has no key column(s) "
                                     f"{', '.join(missing)}: its changes cannot be checked")
            table = parquet.read(columns=[present[k.lower()] for k in self.key])
        return table.rename_columns(list(self.key))

    def _event_keys(self, chunk: Chunk) -> pa.Table:
        from registry.serde import Deserializer

        if self.registry is None:
            raise ValueError(f"table {self.name} holds event chunks: checking them needs a registry client")
        if self._deserializer is None:
            from catalog_api.streams.reader import scoped_registry

            self._deserializer = Deserializer(scoped_registry(self.registry, self.scope), self.stream, as_dict=True)
        fs, root = storage.resolve(self.location)
        with fs.open_input_file(f"{root}/{chunk.path}") as f:
            data = bytes(f.read())
        columns: dict[str, list[Any]] = {k: [] for k in self.key}
        for record in self._deserializer.deserialize_many(split_event_chunk(data)):
            lowered = {str(n).lower(): v for n, v in record.items()}
            for k in self.key:
                columns[k].append(record[k] if k in record else lowered.get(k.lower()))
        return pa.table(columns) if columns else pa.table({})

    # -- the rules -------------------------------------------------------------------------------------

    def conflict(self, commit: dict[str, Any], intent: Intent, why: str) -> CommitConflict:
        """The error of ``intent`` losing to ``commit``: names the table and the commit, says to retry."""
        what = "statement" if intent.kind == ROW_LEVEL else "compaction"
        read = "read" if intent.kind == ROW_LEVEL else "compacted"
        return CommitConflict(
            f"commit conflict on table {self.name}: commit {commit['number']} ({commit.get('kind') or 'append'}), "
            f"made after cut {intent.cut} that this {what} {read}, {why}. Nothing was committed; the {what} "
            "can be retried (it reads the table again)")

    def check(self, commits: Sequence[dict[str, Any]], intent: Intent) -> None:
        """Raise CommitConflict if one of ``commits`` (made after ``intent.cut``) conflicts with ``intent``."""
        for commit in commits:
            kind = commit.get("kind") or ("overwrite" if commit.get("overwrite") else "append")
            if kind == COMPACTION:
                continue
            if kind == OVERWRITE:
                raise self.conflict(commit, intent, "replaced every row of the table")
            chunks = [as_chunk(c) for c in commit.get("chunks") or ()]
            removed = [as_chunk(c) for c in commit.get("removed") or ()]
            if intent.kind == COMPACTION:
                # Position deletes name rows of the chunks a compaction rewrites: they would name nothing
                # after it. (Rows a row-level commit only adds are kept, like an append's.)
                deletes = any(c.kind == DELETES_KIND for c in chunks) or removed
                if kind == ROW_LEVEL and not self.is_keyed and deletes:
                    raise self.conflict(commit, intent, "deleted rows of chunks this compaction rewrites")
                continue
            if self.is_keyed:
                if intent.keys is None or not intent.keys.num_rows:
                    continue
                # a chunk a commit removes changes (drops) its keys too
                common = common_keys(intent.keys, self.changed_keys([*chunks, *removed]))
                if common:
                    shown = ", ".join(_show(k) for k in common[:_SAMPLE])
                    raise self.conflict(commit, intent, f"changed key(s) {shown} that this statement changes too")
            elif kind == ROW_LEVEL and intent.deleted_from:
                both = sorted((self.deleted_from(chunks) | {c.path for c in removed}) & intent.deleted_from)
                if both:
                    raise self.conflict(commit, intent, f"deleted rows of chunk {both[0]}, which this statement "
                                                        "rewrites too")

    def check_live(self, visible: Sequence[Chunk], intent: Intent, last: int) -> None:
        """Raise CommitConflict if a chunk the intent deletes from or removes is no longer visible at
        ``last`` (a compaction, an overwrite or a row-level commit removed it)."""
        live = {c.path for c in visible}
        gone = sorted((intent.deleted_from | frozenset(intent.removes)) - live)
        if not gone:
            return
        verb = "rewrites" if intent.kind == ROW_LEVEL else "removes"
        raise self.conflict(self._remover(intent.cut, last, set(gone)), intent,
                            f"removed chunk {gone[0]}, which this {_noun(intent)} {verb} too")

    def _remover(self, after: int, last: int, gone: set[str]) -> dict[str, Any]:
        """The first commit in (after, last] that removed one of ``gone``: a non-compaction commit that
        lists it as removed, else the first compaction."""
        for change in self.catalog.changes(self.scope, self.stream, after, last):
            if gone & {as_chunk(c).path for c in change.get("removed") or ()}:
                return change
        for commit in self.catalog.commits(self.scope, self.stream, after=after):
            if int(commit["number"]) > last:
                break
            if commit.get("kind") == COMPACTION:
                return commit
        return {"number": last, "kind": "unknown"}


def _noun(intent: Intent) -> str:
    return "statement" if intent.kind == ROW_LEVEL else "compaction"


def _show(key: tuple[Any, ...]) -> str:
    return repr(key[0]) if len(key) == 1 else "(" + ", ".join(repr(v) for v in key) + ")"


def common_keys(mine: pa.Table, other: pa.Table) -> list[tuple[Any, ...]]:
    """Keys (tuples of the key columns' values) present in both tables; empty when none."""
    if not mine.num_rows or not other.num_rows:
        return []
    names = mine.column_names
    try:
        target = pa.schema([pa.field(f.name, f.type) for f in mine.schema])
        right = other.select(names).cast(target)
        left = mine.cast(target)
        joined = left.join(right.group_by(names).aggregate([]), keys=names, join_type="left semi")
        return [tuple(row[n] for n in names) for row in joined.slice(0, _SAMPLE).to_pylist()]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        theirs = set(zip(*(other.column(n).to_pylist() for n in names), strict=True))
        return [k for k in zip(*(mine.column(n).to_pylist() for n in names), strict=True) if k in theirs][:_SAMPLE]


def commit_checked(
    table: Table,
    chunks: Sequence[Chunk],
    intent: Intent,
    *,
    properties: dict[str, str] | None = None,
    writer_id: str | None = None,
    writer_sequence: int | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
) -> dict[str, Any]:
    """Check ``intent`` against every commit since its cut, then commit ``chunks`` with compare-and-set;
    when another commit wins the race, check that one too and try again. Returns the Commit answer.

    Raises CommitConflict for a real conflict (nothing committed) or when the table keeps moving for
    ``attempts`` tries. A lost answer is resolved from the catalog by ``writer_id`` and ``writer_sequence``
    (``catalog_api.streams.committing``; give them, to make that possible); CommitInDoubt says the commit
    may have been made, so the caller must not delete its files.
    """
    catalog = table.catalog
    checked = intent.cut
    # A primary-key table's compaction conflicts only with commits that remove chunks it removes (an
    # overwrite, another compaction), which the server refuses by itself: it commits without the
    # compare-and-set, so that a stream of appends cannot starve it.
    cas = not (intent.kind == COMPACTION and table.is_keyed)
    for _ in range(attempts):
        last, visible = catalog.snapshot(table.scope, table.stream)
        if last > checked:
            table.check(catalog.changes(table.scope, table.stream, checked, last), intent)
            checked = last
        table.check_live(visible, intent, last)
        row_level = intent.kind == ROW_LEVEL
        options = CommitOptions(
            kind=intent.kind, writer_id=writer_id, writer_sequence=writer_sequence, properties=properties or {},
            read_cut=intent.cut if row_level else None, base_cut=None if row_level else intent.cut,
            expected_last_commit=last if cas else None, removes=intent.removes)
        try:
            # A lost answer is resolved from the catalog by the writer id (CommitInDoubt when it cannot be).
            return commit_resolved(catalog, table.scope, table.stream, chunks, options).answer
        except CommitConflict:
            now = int(catalog.get_stream(table.scope, table.stream)["lastCommit"])
            if now == last:
                raise  # not a lost race: the server refused the commit itself
            # else: check the commits that won (the next round names the one that conflicts, if any)
    raise CommitConflict(f"commit conflict on table {table.name}: other commits kept winning the race for "
                         f"{attempts} attempts; the {_noun(intent)} can be retried")


__all__ = [
    "COMPACTION",
    "DEFAULT_ATTEMPTS",
    "OVERWRITE",
    "ROW_LEVEL",
    "CommitInDoubt",
    "Intent",
    "Table",
    "as_chunk",
    "commit_checked",
    "common_keys",
    "delete_quietly",
]
