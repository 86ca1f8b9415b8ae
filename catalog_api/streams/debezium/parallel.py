"""Parallel Debezium ingest: worker processes decode blocks of lines into Arrow change rows
(:mod:`catalog_api.streams.debezium_blocks`); this process drops re-delivered events by source position
(vectorized), cuts the applied events into batches of ``batch_size`` and hands them to the decoder,
which pre-merges each batch by key.

The result is the one-pass decoder's (:meth:`DebeziumDecoder.batches`): the same batches, source marks
and counts. A block the workers cannot decode as ordinary (a bad line, a schema change, MySQL
positions, ...) is decoded here by the one-pass decoder, which carries on from the same state, so
errors name the same line and nothing of a failed batch is committed.

Used for deduplicate tables without a sequence field whose key columns hold JSON values as they are
(integers, strings, ...), and for input of at least ``MIN_PARALLEL_BYTES``: below that, starting the
workers costs more than they save.
"""

from __future__ import annotations

import importlib.abc
import io
import multiprocessing
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import chain
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from catalog_api.streams.debezium.blocks import DecodedBlock, decode_block
from catalog_api.streams.debezium.decoder import ChangeBatch, DebeziumDecoder, SourceMark
from catalog_api.streams.debezium.values import direct

#: Bytes of lines per block a worker decodes.
BLOCK_BYTES = 8 << 20
#: Bytes of blocks decoded or being decoded ahead of this process.
IN_FLIGHT_BYTES = 64 << 20
#: Input below this is decoded in this process.
MIN_PARALLEL_BYTES = 16 << 20
#: The environment variable that sets the default number of worker processes.
WORKERS_ENV = "STREAMCAT_INGEST_WORKERS"
#: The environment variable that overrides MIN_PARALLEL_BYTES (e.g. 0 to test small inputs in parallel).
MIN_BYTES_ENV = "STREAMCAT_INGEST_PARALLEL_BYTES"

_R = ord("r")


def default_workers() -> int:
    """Worker processes when none are asked for: $STREAMCAT_INGEST_WORKERS, else one per CPU."""
    configured = os.environ.get(WORKERS_ENV, "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            raise ValueError(f"${WORKERS_ENV} is a number of processes, not {configured!r}") from None
    return os.cpu_count() or 1


def parallel_capable(decoder: DebeziumDecoder) -> bool:
    """Whether the decoder's table can be ingested in parallel (see the module's docstring)."""
    layout = decoder.layout
    return (layout.sequence_field is None and layout.merge_engine == "deduplicate"
            and all(direct(decoder.schema.field(k).type) for k in layout.key))


# -- the workers -----------------------------------------------------------------------------------

_worker: dict[str, Any] = {}


class _WithoutPandas(importlib.abc.MetaPathFinder):
    """Makes pandas unimportable. pyarrow imports pandas (when installed) on its first conversion of Python
    values, only to ask whether they are pandas objects: 0.3 s of each worker's CPU, before its first block,
    for a module a worker never uses."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"{fullname} is not used by a decoding worker", name=fullname)
        return None


def _start_worker(decoder: DebeziumDecoder, fd: int | None) -> None:
    """A worker's own decoder (decoding a block sets its schema hints) and the file it reads blocks of."""
    if "pandas" not in sys.modules:
        # a forked worker only decodes blocks and then exits: nothing in it ever wants pandas
        sys.meta_path.insert(0, _WithoutPandas())
    _worker["decoder"] = DebeziumDecoder(decoder.schema, decoder.layout, batch_size=decoder.batch_size,
                                         decimal_handling=decoder.decimal_handling)
    _worker["fd"] = fd


def _decode_task(task: bytes | tuple[int, int]) -> tuple[int, DecodedBlock | None]:
    """Decode a block: given as its bytes, or as (offset, length) in the shared file."""
    if isinstance(task, tuple):
        offset, length = task
        task = os.pread(_worker["fd"], length, offset)
    return decode_block(_worker["decoder"], task)


# -- where the blocks come from --------------------------------------------------------------------

class _FileBlocks:
    """Blocks of a regular file from its current position, cut after a line end: workers read them."""

    def __init__(self, file: Any, block_bytes: int) -> None:
        self.fd = file.fileno()
        self.start = file.tell()
        self.size = os.fstat(self.fd).st_size
        self.block_bytes = block_bytes

    def tasks(self) -> Iterator[tuple[int, int]]:
        """(offset, length) of each block, in order."""
        offset = self.start
        while offset < self.size:
            end = min(offset + self.block_bytes, self.size)
            while end < self.size:
                tail = os.pread(self.fd, 1 << 12, end)
                found = tail.find(b"\n")
                if found >= 0:
                    end += found + 1
                    break
                end += len(tail)
            yield offset, end - offset
            offset = end

    def lines(self, task: tuple[int, int]) -> Iterable[bytes]:
        """A block's lines, as iterating the file gives them (for the one-pass decoder)."""
        offset, length = task
        return io.BytesIO(os.pread(self.fd, length, offset))


def _regular_file(events: Any) -> bool:
    if not isinstance(events, io.BufferedIOBase | io.RawIOBase):
        return False
    try:
        return stat.S_ISREG(os.fstat(events.fileno()).st_mode) and events.seekable()
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


def _item_blocks(events: Iterator[Any], block_bytes: int) -> Iterator[list[Any]]:
    """The items of an iterable in blocks of about ``block_bytes``."""
    block: list[Any] = []
    size = 0
    for item in events:
        block.append(item)
        size += len(item) if type(item) is bytes else 64
        if size >= block_bytes:
            yield block
            block, size = [], 0
    if block:
        yield block


def _as_bytes(block: list[Any]) -> bytes | None:
    """A block of lines (bytes, each with or without its line end) as one text a worker splits the same
    way; None when some item is not a line of bytes (the one-pass decoder takes those)."""
    if not all(type(item) is bytes for item in block):
        return None
    if all(item.endswith(b"\n") for item in block):
        return b"".join(block)
    return b"\n".join(item.removesuffix(b"\n") for item in block) + b"\n"


# -- this process's part ---------------------------------------------------------------------------

class _Dedup:
    """Which events of a block are re-deliveries, and the source mark after any of its events: the
    one-pass decoder's rule (see catalog_api.streams.debezium), vectorized over the block's positions.

    Events below the highest position so far are re-deliveries; above it, applied. Ties (events at the
    highest position so far: a key update's delete and create, snapshot reads, a re-delivered last
    event) go one by one, with the ops and reads applied at that position.
    """

    def __init__(self, block: DecodedBlock, mark: SourceMark | None, skip_reads: int) -> None:
        count = len(block.op)
        commit, lsn = block.commit, block.lsn
        if mark is not None:
            commit = np.concatenate(([mark.position[0]], commit))
            lsn = np.concatenate(([mark.position[1]], lsn))
        order = np.lexsort((lsn, commit))
        ordered_commit, ordered_lsn = commit[order], lsn[order]
        starts = np.ones(len(order), bool)
        starts[1:] = (ordered_commit[1:] != ordered_commit[:-1]) | (ordered_lsn[1:] != ordered_lsn[:-1])
        ranks = np.empty(len(order), np.int64)
        ranks[order] = np.cumsum(starts) - 1
        #: each distinct position, by rank
        self.positions = (ordered_commit[starts], ordered_lsn[starts])
        if mark is not None:
            self.mark_rank = int(ranks[0])
            running = np.maximum.accumulate(ranks)
            before, rank = running[:-1], ranks[1:]
        else:
            self.mark_rank = -1
            rank = ranks
            before = np.empty(count, np.int64)
            before[0] = -1
            before[1:] = np.maximum.accumulate(rank)[:-1]
        self.rank, self.before = rank, before
        self.duplicate = rank < before
        self.new = np.flatnonzero(rank > before)
        self.ties = np.flatnonzero(rank == before)
        self.mark = mark
        self.skip_reads = skip_reads
        self.ops = ops = block.op
        # per tie: (reads, ops, snapshot reads still to skip) at its position after it
        self.tie_state: dict[int, tuple[int, str, int]] = {}
        states: dict[int, list[Any]] = {}
        for i in self.ties.tolist():
            group = int(before[i])
            state = states.get(group)
            if state is None:
                state = states[group] = list(self._start(group, i))
            op = int(ops[i])
            if op == _R:
                if state[2]:
                    state[2] -= 1
                    self.duplicate[i] = True
                else:
                    state[0] += 1
            elif chr(op) in state[1]:
                self.duplicate[i] = True
            else:
                state[1] += chr(op)
            self.tie_state[i] = (state[0], state[1], state[2])

    def _start(self, group: int, index: int) -> tuple[int, str, int]:
        """(reads, ops, reads to skip) at position ``group`` before the events of the block after its first."""
        if group == self.mark_rank:
            assert self.mark is not None
            return self.mark.reads, self.mark.ops, self.skip_reads
        leader = int(self.new[np.searchsorted(self.new, index) - 1])
        op = int(self.ops[leader])
        return (1, "", 0) if op == _R else (0, chr(op), 0)

    def mark_after(self, index: int) -> tuple[SourceMark, int]:
        """The source mark after event ``index`` of the block, and the snapshot reads still to skip."""
        group = int(max(self.before[index], self.rank[index]))
        position = (int(self.positions[0][group]), int(self.positions[1][group]))
        at = np.searchsorted(self.ties, index, side="right") - 1
        tie = int(self.ties[at]) if at >= 0 else -1
        if group == self.mark_rank:
            state = self.tie_state[tie] if tie >= 0 else self._start(group, index)
        else:
            leader = int(self.new[np.searchsorted(self.new, index, side="right") - 1])
            state = self.tie_state[tie] if tie > leader else self._start(group, leader + 1)
        reads, ops, skip = state
        return SourceMark("postgresql", position, reads, ops), skip


class ParallelDecoder:
    """Batches of Debezium lines decoded by ``workers`` processes: :meth:`DebeziumDecoder.batches`, faster."""

    def __init__(self, decoder: DebeziumDecoder, workers: int, *, block_bytes: int | None = None,
                 min_bytes: int | None = None) -> None:
        if workers < 2:
            raise ValueError("parallel decoding needs at least 2 workers")
        if not parallel_capable(decoder):
            raise ValueError("this table is decoded in one process (see catalog_api.streams.debezium_parallel)")
        self.decoder = decoder
        self.workers = workers
        self.block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
        if min_bytes is None:
            configured = os.environ.get(MIN_BYTES_ENV, "").strip()
            min_bytes = int(configured) if configured.isdigit() else MIN_PARALLEL_BYTES
        self.min_bytes = min_bytes
        #: blocks the workers decoded, and blocks the one-pass decoder took
        self.fast_blocks = 0
        self.slow_blocks = 0
        #: whether the workers were started (not for input under ``min_bytes``)
        self.started = False

    def batches(self, events: Iterable[Any]) -> Iterator[ChangeBatch]:
        """The batches of ``events`` (an open binary file, or lines), as the one-pass decoder gives them;
        input of less than ``min_bytes`` is decoded by it, in this process."""
        if _regular_file(events):
            blocks = _FileBlocks(events, self.block_bytes)
            if blocks.size - blocks.start < self.min_bytes:
                yield from self.decoder.batches(events)
                return
            fd: int | None = blocks.fd
            # (a block of the file is read here again only if the one-pass decoder has to take it)
            tasks: Iterator[tuple[Any, Any]] = ((t, partial(blocks.lines, t)) for t in blocks.tasks())
        else:
            items = iter(events)
            head, size = [], 0
            for item in items:
                head.append(item)
                size += len(item) if type(item) is bytes else 64
                if size >= self.min_bytes:
                    break
            else:
                yield from self.decoder.batches(head)
                return
            fd = None
            tasks = ((_as_bytes(block), block) for block in _item_blocks(chain(head, items), self.block_bytes))
        self.started = True
        context = multiprocessing.get_context("fork")
        # Blocks in flight: enough that the workers go on decoding while this process writes and commits
        # a batch (~50 ms per block, ~0.1 s per 100,000 changes); bounded, so memory is on any input.
        window = max(2 * self.workers + 1, IN_FLIGHT_BYTES // self.block_bytes)
        with context.Pool(self.workers, initializer=_start_worker, initargs=(self.decoder, fd)) as pool:
            pending: deque[tuple[Any, Any]] = deque()
            for task, source in tasks:
                pending.append((pool.apply_async(_decode_task, (task,)) if task is not None else None, source))
                if len(pending) >= window:
                    yield from self._next(pending)
            while pending:
                yield from self._next(pending)
        final = self.decoder.take_batch()
        if final is not None:
            yield final

    def _next(self, pending: deque[tuple[Any, Any]]) -> Iterator[ChangeBatch]:
        """The batches the oldest block in flight completes."""
        result, source = pending.popleft()
        count, block = result.get() if result is not None else (len(source), None)
        if not callable(source) and count != len(source):
            block = None  # an item held a line end of its own: the one-pass decoder numbers it
        yield from self._block(block, count, source)

    def _block(self, block: DecodedBlock | None, count: int,
               items: Iterable[Any] | Callable[[], Iterable[Any]]) -> Iterator[ChangeBatch]:
        decoder = self.decoder
        mark = decoder.mark
        if block is None or block.hints != decoder._hints or (
                block.positioned and mark is not None and mark.kind != "postgresql"):
            self.slow_blocks += 1
            yield from decoder.continue_batches(items() if callable(items) else items, final=False)
            return
        self.fast_blocks += 1
        stats = decoder.stats
        base_lines, base_events, base_duplicates, base_tombstones = (stats.lines, stats.events, stats.duplicates,
                                                                     stats.tombstones)
        count_events = len(block.op)
        dedup = _Dedup(block, mark, decoder._skip_at_mark) if block.positioned else None
        applied = np.flatnonzero(~dedup.duplicate) if dedup is not None else np.arange(count_events)
        duplicates = np.cumsum(dedup.duplicate) if dedup is not None else None
        change_event = block.change_event
        need = decoder.batch_size - decoder.pending_events()
        cuts = applied[need - 1::decoder.batch_size].tolist()
        taken = 0  # events before this index are in batches

        def add(upto: int) -> None:
            """The applied events in [taken, upto] to the unfinished batch."""
            lo, hi = np.searchsorted(change_event, (taken, upto + 1))
            first, last = np.searchsorted(applied, (taken, upto + 1))
            if last <= first:
                return
            drop = dedup.duplicate[change_event[lo:hi]] if dedup is not None else None
            rows = block.rows.slice(lo, hi - lo) if hi - lo != block.rows.num_rows else block.rows
            ops = pa.array(block.change_op[lo:hi], pa.int8())
            decoder.add_changes(rows, ops, int(last - first), base_lines + int(block.line[applied[first]]),
                                drop if drop is not None and drop.any() else None)

        def account(index: int) -> None:
            """Move the decoder's mark and counts to just after event ``index``."""
            line = int(block.line[index])
            stats.lines = base_lines + line
            stats.events = base_events + index + 1
            stats.duplicates = base_duplicates + (int(duplicates[index]) if duplicates is not None else 0)
            stats.tombstones = base_tombstones + line - index - 1
            if dedup is not None:
                decoder.mark, decoder._skip_at_mark = dedup.mark_after(index)

        for cut in cuts:
            add(cut)
            account(cut)
            taken = cut + 1
            batch = decoder.take_batch()
            if batch is not None:
                yield batch
        add(count_events - 1)
        account(count_events - 1)
        stats.lines = base_lines + count
        stats.tombstones = base_tombstones + block.tombstones
