"""changelog.py: change feeds of primary-key tables, against a plain-Python model; replaying a feed."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_api.streams.changelog import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    FEED_COLUMNS,
    _finish,
    keyed_commit,
    replay,
)
from catalog_api.streams.merge import TableLayout, merge_changes
from catalog_api.streams.row_kinds import DELETE, UPSERT
from tests.streams.test_merge import LAYOUTS, SCHEMA, Row, as_state, change_chunks, chunk_table

Commit = tuple[bool, list[tuple[int, list[tuple[int, Row]]]]]  # (overwrite, chunks)


def model_feed(state: dict[Any, Row], commit: Commit, layout: TableLayout) -> list[tuple[str, Row]]:
    """The docs' feed of one commit, computed change by change on a dict (which it updates)."""
    overwrite, chunks = commit
    feed = [("delete", row) for row in state.values()] if overwrite else []
    if overwrite:
        state.clear()
    changes = []
    for index, (sequence, rows) in enumerate(chunks):
        for position, (op, row) in enumerate(rows):
            value = row[layout.sequence_field] if layout.sequence_field else None
            changes.append(((sequence, (value is not None, value or 0), index, position), op, row))
    changes.sort(key=lambda change: change[0])
    for _order, op, row in changes:
        key = tuple(row[k] for k in layout.key)
        if op == DELETE:
            if key in state:
                feed.append(("delete", state.pop(key)))
        elif key in state:
            new = ({c: (row[c] if row[c] is not None else state[key][c]) for c in row} if layout.partial_update
                   else dict(row))
            feed += [("update_preimage", state[key]), ("update_postimage", new)]
            state[key] = new
        else:
            feed.append(("insert", dict(row)))
            state[key] = dict(row)
    return feed


@st.composite
def commit_lists(draw: st.DrawFn, composite: bool) -> list[Commit]:
    """Commits of change chunks; the chunks of commit n have sequence n (as the server gives them)."""
    commits = []
    for number in range(1, draw(st.integers(1, 5)) + 1):
        chunks = draw(change_chunks(composite))
        commits.append((number > 1 and draw(st.integers(0, 5)) == 0,
                        [(number, rows) for _, rows in chunks[: draw(st.integers(1, 3))]]))
    return commits


def state_at(commits: list[Commit], cut: int, layout: TableLayout) -> pa.Table:
    """The merged state at a cut: the chunks since the last overwrite at or before it."""
    start = max([0] + [n for n, (overwrite, _) in enumerate(commits[:cut]) if overwrite])
    chunks = [chunk for _, cs in commits[start:cut] for chunk in cs]
    if not chunks:
        return SCHEMA.empty_table()
    return merge_changes([chunk_table(rows) for _, rows in chunks], layout, [s for s, _ in chunks])


def comparable(rows: list[tuple[str, Row]]) -> list[str]:
    return sorted(f"{kind} {sorted(row.items())}" for kind, row in rows)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: f"{'+'.join(layout.key)}-{layout.sequence_field}-"
                                                                f"{layout.merge_engine}")
@given(data=st.data())
@settings(max_examples=100, deadline=None)
def test_the_feed_is_the_model_and_replays_to_the_later_state(layout: TableLayout, data: st.DataObject) -> None:
    commits = data.draw(commit_lists(composite=len(layout.key) > 1))
    after = data.draw(st.integers(0, len(commits) - 1))
    state = state_at(commits, after, layout)
    expected_state = as_state(state, layout)
    feeds = []
    for number, commit in enumerate(commits[after:], start=after + 1):
        overwrite, chunks = commit
        state, parts = keyed_commit(state, [chunk_table(rows) for _, rows in chunks], [s for s, _ in chunks],
                                    layout, overwrite=overwrite)
        feed = _finish(parts, SCHEMA, number, 1_700_000_000_000 + number)
        assert feed.column_names == [*SCHEMA.names, *FEED_COLUMNS]
        assert set(feed.column(COMMIT_VERSION).to_pylist()) <= {number}
        rows = [(r.pop(CHANGE_TYPE), {k: v for k, v in r.items() if k not in FEED_COLUMNS})
                for r in feed.to_pylist()]
        assert comparable(rows) == comparable(model_feed(expected_state, commit, layout))
        feeds.append(feed)
        # an update is a preimage immediately followed by its postimage
        kinds = feed.column(CHANGE_TYPE).to_pylist()
        for i, kind in enumerate(kinds):
            if kind == "update_preimage":
                assert kinds[i + 1] == "update_postimage"
    later = state_at(commits, len(commits), layout)
    assert as_state(state, layout) == as_state(later, layout) == expected_state
    replayed = replay(state_at(commits, after, layout), pa.concat_tables(feeds), layout)
    assert as_state(replayed, layout) == as_state(later, layout)


def test_commit_timestamps_are_utc_microseconds() -> None:
    layout = TableLayout(("k",))
    state, parts = keyed_commit(SCHEMA.empty_table(), [chunk_table([(UPSERT, {"k": 1, "a": "x"})])], [1], layout)
    feed = _finish(parts, SCHEMA, 7, 1_700_000_000_123)
    assert feed.schema.field(COMMIT_TIMESTAMP).type == pa.timestamp("us", tz="UTC")
    assert feed.column(COMMIT_TIMESTAMP).cast(pa.int64()).to_pylist() == [1_700_000_000_123_000]
    assert feed.column(CHANGE_TYPE).to_pylist() == ["insert"]
    assert state.num_rows == 1
