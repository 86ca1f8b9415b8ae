"""Debezium events committed to a primary-key table exactly once per writer id (the package's docstring)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from catalog_api.client import CatalogClient
from catalog_api.streams.debezium.decoder import (
    DEFAULT_BATCH_SIZE,
    DebeziumDecoder,
    DebeziumError,
    SourceMark,
)
from catalog_api.streams.writer import StreamWriter
from registry.client import RegistryClient

#: Commit properties an ingest records: the position of the last applied event, and how many events
#: the commit applied.
POSITION_PROPERTY = "debezium.position"
EVENTS_PROPERTY = "debezium.events"


@dataclass
class IngestResult:
    """What an ingest did."""

    commits: int = 0
    #: batches a previous run had committed already (re-sent, answered as duplicates)
    repeated: int = 0
    lines: int = 0
    events: int = 0
    applied: int = 0
    duplicates: int = 0
    tombstones: int = 0
    rows: int = 0
    seconds: float = 0.0
    mark: SourceMark | None = None
    writer_id: str = ""
    last_commit: int | None = None
    #: processes that could decode lines (1: this one; more when the input was large enough for them)
    workers: int = 1


def ingest(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str, events: Iterable[Any], *,
           writer_id: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE, decimal_handling: str = "precise",
           on_commit: Callable[[IngestResult], None] | None = None, workers: int | None = None) -> IngestResult:
    """Apply Debezium events (JSON lines as bytes/str, or parsed dicts; None is a tombstone) to the
    primary-key table ``scope.table``: one commit per ``batch_size`` applied events.

    With a ``writer_id`` that ingested before, events up to the position its last commit recorded are
    skipped (exactly once across re-runs). On a :class:`DebeziumError` the batch being gathered is
    dropped (nothing of it visible) and the error propagates; batches before it stay committed.
    ``on_commit`` is called after each commit with the running result.

    ``workers`` processes decode lines (default: ``$STREAMCAT_INGEST_WORKERS``, else one per CPU; 1: this
    process alone) when ``events`` is an open binary file or lines of bytes of at least 16 MB and the table
    deduplicates without a sequence field (see :mod:`catalog_api.streams.debezium_parallel`); the result
    is the same either way.
    """
    if workers is not None and workers < 1:
        raise ValueError("workers must be positive")
    started = time.perf_counter()
    # The batch's rows are many small objects that live until the batch commits: the cyclic garbage
    # collector would walk them over and over (it costs as much as parsing), and ingest makes no cycles.
    collecting = gc.isenabled()
    gc.disable()
    writer = StreamWriter(catalog, registry, scope, table, writer_id=writer_id, max_chunk_events=1 << 62)
    result = IngestResult(writer_id=writer.writer_id)
    if writer.dead_letters is not None:  # rows a DLQ rule refuses say who wrote them
        writer.dead_letters.writer = writer_id or "streamcat ingest"
    try:
        layout = writer.layout
        if layout is None:
            raise DebeziumError(f"{scope}.{table} is not a primary-key table (no 'primary-key' property)")
        mark = None
        if writer_id is not None:
            last = writer.last_commit()
            recorded = (last or {}).get("properties", {}).get(POSITION_PROPERTY)
            if recorded:
                mark = SourceMark.from_property(recorded)
        decoder = DebeziumDecoder(writer.changes_schema(), layout, batch_size=batch_size, mark=mark,
                                  decimal_handling=decimal_handling)
        writer.change_dictionary = _dictionary_columns(decoder.schema)
        batches = decoder.batches(events)
        fanned = None
        if workers != 1:
            from catalog_api.streams.debezium import parallel

            count = parallel.default_workers() if workers is None else workers
            if count > 1 and parallel.parallel_capable(decoder):
                fanned = parallel.ParallelDecoder(decoder, count)
                batches = fanned.batches(events)
        for batch in batches:
            # the decoder pre-merged it, but for the engines whose pre-merge is the writer's (every change kept)
            writer.write_changes(batch.table, batch.ops, premerged=decoder.premerges)
            properties = {EVENTS_PROPERTY: str(batch.events)}
            if batch.mark is not None:
                properties[POSITION_PROPERTY] = batch.mark.to_property()
            answer = writer.flush(properties=properties)
            if answer is not None:
                result.commits += 1
                result.repeated += int(bool(answer.get("duplicate")))
                result.last_commit = int(answer["number"])
            result.rows += batch.table.num_rows
            _account(result, decoder, started)
            if on_commit is not None:
                on_commit(result)
        _account(result, decoder, started)
        if fanned is not None and fanned.started:
            result.workers = fanned.workers
        return result
    except BaseException:
        writer.abort()
        raise
    finally:
        writer._shut()
        if collecting:
            gc.enable()


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns of an ingest's change chunks worth Parquet's dictionary encoding: text and bytes, whose
    values repeat (names, states, codes). Numbers, decimals and times of changed rows mostly do not, and
    building a dictionary of them only to give it up doubled the time of writing a chunk."""
    return [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]


def _account(result: IngestResult, decoder: DebeziumDecoder, started: float) -> None:
    stats = decoder.stats
    result.lines, result.events, result.applied = stats.lines, stats.events, stats.applied
    result.duplicates, result.tombstones = stats.duplicates, stats.tombstones
    result.mark = decoder.mark
    result.seconds = time.perf_counter() - started
