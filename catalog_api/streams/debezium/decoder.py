"""Debezium events decoded into pre-merged batches of a table's columns, and the source positions that
make a re-delivered event recognisable (the package's docstring)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from catalog_api.streams.debezium.values import (
    DECIMAL_MODES,
    RAW_TYPES,
    Hint,
    Unconvertible,
    convert,
    direct,
    from_raw,
    schema_hints,
)
from catalog_api.streams.merge import TableLayout
from catalog_api.streams.row_kinds import DELETE, RETRACT, UPSERT

#: Changes per commit by default.
DEFAULT_BATCH_SIZE = 10_000
_OPS = {"c": UPSERT, "r": UPSERT, "u": UPSERT, "d": DELETE}
_REPLICA_HINT = ("the key must be in `before`: for PostgreSQL run ALTER TABLE ... REPLICA IDENTITY FULL "
                 "(without it an update has no `before`, and a delete's holds only the primary key)")


class DebeziumError(ValueError):
    """An event that cannot be applied; ``line`` is its 1-based line (or position in the iterable)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        self.reason = message
        super().__init__(f"line {line}: {message}" if line is not None else message)


# -- source positions ------------------------------------------------------------------------------

Position = tuple[Any, ...]


def source_position(source: Any) -> tuple[str, Position] | None:
    """(connector kind, position) of an event's ``source`` block, ordered as the source's log; None when
    the source has no position this module knows (see the module's docstring)."""
    if not isinstance(source, dict):
        return None
    lsn = source.get("lsn")
    if lsn is not None:
        return "postgresql", _pg_position(int(lsn), source.get("sequence"))
    file, pos = source.get("file"), source.get("pos")
    if file is not None and pos is not None:
        return "mysql", (str(file), int(pos), int(source.get("row") or 0))
    return None


def _pg_position(lsn: int, sequence: Any) -> Position:
    if sequence is None:
        return (0, lsn)
    if isinstance(sequence, str) and sequence.startswith('["') and sequence.endswith('"]'):
        parts = sequence[2:-2].split('","')
        if len(parts) == 2:
            return (int(parts[0]), int(parts[1]))
    parsed = msgspec.json.decode(sequence) if isinstance(sequence, str | bytes) else sequence
    if not isinstance(parsed, list) or len(parsed) != 2:
        raise ValueError(f"source.sequence {sequence!r} is not [last commit LSN, LSN]")
    commit, current = parsed
    return (int(commit) if commit is not None else 0, int(current) if current is not None else lsn)


@dataclass
class SourceMark:
    """How far a source has been applied: the highest position, and the events applied exactly there
    (one WAL record can give several events: a primary key update gives a delete and a create, a snapshot
    gives every read at the snapshot's position)."""

    kind: str
    position: Position
    #: snapshot reads (op r) applied at the position
    reads: int = 0
    #: the other ops applied at the position, e.g. "dc"
    ops: str = ""

    def to_property(self) -> str:
        """The mark as a commit property value (JSON)."""
        return msgspec.json.encode([self.kind, list(self.position), self.reads, self.ops]).decode()

    @classmethod
    def from_property(cls, text: str) -> SourceMark:
        """The mark a commit recorded."""
        kind, position, reads, ops = msgspec.json.decode(text)
        return cls(str(kind), tuple(position), int(reads), str(ops))

    def copy(self) -> SourceMark:
        """A copy that later events do not move."""
        return SourceMark(self.kind, self.position, self.reads, self.ops)

def _last_of_each(values: np.ndarray) -> np.ndarray:
    """The positions of the last occurrence of each of the integers ``values``, in order."""
    if not len(values):
        return np.zeros(0, np.int64)
    low = int(values.min())
    span = int(values.max()) - low + 1
    positions = np.arange(len(values))
    if span <= 8 * len(values):
        # Keys close together (ids, sequences): a table by key, in one pass, instead of a sort (20x faster).
        # Offsets in int64: a narrow signed type's would wrap (an unsigned one's cannot: no value is < low).
        unsigned = values.dtype.kind == "u"
        offsets = values - values.dtype.type(low) if unsigned else values.astype(np.int64) - low
        last = np.full(span, -1, np.int64)
        np.maximum.at(last, offsets, positions)
        return np.flatnonzero(last[offsets] == positions)
    # keys far apart: numpy's sort beats a hash aggregation here
    _, first = np.unique(values[::-1], return_index=True)
    return np.sort(len(values) - 1 - first)


# -- the decoder -----------------------------------------------------------------------------------

@dataclass
class ChangeBatch:
    """One commit's worth of changes: pre-merged Arrow rows and their row kinds, and where the source stands."""

    table: pa.Table
    #: one UPSERT/DELETE per row
    ops: pa.Array
    #: applied events in the batch (before pre-merging)
    events: int
    #: the source mark after the batch's last applied event (None: the events carry no position)
    mark: SourceMark | None
    #: the first and last line of the batch's events
    lines: tuple[int, int]


@dataclass
class DecodeStats:
    """What a decoder has seen so far."""

    lines: int = 0
    events: int = 0
    applied: int = 0
    duplicates: int = 0
    tombstones: int = 0


@dataclass
class _Pending:
    """The changes of the batch being gathered."""

    #: each row's values in the table's column order
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


@dataclass
class _Carry:
    """The unfinished batch's changes as Python rows (what continue_batches gathers in its locals): per key
    for deduplicate tables (``merged``), per key and kind for partial-update ones, all for sequenced ones;
    ``applied`` counts every applied event of the batch, with those of the Arrow pieces before them."""

    merged: dict[Any, tuple[int, tuple[Any, ...], int]] = field(default_factory=dict)
    partials: dict[Any, list[Any]] = field(default_factory=dict)
    log: _Pending = field(default_factory=_Pending)
    applied: int = 0
    first_line: int = 0


@dataclass
class _Piece:
    """A part of the unfinished batch: Arrow change rows (converted) or Python ones (converted when the
    batch is, so that a row a later change of its key replaces is never converted, as in one pass)."""

    rows: pa.Table | _Pending
    ops: pa.Array | None = None
    #: rows to leave out (re-delivered events': dropped with the rows the pre-merge drops, in one take)
    drop: np.ndarray | None = None


class DebeziumDecoder:
    """Turns Debezium events into :class:`ChangeBatch` es for a primary-key table of Arrow schema ``schema``.

    ``mark`` is where a previous ingest stopped (events at or below it are skipped as re-deliveries).
    """

    def __init__(self, schema: pa.Schema, layout: TableLayout, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 mark: SourceMark | None = None, decimal_handling: str = "precise") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        if decimal_handling not in DECIMAL_MODES:
            raise ValueError(f"decimal_handling is one of {', '.join(DECIMAL_MODES)}")
        missing = [k for k in layout.key if k not in schema.names]
        if missing:
            raise ValueError(f"the table's schema lacks its key columns {missing}")
        self.schema = schema
        self.layout = layout
        self.batch_size = batch_size
        self.decimal_handling = decimal_handling
        self.mark = mark
        # A re-run skips the snapshot reads the mark counts at its own position.
        self._skip_at_mark = mark.reads if mark is not None else 0
        self.stats = DecodeStats()
        self._columns = tuple(schema.names)
        self._known = frozenset(self._columns)
        self._nulls = (None,) * len(self._columns)
        self._key_positions = [(self._columns.index(k), k) for k in layout.key]
        self._hints: dict[str, Hint] = {}
        # The unfinished batch between calls of continue_batches: its changes as Python rows (_carry) and
        # Arrow changes added by add_changes before them (_pieces, with the rows gathered before those).
        self._carry = _Carry()
        self._pieces: list[_Piece] = []
        # Lines decode straight into structs of the table's columns (msgspec): nothing of an event is
        # built that ingest does not use (a wrapped envelope's schema stays raw bytes), unknown columns
        # are refused as they are met, and a row's values come out in column order at once.
        self._row_type = msgspec.defstruct(
            "Row", [(f"c{i}", Any, None) for i in range(len(self._columns))],
            rename={f"c{i}": c for i, c in enumerate(self._columns)}, forbid_unknown_fields=True, gc=False)
        self._key_fields = tuple(f"c{self._columns.index(k)}" for k in layout.key)
        self._key_getter = attrgetter(*self._key_fields)
        source = msgspec.defstruct("Source", [(n, Any, None) for n in ("lsn", "sequence", "file", "pos", "row")],
                                   gc=False)
        event = [("before", self._row_type | None, None), ("after", self._row_type | None, None),
                 ("op", Any, None), ("source", source | None, None)]
        payload = msgspec.defstruct("Payload", event, gc=False)
        self._envelope = msgspec.defstruct(
            "Envelope", [*event, ("payload", payload | None | msgspec.UnsetType, msgspec.UNSET),
                         ("schema", msgspec.Raw, msgspec.Raw())], gc=False)
        self._decoder = msgspec.json.Decoder(self._envelope | None)

    # -- one batch's rows into Arrow --------------------------------------------------------------

    def _batch(self, pending: _Pending, events: int, first_line: int) -> ChangeBatch:
        rows, lines = pending.rows, pending.lines
        columns = self._columns_at_once(rows) if rows else None
        if columns is None:  # column by column, finding the row of a value that does not convert
            columns = []
            extracted: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [[] for _ in self._columns]
            no_hint = Hint()
            blamed: list[DebeziumError] = []
            for name, target, values in zip(self._columns, self.schema.types, extracted, strict=True):
                hint = self._hints.get(name, no_hint)
                try:
                    columns.append(convert(values, target, hint, self.decimal_handling))
                except Unconvertible:
                    blamed.append(self._blame(name, target, hint, values, lines))
            if blamed:  # the earliest line's, whichever column it is in
                raise min(blamed, key=lambda e: (e.line is None, e.line or 0))
        table = pa.Table.from_arrays(columns, schema=self.schema)
        ops = pa.array(pending.ops, pa.int8())
        mark = None if self.mark is None else self.mark.copy()
        return ChangeBatch(table, ops, events, mark, (first_line, lines[-1] if lines else first_line))

    @property
    def premerges(self) -> bool:
        """Whether batches come pre-merged (one change per key); aggregation and first-row tables keep every
        change, with retractions, and the writer pre-merges them."""
        return self.layout.merge_engine not in ("aggregation", "first-row")

    def _emit(self, pending: _Pending, events: int, first_line: int) -> ChangeBatch:
        """The batch of ``pending`` changes, after the pieces :meth:`add_changes` gave it (pre-merged across
        them: a key keeps its last change; Python rows are converted after that, as in one pass)."""
        if not self._pieces:
            return self._batch(pending, events, first_line)
        pieces, self._pieces = self._pieces, []
        if pending.rows:
            pieces.append(_Piece(pending))
        parts = [self._piece_keys(piece) for piece in pieces]
        drop = None
        if any(piece.drop is not None for piece in pieces):
            drop = np.concatenate([piece.drop if piece.drop is not None else np.zeros(part.num_rows, bool)
                                   for piece, part in zip(pieces, parts, strict=True)])
        survivors = self._last_per_key(pa.concat_tables(parts), drop)
        mark = None if self.mark is None else self.mark.copy()
        lines = (first_line, self.stats.lines)
        if all(isinstance(piece.rows, pa.Table) for piece in pieces):
            table = pa.concat_tables([piece.rows for piece in pieces if isinstance(piece.rows, pa.Table)])
            ops = pa.concat_arrays([piece.ops if piece.ops is not None else pa.array(np.zeros(part.num_rows, np.int8))
                                    for piece, part in zip(pieces, parts, strict=True)])
            if survivors is not None:
                table, ops = table.take(survivors), ops.take(survivors)
            return ChangeBatch(table, ops, events, mark, lines)
        tables: list[pa.Table] = []
        kinds: list[pa.Array] = []
        start = 0
        for piece, part in zip(pieces, parts, strict=True):
            size = part.num_rows
            chosen = None
            if survivors is not None:
                lo, hi = np.searchsorted(survivors, (start, start + size))
                chosen = survivors[lo:hi] - start
            start += size
            rows = piece.rows
            if isinstance(rows, pa.Table):
                piece_ops = piece.ops if piece.ops is not None else pa.array(np.zeros(size, np.int8))
                tables.append(rows if chosen is None else rows.take(chosen))
                kinds.append(piece_ops if chosen is None else piece_ops.take(chosen))
                continue
            if chosen is not None:
                rows = _Pending([rows.rows[i] for i in chosen], [rows.ops[i] for i in chosen],
                                [rows.lines[i] for i in chosen])
            table, piece_ops = self._arrow_rows(rows)
            tables.append(table)
            kinds.append(piece_ops)
        return ChangeBatch(pa.concat_tables(tables), pa.concat_arrays(kinds), events, mark, lines)

    def _piece_keys(self, piece: _Piece) -> pa.Table:
        """The key columns of a piece's rows (a Python piece whose keys do not convert is converted whole: it
        raises the error that names the line, as a one-pass batch would)."""
        key = list(self.layout.key)
        if isinstance(piece.rows, pa.Table):
            return piece.rows.select(key)
        key_schema = pa.schema([self.schema.field(k) for k in key])
        try:
            return pa.table([pa.array([row[i] for row in piece.rows.rows], key_schema.field(k).type)
                             for i, k in self._key_positions], schema=key_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            piece.rows, piece.ops = self._arrow_rows(piece.rows)
            return piece.rows.select(key)

    def _last_per_key(self, keys: pa.Table, drop: np.ndarray | None) -> np.ndarray | None:
        """The rows that keep their key's last change, leaving out ``drop``ped ones, in order; None for all."""
        count = keys.num_rows
        kept = np.arange(count, dtype=np.int64) if drop is None else np.flatnonzero(~drop)
        if keys.num_columns == 1 and pa.types.is_integer(keys.schema.types[0]):
            values = keys.column(0).to_numpy()
            if drop is not None:
                values = values[kept]
            last = kept[_last_of_each(values)]
        else:
            indexed = keys.append_column("__row", pa.array(kept if drop is None else np.arange(count, dtype=np.int64),
                                                           mask=drop))
            grouped = indexed.group_by(keys.column_names, use_threads=False).aggregate([("__row", "max")])
            last = grouped.column("__row_max").drop_null().to_numpy()
        if drop is None and len(last) == count:
            return None
        return np.sort(last)

    def _arrow_rows(self, pending: _Pending) -> tuple[pa.Table, pa.Array]:
        """Python change rows as Arrow (raising the DebeziumError that names the line of a bad value)."""
        batch = self._batch(pending, 0, 0)
        return batch.table, batch.ops

    def add_changes(self, rows: pa.Table, ops: pa.Array, applied: int, first_line: int,
                    drop: np.ndarray | None = None) -> None:
        """Append Arrow changes (converted, in the table's columns, in order) of ``applied`` events from line
        ``first_line`` on to the unfinished batch: what parallel decoding's workers decoded. ``drop`` marks
        rows to leave out (those of re-delivered events)."""
        carry = self._carry
        if carry.merged or carry.partials or carry.log.rows:
            self._pieces.append(_Piece(self._pending(carry.merged, carry.partials, carry.log)))
            self._carry = carry = _Carry(applied=carry.applied, first_line=carry.first_line)
        if not carry.applied:
            carry.first_line = first_line
        self._pieces.append(_Piece(rows, ops, drop))
        carry.applied += applied

    def pending_events(self) -> int:
        """Applied events in the unfinished batch."""
        return self._carry.applied

    def take_batch(self) -> ChangeBatch | None:
        """The unfinished batch, finished now (None when it has no events), for a caller that says where
        batches end; the caller has moved ``mark`` and ``stats`` to its last event."""
        carry = self._carry
        if not carry.applied:
            return None
        self.stats.applied += carry.applied
        self._carry = _Carry()
        return self._emit(self._pending(carry.merged, carry.partials, carry.log), carry.applied, carry.first_line)

    def _columns_at_once(self, rows: list[tuple[Any, ...]]) -> list[pa.Array] | None:
        """The rows' columns, converted from one pass of Arrow over the rows (a struct array of the values'
        JSON types), then column by column in Arrow; None when some value does not fit (the caller then
        goes column by column in Python, which names the line)."""
        raw: list[pa.Field] = []
        sample = rows[:256]
        for index, (name, target) in enumerate(zip(self._columns, self.schema.types, strict=True)):
            if direct(target):
                kind: pa.DataType | None = target
            else:
                first = next((row[index] for row in sample if row[index] is not None), None)
                kind = RAW_TYPES.get(type(first))
                if kind is None:
                    return None  # nothing to tell the column's encoding by, or an object
            raw.append(pa.field(name, kind))
        try:
            struct = pa.array(rows, pa.struct(raw))
            no_hint = Hint()
            return [child if direct(target) else from_raw(child, target, self._hints.get(name, no_hint),
                                                            self.decimal_handling)
                    for name, target, child in zip(self._columns, self.schema.types, struct.flatten(), strict=True)]
        except (Unconvertible, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError,
                ValueError, OverflowError, ArithmeticError):
            return None

    def _delete_values(self, before: Any) -> tuple[Any, ...]:
        """A delete row: the key of ``before`` (a row struct), every other column null."""
        values = list(self._nulls)
        for position, _column in self._key_positions:
            values[position] = getattr(before, f"c{position}")
        return tuple(values)

    def _event(self, item: Any, line: int) -> Any:
        """An event that did not decode as a Debezium event of the table's columns (or was given parsed), as
        the envelope struct, or None for a tombstone; a DebeziumError that says what is wrong with it."""
        if isinstance(item, bytes | bytearray | memoryview | str):
            try:
                item = msgspec.json.decode(item)
            except msgspec.DecodeError as e:
                raise DebeziumError(f"not JSON: {e}", line) from None
        if item is None:
            return None
        if not isinstance(item, dict):
            raise DebeziumError(f"an event is a JSON object, not {type(item).__name__}", line)
        payload = item.get("payload", item)
        if payload is None:
            return None  # the wrapped envelope's tombstone
        if not isinstance(payload, dict):
            raise DebeziumError("`payload` is not an object", line)
        for side in ("before", "after"):
            image = (payload or {}).get(side)
            if image is not None and not isinstance(image, dict):
                raise DebeziumError(f"`{side}` is not an object", line)
            unknown = sorted((image or {}).keys() - self._known)
            if unknown:
                raise DebeziumError(f"columns {unknown} are not in the table (add them to it first: "
                                    "ALTER TABLE ... ADD COLUMNS)", line)
        schema = item.get("schema") if payload is not item else None
        try:
            event: Any = msgspec.convert({"payload": payload} if payload is not item else item, self._envelope)
        except msgspec.ValidationError as e:
            raise DebeziumError(f"not a Debezium change event: {e}", line) from None
        if schema is not None:
            event.schema = msgspec.Raw(msgspec.json.encode(schema))
        return event

    def _event_after(self, item: Any, line: int, pending: Callable[[], _Pending]) -> Any:
        """:meth:`_event`, whose error is raised only after the ``pending`` rows of the lines before it
        converted: a value of an earlier line that does not is the first error to report."""
        try:
            return self._event(item, line)
        except DebeziumError:
            earlier = pending()
            if earlier.rows:
                self._batch(earlier, 0, 0)
            raise

    def _blame(self, name: str, target: pa.DataType, hint: Hint, values: Sequence[Any],
               lines: list[int]) -> DebeziumError:
        for value, line in zip(values, lines, strict=True):
            try:
                convert([value], target, hint, self.decimal_handling)
            except Unconvertible as e:
                return DebeziumError(f"column {name!r}: {value!r} does not convert to {target}: {e}", line)
        return DebeziumError(f"column {name!r} does not convert to {target}", lines[0] if lines else None)

    # -- events -----------------------------------------------------------------------------------

    def _schema_hints(self, schema: Any) -> dict[str, Hint]:
        """What a wrapped envelope's schema says of the table's columns."""
        return {k: v for k, v in schema_hints(schema).items() if k in self._known}

    def batches(self, events: Iterable[Any]) -> Iterator[ChangeBatch]:
        """The batches of ``events``: lines (bytes or str, JSON) or parsed events (dicts, or None for
        tombstones), numbered from 1 in the order given. Raises :class:`DebeziumError` at the first event
        that cannot be applied (the batch it would have joined is never yielded)."""
        return self.continue_batches(events, final=True)

    def continue_batches(self, events: Iterable[Any], *, final: bool) -> Iterator[ChangeBatch]:
        """:meth:`batches` of ``events`` that go on where the last call stopped: lines are numbered on from
        ``stats.lines``, and a batch the last call left unfinished (``final`` false) gathers on, with the
        Arrow changes :meth:`add_changes` gave it. Unless ``final``, the last batch stays unfinished."""
        key = self.layout.key
        single = self._key_fields[0] if len(key) == 1 else None
        key_of: Callable[[Any], Any] = self._key_getter
        # sequenced, aggregation and first-row tables keep every change, in order, for the writer's pre-merge
        sequenced = self.layout.sequence_field is not None or self.layout.merge_engine in ("aggregation",
                                                                                           "first-row")
        retracts = self.layout.merge_engine == "aggregation"
        partial = self.layout.merge_engine == "partial-update"
        simple = not sequenced and not partial
        stats = self.stats
        astuple = msgspec.structs.astuple
        delete_values = self._delete_values
        decode = self._decoder.decode
        errors = (msgspec.DecodeError, msgspec.ValidationError)
        ops_of = _OPS
        pg_position = _pg_position
        last_head, last_commit = "", 0
        last_schema = msgspec.Raw()
        unset = msgspec.UNSET
        # pre-merged changes of the batch: key -> (op, row, line) (partial-update and sequenced tables
        # gather theirs in `partials` and `log`)
        carry = self._carry
        merged, partials, log = carry.merged, carry.partials, carry.log
        applied, first_line = carry.applied, carry.first_line
        line, seen, duplicates, tombstones = stats.lines, stats.events, stats.duplicates, stats.tombstones
        batch_size = self.batch_size
        # the source mark, in locals while the loop runs (synced to self.mark for each batch)
        mark = self.mark
        m_kind, m_position = (mark.kind, mark.position) if mark is not None else ("", ())
        m_reads, m_ops = (mark.reads, mark.ops) if mark is not None else (0, "")
        skip_reads = self._skip_at_mark

        def emit() -> ChangeBatch:
            nonlocal merged, partials, log, applied
            stats.lines, stats.events, stats.duplicates, stats.tombstones = line, seen, duplicates, tombstones
            stats.applied += applied
            if m_kind:
                self.mark = SourceMark(m_kind, m_position, m_reads, m_ops)
            self._skip_at_mark = skip_reads
            batch = self._emit(self._pending(merged, partials, log), applied, first_line)
            merged, partials, log, applied = {}, {}, _Pending(), 0
            return batch

        for item in events:
            line += 1
            item_type = type(item)
            if item_type is bytes or item_type is str:
                if len(item) < 8 and not item.strip():
                    tombstones += 1
                    continue
                try:
                    value = decode(item)
                except errors:
                    # says what is wrong, or takes it as it is
                    value = self._event_after(item, line, lambda: self._pending(merged, partials, log))
            else:
                value = self._event_after(item, line, lambda: self._pending(merged, partials, log))
            if value is None:
                tombstones += 1
                continue
            payload = value.payload
            if payload is None:
                tombstones += 1  # {"schema": ..., "payload": null}
                continue
            if payload is not unset:
                schema = value.schema
                value = payload
                # A schema that converts differently starts a new batch: a batch converts under one.
                if schema != last_schema:
                    last_schema = schema
                    hints = self._schema_hints(msgspec.json.decode(schema) if len(schema) else None)
                    if hints != self._hints:
                        if applied:
                            yield emit()
                        self._hints = hints
            seen += 1
            op: Any = value.op
            code = ops_of.get(op) if type(op) is str else None
            if code is None:
                raise DebeziumError(f"unknown op {op!r} (Debezium's are c, r, u, d)", line)
            # -- re-deliveries
            source = value.source
            lsn = source.lsn if source is not None else None
            try:
                if lsn is not None:
                    kind = "postgresql"
                    sequence = source.sequence
                    head, comma, _ = sequence.partition('","') if type(sequence) is str else ("", "", "")
                    if comma and type(lsn) is int and head[:2] == '["':
                        # '["<last commit LSN>","<LSN>"]', the commit part shared by a transaction's events
                        if head != last_head:
                            last_head, last_commit = head, int(head[2:])
                        position: Position | None = (last_commit, lsn)
                    else:
                        position = pg_position(int(lsn), sequence)
                else:
                    found = source_position(msgspec.structs.asdict(source) if source is not None else None)
                    kind, position = found if found is not None else ("", None)
            except (TypeError, ValueError) as e:
                raise DebeziumError(f"bad source position: {e}", line) from None
            if position is not None:
                if kind is not m_kind and kind != m_kind:
                    if m_kind:
                        raise DebeziumError(f"a {kind} event among {m_kind} events: one ingest reads one source",
                                            line)
                    m_kind, m_position, m_reads, m_ops = kind, position, 0, ""
                elif position > m_position:
                    m_position, m_reads, m_ops, skip_reads = position, 0, "", 0
                elif position < m_position:
                    duplicates += 1
                    continue
                elif op == "r":
                    if skip_reads:  # a snapshot read a previous run applied
                        skip_reads -= 1
                        duplicates += 1
                        continue
                elif op in m_ops:  # this position's event of this op again
                    duplicates += 1
                    continue
                if op == "r":
                    m_reads += 1
                else:
                    m_ops += op
            # -- the change
            before: Any = value.before
            if code == UPSERT:
                after: Any = value.after
                if after is None:
                    raise DebeziumError(f"op {op!r} without an `after` row", line)
                ident = key_of(after)
                if ident is None or (single is None and None in ident):
                    raise DebeziumError(f"a key column ({', '.join(key)}) missing or null in `after`", line)
                if op != "u":
                    old = ident
                elif before is not None and (old := key_of(before)) is not None and (
                        single is not None or None not in old):
                    pass
                else:
                    old = self._key_of(before, key, single, "an update", line)
                values = astuple(after)
            else:
                ident = old = self._key_of(before, key, single, "a delete", line)
                values = delete_values(before)
            if retracts and before is not None and op in ("u", "d"):
                # an aggregation table takes the before-image's values back from the key's aggregates (a
                # delete or an update of the source row), and a delete leaves the key's other values
                self._add(merged, partials, log, sequenced, partial, old, RETRACT, astuple(before), line)
                if code == DELETE:
                    if not applied:
                        first_line = line
                    applied += 1
                    if applied >= batch_size:
                        yield emit()
                    continue
                old = ident
            try:
                if old != ident:  # a key change: the old key goes
                    self._add(merged, partials, log, sequenced, partial, old, DELETE, delete_values(before), line)
                if simple:
                    merged[ident] = (code, values, line)
                else:
                    self._add(merged, partials, log, sequenced, partial, ident, code, values, line)
            except TypeError:
                raise DebeziumError(f"key ({', '.join(key)}) is not a scalar: {ident!r}", line) from None
            if not applied:
                first_line = line
            applied += 1
            if applied >= batch_size:
                yield emit()
        if final and applied:
            yield emit()
        stats.lines, stats.events, stats.duplicates, stats.tombstones = line, seen, duplicates, tombstones
        if m_kind:
            self.mark = SourceMark(m_kind, m_position, m_reads, m_ops)
        self._skip_at_mark = skip_reads
        self._carry = _Carry(merged, partials, log, applied, first_line)

    def _key_of(self, before: Any, key: Sequence[str], single: str | None, what: str, line: int) -> Any:
        if before is None:
            raise DebeziumError(f"{what} without `before`; {_REPLICA_HINT}", line)
        ident = self._key_getter(before)
        if ident is None or (single is None and None in ident):
            raise DebeziumError(f"{what} whose `before` lacks a key column ({', '.join(key)}) or has it null; "
                                f"{_REPLICA_HINT}", line)
        return ident

    @staticmethod
    def _add(merged: dict[Any, tuple[int, tuple[Any, ...], int]], partials: dict[Any, list[Any]],
             log: _Pending, sequenced: bool, partial: bool, ident: Any, code: int, row: tuple[Any, ...],
             line: int) -> None:
        if sequenced:
            log.rows.append(row)
            log.ops.append(code)
            log.lines.append(line)
        elif partial:
            entry = partials.get(ident)
            if entry is None:
                partials[ident] = [row, line, None, 0] if code == DELETE else [None, 0, row, line]
            elif code == DELETE:
                entry[:] = [row, line, None, 0]
            elif entry[2] is None:
                entry[2], entry[3] = row, line
            else:
                merged_row = tuple(new if new is not None else old for old, new in zip(entry[2], row, strict=True))
                entry[2], entry[3] = merged_row, line
        else:
            merged[ident] = (code, row, line)

    def _pending(self, merged: dict[Any, tuple[int, tuple[Any, ...], int]], partials: dict[Any, list[Any]],
                 log: _Pending) -> _Pending:
        if self.layout.sequence_field is not None or self.layout.merge_engine in ("aggregation", "first-row"):
            pending = log
        elif self.layout.merge_engine == "partial-update":
            pending = _Pending()
            for deleted, deleted_line, upsert, upsert_line in partials.values():
                if deleted is not None:
                    pending.rows.append(deleted)
                    pending.ops.append(DELETE)
                    pending.lines.append(deleted_line)
                if upsert is not None:
                    pending.rows.append(upsert)
                    pending.ops.append(UPSERT)
                    pending.lines.append(upsert_line)
        elif merged:
            ops, rows, lines = zip(*merged.values(), strict=True)
            pending = _Pending(list(rows), list(ops), list(lines))
        else:
            pending = _Pending()
        return pending


# -- ingest ----------------------------------------------------------------------------------------
