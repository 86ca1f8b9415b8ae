"""The Python data source's parts that need no SparkSession: chunk skipping, Arrow shaping, options, planning."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark_streamcat.arrow import conform_batch, records_to_batches, spark_arrow_schema
from pyspark_streamcat.options import OptionError, SourceOptions
from pyspark_streamcat.scan_planning import plan_partitions

from catalog_api.model import Chunk
from catalog_api.partitioning.pruning import may_match
from catalog_api.streams.chunks import column_stats
from tests.partitioning.support import passes

# -- chunk skipping ---------------------------------------------------------------------------------

OPS = ("eq", "gt", "ge", "lt", "le")

ints = st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=1, max_size=30)
texts = st.lists(st.one_of(st.none(), st.text(max_size=4)), min_size=1, max_size=30)


def int_filters() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.builds(lambda op, v: {"op": op, "column": "n", "value": v}, st.sampled_from(OPS),
                  st.integers(-1100, 1100)),
        st.builds(lambda vs: {"op": "in", "column": "n", "values": vs}, st.lists(st.integers(-1100, 1100),
                                                                                  max_size=4)),
        st.builds(lambda op: {"op": op, "column": "n"}, st.sampled_from(["isnull", "notnull"])),
        st.builds(lambda p: {"op": "startswith", "column": "s", "value": p}, st.text(max_size=2)),
    )
    return st.recursive(leaf, lambda inner: st.builds(lambda op, a, b: {"op": op, "left": a, "right": b},
                                                      st.sampled_from(["and", "or"]), inner, inner), max_leaves=4)


@settings(max_examples=300, deadline=None)
@given(numbers=ints, strings=texts, condition=int_filters())
def test_a_chunk_holding_a_matching_row_is_never_skipped(numbers: list[int | None], strings: list[str | None],
                                                         condition: dict[str, Any]) -> None:
    size = min(len(numbers), len(strings))
    table = pa.table({"n": pa.array(numbers[:size], pa.int64()), "s": pa.array(strings[:size], pa.string())})
    stats = column_stats(table)
    if any(passes(condition, row) for row in table.to_pylist()):
        assert may_match([condition], stats, size)


@settings(max_examples=100, deadline=None)
@given(numbers=st.lists(st.integers(0, 100), min_size=1, max_size=20))
def test_ranges_outside_the_statistics_skip_the_chunk(numbers: list[int]) -> None:
    stats = column_stats(pa.table({"n": pa.array(numbers, pa.int64())}))
    low, high = min(numbers), max(numbers)
    assert not may_match([{"op": "gt", "column": "n", "value": high}], stats)
    assert not may_match([{"op": "lt", "column": "n", "value": low}], stats)
    assert not may_match([{"op": "eq", "column": "n", "value": high + 1}], stats)
    assert not may_match([{"op": "isnull", "column": "n"}], stats)
    assert may_match([{"op": "ge", "column": "n", "value": high}], stats)
    assert may_match([{"op": "gt", "column": "missing", "value": 0}], stats)  # no statistics: keep


def test_chunks_without_statistics_or_with_values_of_another_type_are_kept() -> None:
    assert may_match([{"op": "eq", "column": "n", "value": 1}], {})
    stats = column_stats(pa.table({"n": pa.array([1, 2], pa.int64())}))
    assert may_match([{"op": "eq", "column": "n", "value": "text"}], stats)
    all_null = column_stats(pa.table({"n": pa.array([None, None], pa.int64())}))
    assert not may_match([{"op": "eq", "column": "n", "value": 1}], all_null)
    assert may_match([{"op": "isnull", "column": "n"}], all_null)


# -- Arrow shaping --------------------------------------------------------------------------------------

NOW = StructType([
    StructField("id", LongType()),
    StructField("score", DoubleType()),
    StructField("tags", ArrayType(StringType())),
    StructField("address", StructType([StructField("city", StringType()), StructField("zip", IntegerType())])),
    StructField("added", StringType()),
])


def test_an_older_chunk_is_shaped_into_the_current_schema() -> None:
    old = pa.record_batch({
        "address": pa.array([{"city": "Oslo"}, None], pa.struct([pa.field("city", pa.string())])),
        "ID": pa.array([1, 2], pa.int32()),
        "score": pa.array([1.5, None], pa.float32()),
        "tags": pa.array([["a"], None], pa.large_list(pa.string())),
        "dropped": pa.array(["x", "y"]),
    })
    shaped = conform_batch(old, spark_arrow_schema(NOW))
    assert shaped.schema.equals(spark_arrow_schema(NOW))
    assert shaped.to_pylist() == [
        {"id": 1, "score": 1.5, "tags": ["a"], "address": {"city": "Oslo", "zip": None}, "added": None},
        {"id": 2, "score": None, "tags": None, "address": None, "added": None},
    ]


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=20),
       offset=st.integers(0, 5))
def test_shaping_keeps_values_of_sliced_batches(values: list[int | None], offset: int) -> None:
    nested = pa.array([None if v is None else {"zip": v, "city": str(v)} for v in values],
                      pa.struct([pa.field("zip", pa.int32()), pa.field("city", pa.string())]))
    batch = pa.record_batch({"address": nested, "id": pa.array(values, pa.int64())}).slice(offset)
    shaped = conform_batch(batch, spark_arrow_schema(NOW))
    expected = [None if v is None else {"city": str(v), "zip": v} for v in values[offset:]]
    assert shaped.column(3).to_pylist() == expected
    assert shaped.column(0).to_pylist() == values[offset:]


def test_decoded_json_values_become_spark_values() -> None:
    schema = StructType([
        StructField("ts", TimestampType()), StructField("local", TimestampNTZType()), StructField("day", DateType()),
        StructField("amount", DecimalType(10, 2)), StructField("raw", BinaryType()),
        StructField("m", MapType(StringType(), DateType())), StructField("n", LongType()),
    ])
    record = {"ts": "2024-05-01T10:00:00+02:00", "local": "2024-05-01T10:00:00", "day": "2024-05-01",
              "amount": "12.50", "raw": "AAE=", "m": {"a": "2020-02-29"}, "n": "9007199254740993"}
    [batch] = records_to_batches([record, {}], schema, spark_arrow_schema(schema), "json")
    assert batch.to_pylist()[0] == {
        "ts": dt.datetime(2024, 5, 1, 8, 0, tzinfo=dt.UTC), "local": dt.datetime(2024, 5, 1, 10, 0),
        "day": dt.date(2024, 5, 1), "amount": decimal.Decimal("12.50"), "raw": b"\x00\x01",
        "m": [("a", dt.date(2020, 2, 29))], "n": 9007199254740993,
    }
    assert set(batch.to_pylist()[1].values()) == {None}


def test_protobuf_wrappers_of_nullable_elements_are_unwrapped() -> None:
    schema = StructType([
        StructField("tags", ArrayType(StringType(), containsNull=True)),
        StructField("counts", MapType(IntegerType(), ArrayType(LongType(), containsNull=False))),
        StructField("plain", ArrayType(LongType(), containsNull=False)),
    ])
    record = {"tags": [{"value": "a"}, {}], "counts": {"7": {"value": ["1", 2]}}, "plain": [3]}
    [batch] = records_to_batches([record], schema, spark_arrow_schema(schema), "protobuf")
    assert batch.to_pylist() == [{"tags": ["a", None], "counts": [(7, [1, 2])], "plain": [3]}]


# -- options and planning ------------------------------------------------------------------------------


def test_options_name_the_table_and_reject_nonsense() -> None:
    options = SourceOptions.parse({"uri": "http://x", "scope": "s", "table": "t", "versionasof": "3",
                                   "maxcommitspertrigger": "2",
                                   "streamcat.filters": '[{"op": "isnull", "column": "a"}]'})
    assert (options.stream, options.cut, options.max_commits_per_trigger) == ("t", 3, 2)
    assert options.filters == [{"op": "isnull", "column": "a"}]
    with pytest.raises(OptionError, match="table"):
        SourceOptions.parse({"uri": "http://x", "scope": "s"})
    with pytest.raises(OptionError, match="maxcommitspertrigger"):
        SourceOptions.parse({"uri": "http://x", "scope": "s", "table": "t", "maxcommitspertrigger": "0"})
    with pytest.raises(OptionError, match="startingcommit"):
        SourceOptions.parse({"uri": "http://x", "scope": "s", "table": "t", "startingcommit": "soon"})


@given(sizes=st.lists(st.integers(0, 50), max_size=40), target=st.integers(1, 100))
def test_planning_reads_every_chunk_once_in_order(sizes: list[int], target: int) -> None:
    chunks = [Chunk(path=f"c{i}", kind="columnar", event_count=n, commit=i) for i, n in enumerate(sizes)]
    partitions = plan_partitions(chunks, target)
    assert [c.path for p in partitions for c in p.chunks] == [c.path for c in chunks]
    for partition in partitions[:-1]:
        assert sum(c.rows for c in partition.chunks) >= target
        assert sum(c.rows for c in partition.chunks[:-1]) < target
    assert [p.value for p in partitions] == list(range(len(partitions)))
