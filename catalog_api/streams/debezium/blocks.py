"""One block of Debezium JSON lines decoded at once into Arrow change rows: the work of a parallel ingest's
worker processes.

A block decodes only when everything in it is ordinary: every line an event of the table's columns
(or a tombstone), ops c/r/u/d, one envelope and one schema for the whole block, PostgreSQL source
positions on every event (``lsn`` and a ``["<commit LSN>","<LSN>"]`` sequence, or no sequence at all)
or on none, keys present and non-null where the sequential decoder wants them, and every value
converting to its column. Anything else gives None, and the block is decoded by the sequential decoder
(:meth:`DebeziumDecoder.continue_batches`), which judges it as a one-pass ingest would, naming the line.
Deduplication and batching are not done here: they need the events before the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog_api.streams.debezium.decoder import DebeziumDecoder
from catalog_api.streams.debezium.values import RAW_TYPES, Hint, Unconvertible, direct, from_raw
from catalog_api.streams.row_kinds import DELETE, UPSERT

_OPS = frozenset("crud")
_D, _U = ord("d"), ord("u")
_NEWLINE, _OPEN, _CLOSE, _N, _L = (ord(c) for c in "\n{}nl")
_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, pa.ArrowInvalid, pa.ArrowTypeError,
                 pa.ArrowNotImplementedError, Unconvertible, TypeError, ValueError, OverflowError,
                 ArithmeticError, AttributeError)


@dataclass
class DecodedBlock:
    """A block's events (tombstones left out) and their change rows, in the block's order."""

    #: lines in the block
    lines: int
    tombstones: int
    #: what the block's envelope schema says of the columns ({} for the bare envelope)
    hints: dict[str, Hint]
    #: per event: its line (1-based, in the block), op (the character's code), and source position
    #: (commit LSN, LSN) when ``positioned``
    line: np.ndarray
    op: np.ndarray
    positioned: bool
    commit: np.ndarray
    lsn: np.ndarray
    #: per change row: the event it comes from (an update that changes the key gives two: the old key's
    #: delete, then the upsert), and its kind
    change_event: np.ndarray
    change_op: np.ndarray
    rows: pa.Table


def decode_block(decoder: DebeziumDecoder, data: bytes) -> tuple[int, DecodedBlock | None]:
    """(lines in ``data``, its decoded block or None when the sequential decoder must judge it)."""
    chars = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(chars == _NEWLINE)
    if data and data[-1] != _NEWLINE:
        ends = np.append(ends, len(data))  # the last line, without a line end
    if not len(ends):
        return 0, None
    try:
        block = _decode(decoder, data, chars, ends)
    except _ERRORS:
        block = None
    if block is not None:
        block.lines = len(ends)
    return len(ends), block


def _decode(decoder: DebeziumDecoder, data: bytes, chars: np.ndarray, ends: np.ndarray) -> DecodedBlock | None:
    """The block of the lines ending at ``ends`` (the offsets of their line ends in ``data``)."""
    starts = np.concatenate(([0], ends[:-1] + 1))
    filled = np.flatnonzero(starts < ends)  # the lines that are not empty (empty lines are tombstones)
    gathered = _Gathered(decoder, len(ends) - len(filled))
    starts, ends = starts[filled], ends[filled]
    # Each line is one JSON value, so that the values of many lines, decoded in one call, are the lines'
    # values in order: the lines begin a value ("{" or "n") and end one ("}" or "l"), and as many values
    # come out as there are lines (JSON text cannot span a line end between values that end and begin
    # there, so a line with two values would give one too many). Other lines go one at a time.
    first, last = chars[starts], chars[ends - 1]
    whole = bool(((first == _OPEN) | (first == _N)).all() and ((last == _CLOSE) | (last == _L)).all())
    view = memoryview(data)
    decode, decode_lines = decoder._decoder.decode, decoder._decoder.decode_lines
    for at in range(0, len(starts), _CHUNK):
        upto = min(at + _CHUNK, len(starts))
        events: list[Any] | None = None
        if whole:
            try:
                events = decode_lines(view[int(starts[at]):int(ends[upto - 1])])
            except (msgspec.DecodeError, msgspec.ValidationError):
                events = None  # decoded one at a time below, raising for the line at fault
            if events is not None and len(events) != upto - at:
                events = None
        if events is None:
            # a line that is no event of the table raises
            events = [decode(view[start:end]) for start, end in zip(starts[at:upto].tolist(),
                                                                   ends[at:upto].tolist(), strict=True)]
        if not gathered.add(events, filled[at:upto] + 1):
            return None
    return gathered.block()


#: Lines whose Python objects are turned into Arrow at once: while they are still in the CPU's caches
#: (a block's worth of objects is not; walking them again later costs more than decoding them).
_CHUNK = 512


class _Gathered:
    """A block's events, gathered a few hundred lines at a time as Arrow arrays."""

    def __init__(self, decoder: DebeziumDecoder, tombstones: int) -> None:
        self.decoder = decoder
        self.tombstones = tombstones
        self.events = 0
        self.lines: list[np.ndarray] = []
        self.ops: list[str] = []
        self.lsns: list[pa.Array] = []
        self.sequences: list[pa.Array] = []
        self.positioned: bool | None = None
        self.schema: msgspec.Raw | None = None
        self.wrapped: bool | None = None
        self.change_event: list[np.ndarray] = []
        self.change_op: list[np.ndarray] = []
        self.rows: list[pa.StructArray] = []
        self._direct = [direct(t) for t in decoder.schema.types]

    def _without_tombstones(self, lines: np.ndarray, events: list[Any]) -> tuple[np.ndarray, list[Any]]:
        """The lines and events that are not tombstones (None: an empty or "null" line, or a wrapped event's
        null payload), counting those left out."""
        if None not in events:
            return lines, events
        kept = [i for i, e in enumerate(events) if e is not None]
        self.tombstones += len(events) - len(kept)
        return lines[kept], [events[i] for i in kept]

    def add(self, events: list[Any], lines: np.ndarray) -> bool:
        """Gather the events of some of the block's lines (None for a tombstone), numbered ``lines``; false
        when they are not ordinary."""
        lines, events = self._without_tombstones(lines, events)
        if not events:
            return True
        payloads = [e.payload for e in events]
        bare = payloads.count(msgspec.UNSET)
        wrapped = bare != len(events)
        if (wrapped and bare) or (self.wrapped is not None and wrapped != self.wrapped):
            return False  # both envelopes in one block
        self.wrapped = wrapped
        if wrapped:
            schemas = [e.schema for e in events]
            if self.schema is None:
                self.schema = schemas[0]
            if schemas.count(self.schema) != len(schemas):
                return False  # the schema changes in the block: a batch converts under one
            lines, events = self._without_tombstones(lines, payloads)
            if not events:
                return True
        ops = [e.op for e in events]
        if not set(ops) <= _OPS:
            return False
        joined = "".join(ops)
        if not self._positions([e.source for e in events]):
            return False
        if not self._changes(events, np.frombuffer(joined.encode(), np.uint8)):
            return False
        self.ops.append(joined)
        self.lines.append(lines)
        return True

    def _positions(self, sources: list[Any]) -> bool:
        """Gather the events' PostgreSQL positions (false: some have none, or another kind)."""
        if None in sources:
            positioned = False
            if sources.count(None) != len(sources):
                return False
        else:
            lsns = pa.array([s.lsn for s in sources])
            positioned = not lsns.null_count
            if positioned:
                if not pa.types.is_int64(lsns.type):
                    return False
                sequences = pa.array([s.sequence for s in sources])
                if sequences.null_count == len(sequences):
                    sequences = pa.nulls(len(sequences), pa.string())
                elif sequences.null_count or not pa.types.is_string(sequences.type):
                    return False
                self.lsns.append(lsns)
                self.sequences.append(sequences)
            elif lsns.null_count != len(lsns) or any(s.file is not None or s.pos is not None for s in sources):
                return False
        if self.positioned is not None and positioned != self.positioned:
            return False
        self.positioned = positioned
        return True

    def _changes(self, events: list[Any], op: np.ndarray) -> bool:
        """Gather the events' change rows (false: an image or key is missing, or a value does not fit)."""
        decoder = self.decoder
        astuple = msgspec.structs.astuple
        key_of = decoder._key_getter
        delete_values = decoder._delete_values
        afters = [e.after for e in events]
        befores = [e.before for e in events]
        deletes = np.flatnonzero(op == _D).tolist()
        updates = np.flatnonzero(op == _U).tolist()
        count = len(events)
        if deletes:
            stand_ins = afters.copy()
            for i in deletes:
                stand_ins[i] = befores[i]
            rows = list(map(astuple, stand_ins))  # (a missing image raises TypeError: not ordinary)
            for i in deletes:
                rows[i] = delete_values(befores[i])
        else:
            rows = list(map(astuple, afters))
        change_event = np.arange(self.events, self.events + count, dtype=np.int64)
        change_op = np.full(count, UPSERT, np.int8)
        change_op[deletes] = DELETE
        if updates:
            olds = [key_of(befores[i]) for i in updates]  # (AttributeError without `before`)
            if (None in olds) if len(decoder.layout.key) == 1 else any(None in old for old in olds):
                return False
            moved = [i for i, old, new in zip(updates, olds, [key_of(afters[i]) for i in updates], strict=True)
                     if old != new]
            if moved:  # key changes: the old key's delete goes just before the upsert
                order = sorted([*range(count), *moved])
                extra = set(moved)
                rebuilt: list[tuple[Any, ...]] = []
                kinds: list[int] = []
                for i in order:
                    if i in extra:
                        extra.discard(i)
                        rebuilt.append(delete_values(befores[i]))
                        kinds.append(DELETE)
                    else:
                        rebuilt.append(rows[i])
                        kinds.append(int(change_op[i]))
                rows = rebuilt
                change_event = np.array(order, np.int64) + self.events
                change_op = np.array(kinds, np.int8)
        fields = []
        for index, (name, target, is_direct) in enumerate(zip(decoder.schema.names, decoder.schema.types,
                                                           self._direct, strict=True)):
            if is_direct:
                fields.append(pa.field(name, target))
                continue
            first = next((row[index] for row in rows if row[index] is not None), None)
            kind = RAW_TYPES.get(type(first)) if first is not None else pa.null()
            if kind is None:
                return False  # an object (e.g. a VariableScaleDecimal): the one-pass decoder converts those
            fields.append(pa.field(name, kind))
        self.rows.append(pa.array(rows, pa.struct(fields)))  # raises when a value has another JSON type
        self.change_event.append(change_event)
        self.change_op.append(change_op)
        self.events += count
        return True

    def block(self) -> DecodedBlock | None:
        """The gathered block; None when its columns do not convert (or it has no event)."""
        if not self.events:
            return None
        decoder = self.decoder
        hints: dict[str, Hint] = {}
        if self.schema is not None and len(self.schema):
            hints = decoder._schema_hints(msgspec.json.decode(self.schema))
        columns = []
        no_hint = Hint()
        whole = None
        if len({rows.type for rows in self.rows}) == 1:  # (a column all null in a part has another type there)
            whole = pa.concat_arrays(self.rows).flatten()
        for index, (name, target, is_direct) in enumerate(zip(decoder.schema.names, decoder.schema.types,
                                                           self._direct, strict=True)):
            parts = [whole[index]] if whole is not None else [rows.field(index) for rows in self.rows]
            if is_direct:
                columns.append(pa.chunked_array(parts, target).combine_chunks())
                continue
            kinds = {part.type for part in parts} - {pa.null()}
            if len(kinds) > 1:
                return None  # encoded two ways: the one-pass decoder says which line
            if not kinds:
                columns.append(pa.nulls(sum(len(part) for part in parts), target))
                continue
            kind = kinds.pop()
            raw = pa.chunked_array([part.cast(kind) for part in parts], kind).combine_chunks()
            columns.append(from_raw(raw, target, hints.get(name, no_hint), decoder.decimal_handling))
        table = pa.Table.from_arrays(columns, schema=decoder.schema)
        for name in decoder.layout.key:
            if table.column(name).null_count:
                return None
        if self.positioned:
            lsn = pa.chunked_array(self.lsns).to_numpy()
            commit = _commits(pa.concat_arrays(self.sequences))
            if commit is None:
                return None
        else:
            lsn = commit = np.zeros(0, np.int64)
        return DecodedBlock(0, self.tombstones, hints, np.concatenate(self.lines),
                            np.frombuffer("".join(self.ops).encode(), np.uint8), bool(self.positioned), commit,
                            lsn, np.concatenate(self.change_event), np.concatenate(self.change_op), table)


def _commits(sequences: pa.Array) -> np.ndarray | None:
    """The commit LSNs of ``["<commit LSN>","<LSN>"]`` sequences (0 for none); None for another form."""
    if sequences.null_count == len(sequences):
        return np.zeros(len(sequences), np.int64)
    if sequences.null_count:
        return None
    split = pc.split_pattern(sequences, '","', max_splits=1)
    head = pc.list_element(split, 0)
    if not (pc.all(pc.equal(pc.list_value_length(split), 2)).as_py()
            and pc.all(pc.starts_with(head, '["')).as_py()):
        return None
    return pc.utf8_slice_codeunits(head, 2).cast(pa.int64()).to_numpy()
