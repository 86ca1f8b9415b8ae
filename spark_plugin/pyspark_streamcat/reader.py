"""Batch and streaming readers: the catalog says which chunks to read, the executors read them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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

from .options import SourceOptions
from .reading import ChunkPartition, ChunkReader, plan_partitions, prune


def _catalog(options: SourceOptions) -> Any:
    return options.catalog_client()


class BatchReader(DataSourceReader):
    """A batch read of the table at a stream cut: the latest, ``VERSION AS OF n`` or ``TIMESTAMP AS OF t``.

    ``partitions()`` runs on the driver: it asks the catalog for the snapshot once, skips the
    chunks the pushed filters rule out and groups the rest into read tasks.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.chunks = ChunkReader(options, schema)

    def partitions(self) -> Sequence[InputPartition]:
        """The read tasks of the snapshot."""
        options = self.options
        _cut, chunks = _catalog(options).snapshot(options.scope, options.stream, cut=options.cut,
                                                  as_of_time=options.as_of_time)
        return plan_partitions(prune(chunks, options.filters), options.rows_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one task (Spark asks for one task even when there are no chunks: no rows)."""
        return self.chunks.read(partition) if isinstance(partition, ChunkPartition) else iter(())


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
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.chunks = ChunkReader(options, schema)
        self._available_now: int | None = None

    def _last_commit(self) -> int:
        return int(_catalog(self.options).get_stream(self.options.scope, self.options.stream)["lastCommit"])

    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts."""
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
        commits = _within(commits, limit, waiting=self._available_now is None)
        return {"commit": int(commits[-1]["number"])} if commits else {"commit": position}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The read tasks of the commits after ``start`` up to ``end``."""
        first, last = _position(start), _position(end)
        if last <= first:
            return []
        options = self.options
        _cut, chunks = _catalog(options).snapshot(options.scope, options.stream, cut=last, after=first)
        return plan_partitions(prune(chunks, options.filters), options.rows_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one task (Spark asks for one task even when there are no chunks: no rows)."""
        return self.chunks.read(partition) if isinstance(partition, ChunkPartition) else iter(())

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: chunks stay until the table's retention removes them."""
