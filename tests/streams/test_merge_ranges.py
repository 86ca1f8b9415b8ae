"""Key ranges of merged Spark reads: merging each range's share of the rows and putting the shares together
gives the merge of all the rows (so read tasks can split the work), for numeric and string keys."""

from __future__ import annotations

import itertools
import uuid

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType, StructField, StructType
from pyspark_streamcat.options import SourceOptions
from pyspark_streamcat.scan_planning import KeyRange, key_ranges, plan_merge
from pyspark_streamcat.task_reading import ChunkReader

from catalog_api.model import Chunk
from catalog_api.streams.chunks import column_stats
from catalog_api.streams.merge import TableLayout, merge_changes
from catalog_api.streams.row_kinds import DELETE, OP_COLUMN, UPSERT, write_change_chunk


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


def _base_and_updates(bases: list[tuple[int, int]], updates: int, rows: int) -> list[Chunk]:
    """Sorted base chunks of (first key, rows) and ``updates`` chunks of ``rows`` rows spread over all keys."""
    last = max(start + size for start, size in bases) - 1
    chunks = [Chunk(path=f"b{i}", kind="columnar", event_count=size, commit=1,
                    stats={"columns": {"id": {"min": start, "max": start + size - 1}}})
              for i, (start, size) in enumerate(bases)]
    chunks += [Chunk(path=f"u{i}", kind="columnar", event_count=rows, commit=2 + i,
                     stats={"columns": {"id": {"min": 3 * i, "max": last - 3 * i}}}) for i in range(updates)]
    return chunks


def test_key_ranges_cut_at_the_starts_of_base_chunks_so_each_is_read_by_one_task() -> None:
    # a loaded table of uneven sorted chunks, then updates spread over every key
    bases = [(0, 1_000_000), (1_000_000, 1_000_000), (2_000_000, 500_000), (2_500_000, 1_000_000),
             (3_500_000, 1_000_000), (4_500_000, 500_000)]
    chunks = _base_and_updates(bases, 20, 50_000)
    ranges = key_ranges(chunks, "id", LongType(), 1_000_000)
    assert [r.low for r in ranges] == [None, 1_000_000, 2_000_000, 2_500_000, 3_500_000, 4_500_000]
    assert [sum(r.overlaps(c.stats) for r in ranges) for c in chunks[:len(bases)]] == [1] * len(bases)


@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=12), updates=st.integers(0, 30),
       per_task=st.integers(5, 60))
@settings(max_examples=200, deadline=None)
def test_key_ranges_stay_within_half_a_task_of_even(sizes: list[int], updates: int, per_task: int) -> None:
    starts = [sum(sizes[:i]) * 1000 for i in range(len(sizes))]
    chunks = _base_and_updates([(s, n * 1000) for s, n in zip(starts, sizes, strict=True)], updates, 1000)
    total = sum(c.event_count for c in chunks)
    ranges = key_ranges(chunks, "id", LongType(), per_task * 1000)
    wanted = -(-total // (per_task * 1000))
    assert len(ranges) <= max(1, wanted)
    assert all(a.high == b.low for a, b in itertools.pairwise(ranges))

    def estimated(keys: KeyRange) -> float:  # the rows of a range, taking each chunk's keys as spread evenly
        share = 0.0
        for c in chunks:
            low, high = c.stats["columns"]["id"]["min"], c.stats["columns"]["id"]["max"] + 1
            inside = min(high, keys.high if keys.high is not None else high) - max(
                low, keys.low if keys.low is not None else low)
            share += c.event_count * max(0, inside) / (high - low)
        return share

    step = total / wanted
    # every range but the last is at most a step and a half (the last one takes what is left)
    assert all(estimated(r) <= 1.5 * step + 1000 for r in ranges[:-1])


@given(data=st.data(), strings=st.booleans(), per_task=st.integers(5, 60))
@settings(max_examples=60, deadline=None)
def test_read_tasks_of_chunk_files_give_the_merge_of_everything_twice_over(tmp_path_factory: pytest.TempPathFactory,
                                                                           data: st.DataObject, strings: bool,
                                                                           per_task: int) -> None:
    """Each task reads real chunk files; chunks shared by several ranges are decoded once per process, kept
    sorted by key and sliced, so a second read of every task (from what was kept) must give the same rows."""
    location = str(tmp_path_factory.mktemp("merge") / uuid.uuid4().hex)
    tables = data.draw(chunks(strings))
    refs = []
    for i, table in enumerate(tables):
        path = f"data/{i}.parquet"
        stats = write_change_chunk(location, path, table.drop_columns([OP_COLUMN]), table.column(OP_COLUMN), 1)
        refs.append(Chunk(path=path, kind="columnar", event_count=stats.event_count, stats=stats.stats,
                          commit=i + 1, sequence=i + 1))
    schema = StructType([StructField("k", StringType() if strings else LongType()), StructField("v", LongType())])
    layout = TableLayout(("k",))
    tasks = plan_merge(refs, layout, schema, per_task)
    reader = ChunkReader(SourceOptions.parse({"uri": "http://unused", "scope": "s", "table": "t",
                                              "location": location}), schema)
    whole = merge_changes(tables, layout).sort_by("k")
    for _ in range(2):
        rows = pa.Table.from_batches([b for task in tasks for b in reader.read(task)], schema=whole.schema)
        assert rows.sort_by("k").equals(whole)
