"""Key ranges of merged Spark reads: merging each range's share of the rows and putting the shares together
gives the merge of all the rows (so read tasks can split the work), for numeric and string keys."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType
from pyspark_streamcat.reading import KeyRange, key_ranges

from catalog_api.model import Chunk
from catalog_api.streams.changes import DELETE, OP_COLUMN, UPSERT
from catalog_api.streams.chunks import column_stats
from catalog_api.streams.merge import TableLayout, merge_changes


@st.composite
def chunks(draw: st.DrawFn, strings: bool) -> list[pa.Table]:
    keys = st.integers(-50, 50).map(lambda k: f"k{k:+04d}" if strings else k)
    result = []
    for _ in range(draw(st.integers(1, 6))):
        rows = draw(st.lists(st.tuples(keys, st.sampled_from([UPSERT, UPSERT, DELETE]), st.integers(0, 9)),
                             min_size=1, max_size=40))
        result.append(pa.table({"k": [k for k, _, _ in rows], "v": [v for _, _, v in rows],
                                OP_COLUMN: pa.array([op for _, op, _ in rows], pa.int8())}))
    return result


@given(data=st.data(), strings=st.booleans(), per_task=st.integers(1, 60))
@settings(max_examples=200, deadline=None)
def test_merging_by_key_range_is_merging_everything(data: st.DataObject, strings: bool, per_task: int) -> None:
    tables = data.draw(chunks(strings))
    refs = [Chunk(path=f"c{i}", kind="columnar", event_count=t.num_rows, stats=column_stats(t), commit=i + 1,
                  sequence=i + 1) for i, t in enumerate(tables)]
    ranges = key_ranges(refs, "k", StringType() if strings else LongType(), per_task)
    assert ranges[0].low is None
    assert ranges[-1].high is None
    assert all(a.high == b.low for a, b in itertools.pairwise(ranges))
    layout = TableLayout(("k",))
    whole = merge_changes(tables, layout).sort_by("k")
    shares = []
    for keys in ranges:
        mine = [t.filter(m) if (m := keys.mask(t)) is not None else t
                for t, c in zip(tables, refs, strict=True) if keys.overlaps(c.stats)]
        if mine:
            shares.append(merge_changes(mine, layout))
    assert pa.concat_tables(shares).sort_by("k").equals(whole)


def test_sorted_chunks_split_at_their_boundaries() -> None:
    refs = [Chunk(path=f"c{i}", kind="columnar", event_count=1000,
                  stats={"columns": {"id": {"min": i * 1000, "max": i * 1000 + 999}}}) for i in range(4)]
    ranges = key_ranges(refs, "id", LongType(), 1000)
    assert len(ranges) == 4
    assert [sum(r.overlaps(c.stats) for c in refs) for r in ranges] == [1, 1, 1, 1]
    # without statistics, or small enough for one task: one range
    assert key_ranges([Chunk(path="x", kind="events", event_count=10**7)], "id", LongType(), 1000) == [
        KeyRange("id")]
    assert key_ranges(refs, "id", LongType(), 10**6) == [KeyRange("id")]
