"""Batch and streaming readers: the catalog says which chunks to read, the executors read them.

A batch read asks the catalog to plan it (``planChunks``) with the pushed filters, so that the
server skips the chunks whose partition (and, for an append table, statistics) rule the filters
out before any file is opened; the reads the plan does not cover (micro-batches of a stream, change
feeds) prune on the driver with the same rules (``catalog_api.partitioning.pruning``).

Tables that change (docs/changelog-tables.md): a batch read of a primary-key table is its merged
state (read tasks by key range, :class:`scan_planning.MergePartition`; a table that is one compaction's
output is read straight through), an append table's read applies its position deletes. With the
options ``streamcat.changes.from`` (a commit number, or ``ts:<epoch micros>``),
``streamcat.changes.frominclusive``, ``streamcat.changes.to`` and ``streamcat.changes.toinclusive``
a scan reads the change feed instead, batch or streaming (offsets are commit numbers).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from catalog_api.model import Chunk
from catalog_api.partitioning.spec import PartitionSpec, SpecId
from catalog_api.streams.merge import TableLayout, needs_merge
from registry.errors import StreamcatError

from .options import OptionError, OptionKeys, SourceOptions
from .scan_planning import (
    FeedPartition,
    KeyRange,
    key_ranges,
    plan_merge,
    plan_partitions,
    prune,
)
from .task_reading import ChunkReader


class Refused(ValueError):
    """A read Streamcat refuses (a bad option, a refusal of the catalog), said in one line."""


@contextmanager
def refusals_in_one_line(what: str) -> Iterator[None]:
    """Errors of the user's making raised inside (an option the source cannot use, a 4xx refusal of the
    catalog) reach Spark as one line naming ``what`` (the table), without a Python traceback.

    Spark plans a Python source's read in a Python process of its own on the driver and shows the
    traceback that process sends back, unless ``SPARK_HIDE_TRACEBACK`` is set in it; Spark's setting for
    that (``spark.sql.execution.pyspark.udf.hideTraceback.enabled``) would hide the tracebacks of the
    user's own UDFs too, so the variable is set here, in that planning process only, for this error only
    (docs/decisions.md, "Refusals in one line"). Anything else (a bug) keeps its traceback.
    """
    try:
        yield
    except (OptionError, StreamcatError) as e:
        if isinstance(e, StreamcatError) and not 400 <= e.status < 500:
            raise
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"
        raise Refused(f"{what}: {e}") from None


def _catalog(options: SourceOptions) -> Any:
    return options.catalog_client()


class TableInfo:
    """What the driver learns of the table once per scan: its layout, its whole schema (also as JSON, with
    field ids) and its partition specs by id (every spec any live chunk may have been written under)."""

    def __init__(self, options: SourceOptions) -> None:
        table = _catalog(options).get_table(options.scope, options.stream)
        self.layout = TableLayout.from_properties(table.get("properties") or {})
        self.schema_json: dict[str, Any] = table["schema"]
        self.schema = StructType.fromJson(self.schema_json)
        self.specs: dict[SpecId, PartitionSpec] = {
            int(s["specId"]): PartitionSpec.from_json(s) for s in table.get("partitionSpecs") or ()}


def _flag(raw: str | None, default: bool) -> bool:
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"a change-feed bound's inclusiveness is true or false, not {raw!r}")
    return value == "true"


def _times(options: SourceOptions) -> list[tuple[int, int]]:
    """(number, createdAt ms) of every commit still listed, oldest first."""
    catalog = _catalog(options)
    result: list[tuple[int, int]] = []
    after = 0
    while True:
        page = catalog.commits(options.scope, options.stream, after=after, limit=1000)
        result += [(int(c["number"]), int(c["createdAt"])) for c in page]
        if len(page) < 1000:
            return result
        after = result[-1][0]


def _bound(options: SourceOptions, raw: str, inclusive: bool, lower: bool) -> int:
    """The cut a change-feed bound stands for: the feed is (lower cut, upper cut]."""
    raw = raw.strip()
    if raw.lower().startswith("ts:"):
        try:
            micros = int(raw[3:])
        except ValueError:
            raise OptionError(f"a change-feed bound ts:<epoch micros> has no number: {raw!r}") from None
        times = _times(options)
        # the commits at or before the time (strictly before, for an inclusive start or an exclusive end)
        strictly = inclusive if lower else not inclusive
        before = [n for n, ms in times if (ms * 1000 < micros if strictly else ms * 1000 <= micros)]
        return before[-1] if before else 0
    try:
        version = int(raw)
    except ValueError:
        raise OptionError(f"a change-feed bound is a commit number or ts:<epoch micros>, not {raw!r}") from None
    if version < 0:
        raise OptionError(f"a change-feed bound is a commit number, not {version}")
    if lower:
        return max(0, version - 1) if inclusive else version
    return version if inclusive else version - 1


def feed_range(options: SourceOptions) -> tuple[int, int | None]:
    """(after, to) of a change-feed scan: the commits in (after, to] (to None: up to the latest)."""
    changes = options.changes
    from_inclusive = _flag(changes.get(OptionKeys.CHANGES_FROM_INCLUSIVE), True)
    after = _bound(options, changes[OptionKeys.CHANGES_FROM], from_inclusive, lower=True)
    raw_to = changes.get(OptionKeys.CHANGES_TO)
    if raw_to is None or not raw_to.strip():
        return after, None
    return after, _bound(options, raw_to, _flag(changes.get(OptionKeys.CHANGES_TO_INCLUSIVE), True), lower=False)


def plan_feed(options: SourceOptions, info: TableInfo, after: int, to: int | None) -> list[FeedPartition]:
    """The tasks of the change feed of (after, to]: key ranges of a primary-key table (each task replays
    its keys' changes from the state at ``after``), groups of whole commits of an append table."""
    from catalog_api.api.models import ChunkInfo

    if to is not None and to <= after:
        return []
    catalog = _catalog(options)
    commits = catalog.changes(options.scope, options.stream, after, to)
    if not commits:
        return []
    layout = info.layout
    if not layout.is_keyed:
        partitions: list[FeedPartition] = []
        group: list[dict[str, Any]] = []
        rows = 0
        for commit in commits:
            group.append(commit)
            rows += sum(int(c.get("eventCount") or 0) for c in commit.get("chunks") or ())
            if rows >= options.rows_per_partition:
                partitions.append(FeedPartition(len(partitions), 0, [], group, layout, info.schema))
                group, rows = [], 0
        if group:
            partitions.append(FeedPartition(len(partitions), 0, [], group, layout, info.schema))
        return partitions
    state: list[Chunk] = catalog.snapshot(options.scope, options.stream, cut=after)[1] if after > 0 else []
    added = [ChunkInfo.model_validate(c).to_domain() for commit in commits for c in commit.get("chunks") or ()]
    key = next((f for f in info.schema.fields if f.name.lower() == layout.key[0].lower()), None)
    ranges = key_ranges(state + added, key.name if key else layout.key[0], key.dataType if key else None,
                        options.rows_per_partition)
    result: list[FeedPartition] = []
    for keys in ranges:
        mine = [c for c in state if keys.overlaps(c.stats)]
        ranged: KeyRange | None = keys if keys.low is not None or keys.high is not None else None
        result.append(FeedPartition(len(result), after, mine, commits, layout, info.schema, ranged))
    return result


class BatchReader(DataSourceReader):
    """A batch read of the table at a stream cut: the latest, ``VERSION AS OF n`` or ``TIMESTAMP AS OF t``.

    ``partitions()`` runs on the driver: it asks the catalog once for the chunks of the snapshot that
    the pushed filters do not rule out (``planChunks``) and groups them into read tasks.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.chunks = ChunkReader(options, schema)

    def partitions(self) -> Sequence[InputPartition]:
        """The read tasks of the snapshot (or of the change feed)."""
        with refusals_in_one_line(f"reading streamcat table {self.options.scope}.{self.options.stream}"):
            return self._partitions()

    def _partitions(self) -> Sequence[InputPartition]:
        options = self.options
        info = TableInfo(options)
        if OptionKeys.CHANGES_FROM in options.changes:
            return plan_feed(options, info, *feed_range(options))
        chunks = _catalog(options).plan_chunks(options.scope, options.stream, cut=options.cut,
                                               as_of_time=options.as_of_time, filters=options.filters).chunks
        layout = info.layout
        if not layout.is_keyed:
            return plan_partitions(chunks, options.rows_per_partition)
        # The plan prunes a table read by merging keys by partition only; statistics of the key columns
        # may still rule chunks out (every change of a key outside a chunk's key range is elsewhere).
        chunks = prune(chunks, options.filters, layout.key)
        if not needs_merge(chunks, layout):
            return plan_partitions(chunks, options.rows_per_partition)
        return plan_merge(chunks, layout, info.schema, options.rows_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one task (Spark asks for one task even when there are no chunks: no rows)."""
        return self.chunks.read(partition)


def _position(offset: dict[str, Any]) -> int:
    return int(offset.get("commit", 0))


def _take(commits: list[dict[str, Any]], key: str, most: int) -> list[dict[str, Any]]:
    """The first commits whose ``key`` adds up to at most ``most`` (at least one commit)."""
    taken: list[dict[str, Any]] = []
    total = 0
    for commit in commits:
        if taken and total + int(commit[key]) > most:
            break
        taken.append(commit)
        total += int(commit[key])
    return taken


def _within(commits: list[dict[str, Any]], limit: ReadLimit, waiting: bool) -> list[dict[str, Any]]:
    """The commits of the next micro-batch under a read limit; commits are never split."""
    if isinstance(limit, ReadMaxFiles):
        return commits[: max(1, limit.max_files)]
    if isinstance(limit, ReadMaxRows):
        return _take(commits, "eventCount", limit.max_rows)
    if isinstance(limit, ReadMaxBytes):
        return _take(commits, "bytes", limit.max_bytes)
    if isinstance(limit, ReadMinRows) and waiting and sum(int(c["eventCount"]) for c in commits) < limit.min_rows:
        return []  # wait for more (not under Trigger.AvailableNow, which must finish)
    return commits


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read: the offset is the number of the last commit read.

    Read limits: ``maxCommitsPerTrigger`` (announced to Spark as ``ReadMaxFiles``: for this
    source one "file" is one commit) or ``maxRowsPerTrigger`` (``ReadMaxRows``; whole commits,
    at least one). ``startingCommit``: ``earliest`` (default), ``latest`` or a commit number.

    A primary-key table streams the upserted rows of each commit; with the change-feed options
    (``streamcat.changes.from``...) a stream reads the change feed, commit after commit.
    Compactions are skipped.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.chunks = ChunkReader(options, schema)
        self._available_now: int | None = None
        self._info: TableInfo | None = None

    @property
    def info(self) -> TableInfo:
        """The table's layout and schema, asked once."""
        if self._info is None:
            self._info = TableInfo(self.options)
        return self._info

    def _last_commit(self) -> int:
        return int(_catalog(self.options).get_stream(self.options.scope, self.options.stream)["lastCommit"])

    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts."""
        if OptionKeys.CHANGES_FROM in self.options.changes:
            return {"commit": feed_range(self.options)[0]}
        starting = self.options.starting_commit
        if starting == "earliest":
            return {"commit": 0}
        if starting == "latest":
            return {"commit": self._last_commit()}
        return {"commit": int(starting) - 1}

    def getDefaultReadLimit(self) -> ReadLimit:
        """The limit the options ask for."""
        if self.options.max_commits_per_trigger:
            return ReadMaxFiles(self.options.max_commits_per_trigger)
        if self.options.max_rows_per_trigger:
            return ReadMaxRows(self.options.max_rows_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: read up to the commit that is the latest now, and stop there."""
        self._available_now = self._last_commit()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The end of the next micro-batch: whole commits after ``start``, within ``limit``."""
        position = _position(start)
        commits = _catalog(self.options).commits(self.options.scope, self.options.stream, after=position)
        if self._available_now is not None:
            commits = [c for c in commits if int(c["number"]) <= self._available_now]
        if OptionKeys.CHANGES_FROM in self.options.changes:
            to = feed_range(self.options)[1]
            if to is not None:  # a bounded change feed ends there
                commits = [c for c in commits if int(c["number"]) <= to]
        commits = _within(commits, limit, waiting=self._available_now is None)
        return {"commit": int(commits[-1]["number"])} if commits else {"commit": position}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The read tasks of the commits after ``start`` up to ``end``."""
        first, last = _position(start), _position(end)
        if last <= first:
            return []
        options = self.options
        if OptionKeys.CHANGES_FROM in options.changes:
            _after, to = feed_range(options)
            if to is not None:
                last = min(last, to)
            return plan_feed(options, self.info, first, last)
        _cut, chunks = _catalog(options).snapshot(options.scope, options.stream, cut=last, after=first)
        keyed = self.info.layout.is_keyed
        chunks = [c for c in chunks if not (c.sequence and c.sequence < c.commit)]  # compactions change no row
        info = self.info
        # A micro-batch's chunks are the commits after ``first``, which the catalog's plan does not cover.
        chunks = prune(chunks, options.filters, info.layout.key, info.specs, info.schema_json)
        return plan_partitions(chunks, options.rows_per_partition, upserts_only=keyed, with_deletes=False)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one task (Spark asks for one task even when there are no chunks: no rows)."""
        return self.chunks.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: chunks stay until the table's retention removes them."""
