"""pruning.py: no chunk holding a passing row is ever dropped, and partitions do drop the others."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from catalog_api.model import Chunk
from catalog_api.partitioning.pruning import chunk_may_match, partition_may_match
from catalog_api.partitioning.spec import PartitionSpec, parse_partitioning, source_names
from catalog_api.partitioning.transforms import MICROS_PER_DAY, MICROS_PER_HOUR, apply
from catalog_api.streams.chunks import column_stats
from tests.partitioning.support import SCHEMA, Row, chunks_of, column, filters, passes, rows, rows_of, specs, table_of

Filter = dict[str, Any]


@settings(max_examples=400)
@given(rows=rows(), spec=specs(), condition=filters())
# found by the search: truncate(1000) of the byte -1 saturates at -128, which an equality must not prune
@example(rows=[{"n": None, "i": None, "d": None, "ts": None, "local": None, "s": None, "flag": None, "b": -1}],
         spec=parse_partitioning("truncate(1000, b)", SCHEMA, 1, 999),
         condition={"op": "eq", "column": "b", "value": -1})
def test_no_chunk_holding_a_passing_row_is_dropped(rows: list[Row], spec: PartitionSpec, condition: Filter) -> None:
    # what the server holds: the spec as stored (names at its making, no types)
    stored = {spec.spec_id: PartitionSpec.from_json(spec.to_json())}
    for chunk, chunk_rows in chunks_of(table_of(rows), spec):
        if not any(passes(condition, row) for row in chunk_rows):
            continue
        assert chunk.partition is not None
        assert partition_may_match([condition], spec, chunk.partition["values"])
        assert chunk_may_match([condition], chunk, stored, SCHEMA)
        assert chunk_may_match([condition], chunk, stored, SCHEMA, by_stats=False)
        assert chunk_may_match([condition], chunk, stored, source_names(SCHEMA), by_stats=False)


@settings(max_examples=100)
@given(rows=rows(max_size=20), spec=specs(), conditions=st.lists(filters(), min_size=2, max_size=3))
def test_every_filter_must_hold_for_a_chunk_to_be_dropped(rows: list[Row], spec: PartitionSpec,
                                                          conditions: list[Filter]) -> None:
    stored = {spec.spec_id: spec}
    for chunk, chunk_rows in chunks_of(table_of(rows), spec):
        if any(all(passes(c, row) for c in conditions) for row in chunk_rows):
            assert chunk_may_match(conditions, chunk, stored, SCHEMA)


# -- pruning does drop -------------------------------------------------------------------------------------


def _day_rows() -> list[Row]:
    # three events on each of days -2 .. 4, at hours 1, 12 and 23
    moments = [day * MICROS_PER_DAY + hour * MICROS_PER_HOUR for day in range(-2, 5) for hour in (1, 12, 23)]
    return [{"n": k, "i": None, "d": None, "ts": ts, "local": None, "s": None, "flag": None}
            for k, ts in enumerate(moments)]


def kept(conditions: list[Filter], spec: PartitionSpec, rows: list[Row], schema: Any = SCHEMA,
         by_stats: bool = False) -> list[list[Any]]:
    """The partition values of the chunks that pruning keeps."""
    chunks = chunks_of(table_of(rows), spec)
    return [c.partition["values"] for c, _ in chunks
            if c.partition and chunk_may_match(conditions, c, {spec.spec_id: spec}, schema, by_stats=by_stats)]


def test_a_day_filter_drops_the_other_days() -> None:
    spec = PartitionSpec.from_json(parse_partitioning("days(ts)", SCHEMA, 1, 999).to_json())
    rows = _day_rows()
    day = {"op": "and", "left": {"op": "ge", "column": "ts", "value": 2 * MICROS_PER_DAY},
           "right": {"op": "lt", "column": "ts", "value": 3 * MICROS_PER_DAY}}
    assert kept([day], spec, rows) == [[2]]
    assert kept([{"op": "le", "column": "ts", "value": -MICROS_PER_DAY - 1}], spec, rows) == [[-2]]
    assert kept([{"op": "gt", "column": "ts", "value": 4 * MICROS_PER_DAY - 1}], spec, rows) == [[4]]
    assert kept([{"op": "eq", "column": "ts", "value": 12 * MICROS_PER_HOUR}], spec, rows) == [[0]]
    assert kept([{"op": "in", "column": "ts", "values": [-1, 3 * MICROS_PER_DAY]}], spec, rows) == [[-1], [3]]
    either = {"op": "or", "left": {"op": "lt", "column": "ts", "value": -MICROS_PER_DAY},
              "right": {"op": "ge", "column": "ts", "value": 4 * MICROS_PER_DAY}}
    assert kept([either], spec, rows) == [[-2], [4]]
    # without the source's type, days since the epoch and microseconds look alike: nothing is dropped
    assert len(kept([day], spec, rows, schema=source_names(SCHEMA))) == 7


def test_hours_months_and_years_drop_too() -> None:
    rows = _day_rows()
    hours = parse_partitioning("hours(ts)", SCHEMA, 1, 999)
    at_noon = {"op": "eq", "column": "ts", "value": 12 * MICROS_PER_HOUR + 5}
    assert kept([at_noon], hours, rows) == [[12]]
    assert kept([at_noon], hours, rows, schema=source_names(SCHEMA)) == [[12]]  # hours are always of micros
    months = parse_partitioning("months(ts)", SCHEMA, 1, 999)
    assert kept([{"op": "lt", "column": "ts", "value": 0}], months, rows) == [[-1]]
    years = parse_partitioning("years(ts)", SCHEMA, 1, 999)
    assert kept([{"op": "ge", "column": "ts", "value": 0}], years, rows) == [[0]]


def test_a_bucket_equality_drops_the_other_buckets() -> None:
    spec = parse_partitioning("bucket(8, n)", SCHEMA, 1, 999)
    rows = [{"n": k, "i": None, "d": None, "ts": None, "local": None, "s": None, "flag": None} for k in range(100)]
    chunks = chunks_of(table_of(rows), spec)
    assert len(chunks) == 8
    want = apply("bucket[8]", 42)
    # every chunk's statistics hold 42: only the partition tells
    assert all(c.stats["columns"]["n"]["min"] <= 42 <= c.stats["columns"]["n"]["max"] for c, _ in chunks)
    assert kept([{"op": "eq", "column": "n", "value": 42}], spec, rows, by_stats=True) == [[want]]
    both = sorted({want, apply("bucket[8]", 7)})
    assert sorted(v for [v] in kept([{"op": "in", "column": "n", "values": [42, 7]}], spec, rows)) == both
    # buckets keep no order: ranges keep every chunk
    assert len(kept([{"op": "lt", "column": "n", "value": 1}], spec, rows)) == 8


def test_string_truncation_and_identity_answer_startswith() -> None:
    names = ["apple", "apricot", "banana", "blueberry", "cherry", None]
    rows = [{"n": None, "i": None, "d": None, "ts": None, "local": None, "s": s, "flag": None} for s in names]
    trunc = parse_partitioning("truncate(2, s)", SCHEMA, 1, 999)
    assert kept([{"op": "startswith", "column": "s", "value": "a"}], trunc, rows) == [["ap"]]
    assert kept([{"op": "startswith", "column": "s", "value": "bl"}], trunc, rows) == [["bl"]]
    assert kept([{"op": "startswith", "column": "s", "value": "apr"}], trunc, rows) == [["ap"]]
    assert kept([{"op": "ge", "column": "s", "value": "c"}], trunc, rows) == [["ch"]]
    assert kept([{"op": "isnull", "column": "s"}], trunc, rows) == [[None]]
    assert len(kept([{"op": "notnull", "column": "s"}], trunc, rows)) == 4
    identity = parse_partitioning("s", SCHEMA, 1, 999)
    assert kept([{"op": "startswith", "column": "s", "value": "ap"}], identity, rows) == [["apple"], ["apricot"]]


def test_integer_truncation_answers_ranges() -> None:
    rows = [{"n": None, "i": k, "d": None, "ts": None, "local": None, "s": None, "flag": None} for k in range(-25, 25)]
    spec = parse_partitioning("truncate(10, i)", SCHEMA, 1, 999)
    assert kept([{"op": "lt", "column": "i", "value": -10}], spec, rows) == [[-30], [-20]]
    assert kept([{"op": "lt", "column": "i", "value": -9}], spec, rows) == [[-30], [-20], [-10]]
    assert kept([{"op": "gt", "column": "i", "value": 9}], spec, rows) == [[10], [20]]


def test_chunks_are_kept_when_the_partition_cannot_judge() -> None:
    spec = parse_partitioning("days(ts)", SCHEMA, 1, 999)
    specs = {1: spec}
    eq = [{"op": "eq", "column": "ts", "value": 0}]
    far = Chunk("a", "columnar", event_count=1, partition={"specId": 1, "values": [5]})
    assert not chunk_may_match(eq, far, specs, SCHEMA)
    for chunk in (Chunk("a", "columnar", event_count=1),  # written unpartitioned
                  Chunk("a", "columnar", event_count=1, partition={"specId": 7, "values": [5]}),  # unknown spec
                  Chunk("a", "columnar", event_count=1, partition={"specId": 1, "values": [5, 6]}),
                  Chunk("a", "columnar", event_count=1, partition={"specId": 1})):
        assert chunk_may_match(eq, chunk, specs, SCHEMA)
    assert chunk_may_match([], far, specs, SCHEMA)
    for odd in ({"op": "eq", "column": "ts", "value": "2020-01-01"}, {"op": "eq", "column": "ts", "value": None},
                {"op": "eq", "column": "ts", "value": 1.5}, {"op": "contains", "column": "ts", "value": 0},
                {"op": "in", "column": "ts", "values": [0, "x"]}):
        assert chunk_may_match([odd], far, specs, SCHEMA), odd
    assert not chunk_may_match([{"op": "in", "column": "ts", "values": [None, 0]}], far, specs, SCHEMA)


def test_statistics_prune_unless_told_not_to() -> None:
    table = table_of([{"n": 5, "i": 1, "d": 1, "ts": 0, "local": 0, "s": "a", "flag": True}])
    chunk = Chunk("a", "columnar", event_count=1, stats=column_stats(table))
    gt = [{"op": "gt", "column": "n", "value": 5}]
    assert not chunk_may_match(gt, chunk, {}, SCHEMA)
    assert chunk_may_match(gt, chunk, {}, SCHEMA, by_stats=False)


def test_filters_name_columns_as_they_are_now() -> None:
    stored = PartitionSpec.from_json(parse_partitioning("bucket(8, n)", SCHEMA, 1, 999).to_json())
    chunk = Chunk("a", "columnar", event_count=1, partition={"specId": 1, "values": [apply("bucket[8]", 1)]})
    other = [{"op": "eq", "column": "id", "value": 3}]  # bucket 3, where 1 is in bucket 4
    renamed = {"type": "struct", "fields": [column("id", "long", 1)]}
    assert not chunk_may_match(other, chunk, {1: stored}, renamed)
    assert not chunk_may_match(other, chunk, {1: stored}, {1: "id"})
    # the spec's column was dropped and another took its name: that column's filters say nothing of the spec
    replaced = {"type": "struct", "fields": [column("n", "long", 2)]}
    n_filter = [{"op": "eq", "column": "n", "value": 3}]
    assert chunk_may_match(n_filter, chunk, {1: stored}, replaced)
    assert chunk_may_match(n_filter, chunk, {1: stored}, {2: "n"})


def test_a_partition_value_that_is_null_answers_null_tests() -> None:
    spec = parse_partitioning("bucket(4, n), months(d)", SCHEMA, 1, 999)
    assert partition_may_match([{"op": "isnull", "column": "n"}], spec, [None, 3])
    assert not partition_may_match([{"op": "isnull", "column": "n"}], spec, [1, 3])
    assert not partition_may_match([{"op": "notnull", "column": "d"}], spec, [1, None])
    assert not partition_may_match([{"op": "eq", "column": "n", "value": 1}], spec, [None, None])
    assert partition_may_match([{"op": "eq", "column": "missing", "value": 1}], spec, [None, None])
    assert partition_may_match([{"op": "isnull", "column": "n"}], PartitionSpec(0), [])


def test_a_table_of_the_support_schema_round_trips() -> None:
    # the helpers' own check: rows in stats units survive the Arrow table
    row = {"n": -(2**63), "i": 2**31 - 1, "d": -719162, "ts": -1, "local": 5, "s": "\u00e9", "flag": False, "b": -128}
    assert table_of([row]).schema.field("d").type == pa.date32()
    assert rows_of(table_of([row])) == [row]


def test_a_truncation_saturated_at_the_types_minimum_is_kept() -> None:
    spec = parse_partitioning("truncate(10, b)", SCHEMA, 1, 999)
    stored = {1: PartitionSpec.from_json(spec.to_json())}
    [(chunk, _)] = chunks_of(table_of([{"b": -125}]), spec)
    assert chunk.partition == {"specId": 1, "values": [-128]}  # -130 does not fit a byte
    at_most = [{"op": "le", "column": "b", "value": -125}]
    assert chunk_may_match(at_most, chunk, stored, SCHEMA, by_stats=False)
    assert chunk_may_match(at_most, chunk, stored, source_names(SCHEMA), by_stats=False)  # type unknown
    assert not chunk_may_match([{"op": "ge", "column": "b", "value": -100}], chunk, stored, SCHEMA, by_stats=False)
