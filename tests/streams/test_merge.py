"""merge.py: the merged state of a table's changes, against a plain-Python model of the same changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_api.streams.merge import (
    LayoutError,
    TableLayout,
    apply_position_deletes,
    merge_changes,
    split_ops,
)
from catalog_api.streams.row_kinds import DELETE, OP_COLUMN, UPSERT

SCHEMA = pa.schema([("k", pa.int64()), ("k2", pa.string()), ("seq", pa.int32()), ("a", pa.string()),
                    ("b", pa.float64()), ("tags", pa.list_(pa.int32()))])
VALUE_COLUMNS = ("seq", "a", "b", "tags")

Row = dict[str, Any]


def chunk_table(rows: list[tuple[int, Row]], with_ops: bool = True) -> pa.Table:
    """A chunk's rows (op, row) as Arrow, with ``OP_COLUMN`` unless every row upserts and ``with_ops`` is off."""
    table = pa.Table.from_pylist([r for _, r in rows], schema=SCHEMA)
    if with_ops:
        table = table.append_column(OP_COLUMN, pa.array([op for op, _ in rows], pa.int8()))
    return table


def model(chunks: list[tuple[int, list[tuple[int, Row]]]], layout: TableLayout) -> dict[Any, Row]:
    """What the docs say: order by (sequence, sequence.field with nulls first, chunk, position), then apply."""
    changes = []
    for index, (sequence, rows) in enumerate(chunks):
        for position, (op, row) in enumerate(rows):
            field = row[layout.sequence_field] if layout.sequence_field else None
            order = (sequence, (field is not None, field if field is not None else 0), index, position)
            changes.append((order, op, row))
    changes.sort(key=lambda change: change[0])
    state: dict[Any, Row] = {}
    for _order, op, row in changes:
        key = tuple(row[k] for k in layout.key)
        if op == DELETE:
            state.pop(key, None)
        elif layout.partial_update and key in state:
            state[key] = {c: (row[c] if row[c] is not None else state[key][c]) for c in row}
        else:
            state[key] = dict(row)
    return state


def as_state(table: pa.Table, layout: TableLayout) -> dict[Any, Row]:
    rows = table.to_pylist()
    state = {tuple(r[k] for k in layout.key): r for r in rows}
    assert len(state) == len(rows), "one row per key"
    return state


values = st.fixed_dictionaries({
    "seq": st.one_of(st.none(), st.integers(0, 3)),
    "a": st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
    "b": st.one_of(st.none(), st.floats(-5, 5, allow_nan=False)),
    "tags": st.one_of(st.none(), st.lists(st.integers(0, 9), max_size=2)),
})


@st.composite
def change_chunks(draw: st.DrawFn, composite: bool) -> list[tuple[int, list[tuple[int, Row]]]]:
    """Chunks of changes: (sequence, [(op, row)]) in snapshot order (sequences non-decreasing)."""
    chunks = []
    sequence = 1
    for _ in range(draw(st.integers(1, 6))):
        sequence += draw(st.integers(0, 1))
        rows = []
        for _ in range(draw(st.integers(0, 8))):
            key = {"k": draw(st.integers(0, 4)), "k2": draw(st.sampled_from(["p", "q"])) if composite else "p"}
            op = draw(st.sampled_from([UPSERT, UPSERT, DELETE]))
            row = {**key, **draw(values)}
            if op == DELETE and draw(st.booleans()):
                row = {**key, **dict.fromkeys(VALUE_COLUMNS)}  # delete rows usually carry only the key
            rows.append((op, row))
        chunks.append((sequence, rows))
    return chunks


LAYOUTS = [
    TableLayout(("k",)),
    TableLayout(("k", "k2")),
    TableLayout(("k",), "seq"),
    TableLayout(("k",), None, "partial-update"),
    TableLayout(("k", "k2"), "seq", "partial-update"),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: f"{'+'.join(layout.key)}-{layout.sequence_field}-"
                                                                f"{layout.merge_engine}")
@given(data=st.data())
@settings(max_examples=150, deadline=None)
def test_the_merge_is_the_model(layout: TableLayout, data: st.DataObject) -> None:
    chunks = data.draw(change_chunks(composite=len(layout.key) > 1))
    tables = [chunk_table(rows, with_ops=any(op == DELETE for op, _ in rows) or data.draw(st.booleans()))
              for _, rows in chunks]
    merged = merge_changes(tables, layout, [s for s, _ in chunks])
    assert merged.column_names == SCHEMA.names
    assert as_state(merged, layout) == model(chunks, layout)


def test_the_last_upsert_wins_and_deletes_remove() -> None:
    layout = TableLayout(("k",))
    first = chunk_table([(UPSERT, {"k": 1, "a": "old"}), (UPSERT, {"k": 2, "a": "two"})])
    second = chunk_table([(UPSERT, {"k": 1, "a": "new"}), (DELETE, {"k": 2})])
    merged = merge_changes([first, second], layout)
    assert merged.select(["k", "a"]).to_pylist() == [{"k": 1, "a": "new"}]


def test_partial_update_keeps_fields_an_upsert_leaves_null_and_a_delete_resets() -> None:
    layout = TableLayout(("k",), None, "partial-update")
    rows: list[tuple[int, Row]] = [(UPSERT, {"k": 1, "a": "x", "b": 1.0}), (UPSERT, {"k": 1, "b": 2.0}),
            (UPSERT, {"k": 2, "a": "y", "b": 3.0}), (DELETE, {"k": 2}), (UPSERT, {"k": 2, "b": 4.0})]
    merged = merge_changes([chunk_table(rows)], layout).select(["k", "a", "b"])
    assert sorted(merged.to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "a": "x", "b": 2.0},
                                                                {"k": 2, "a": None, "b": 4.0}]


def test_the_sequence_field_orders_within_a_sequence_only() -> None:
    layout = TableLayout(("k",), "seq")
    same = [chunk_table([(UPSERT, {"k": 1, "seq": 9, "a": "nine"})]), chunk_table([(UPSERT, {"k": 1, "seq": 3,
                                                                                            "a": "three"})])]
    assert merge_changes(same, layout, [5, 5]).column("a").to_pylist() == ["nine"]
    assert merge_changes(same, layout, [5, 6]).column("a").to_pylist() == ["three"]


def test_layout_from_properties() -> None:
    layout = TableLayout.from_properties({"primary-key": " id , region", "sequence.field": "ts",
                                          "merge-engine": "Partial-Update"})
    assert layout == TableLayout(("id", "region"), "ts", "partial-update")
    assert layout.is_keyed
    assert layout.partial_update
    assert layout.read_columns(["name", "ID"]) == ["name", "ID", "region", "ts"]
    assert not TableLayout.from_properties({}).is_keyed
    with pytest.raises(LayoutError, match="merge-engine"):
        TableLayout.from_properties({"primary-key": "id", "merge-engine": "sum"})


def test_position_deletes_drop_the_named_rows_of_a_slice() -> None:
    table = pa.table({"x": list(range(10))})
    assert apply_position_deletes(table, pa.array([0, 3, 9], pa.int64())).column("x").to_pylist() == [
        1, 2, 4, 5, 6, 7, 8]
    # rows 5..9 of a chunk, read in a second batch
    assert apply_position_deletes(table.slice(5), np.array([3, 6]), offset=5).column("x").to_pylist() == [5, 7, 8, 9]
    assert apply_position_deletes(table, None).num_rows == 10


def test_an_append_layout_keeps_every_row_and_drops_the_op_column() -> None:
    rows = chunk_table([(UPSERT, {"k": 1}), (UPSERT, {"k": 1})])
    merged = merge_changes([rows, rows], TableLayout())
    assert merged.num_rows == 4
    assert OP_COLUMN not in merged.column_names
    assert split_ops(rows)[1].tolist() == [0, 0]
