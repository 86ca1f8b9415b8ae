"""transforms.split_by_partition and partition_values: rows regrouped, nothing lost, each group in one
partition."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given, settings

from catalog_api.partitioning.spec import PartitioningError, PartitionSpec, parse_partitioning
from catalog_api.partitioning.transforms import apply, partition_values, split_by_partition
from tests.partitioning.support import SCHEMA, Row, rows, rows_of, specs, table_of


def _key(row: Row) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(row.items()))


@settings(max_examples=200)
@given(rows=rows(), spec=specs())
def test_groups_hold_every_row_once_each_in_its_partition(rows: list[Row], spec: PartitionSpec) -> None:
    table = table_of(rows).append_column("row", pa.array(range(len(rows)), pa.int64()))
    groups = split_by_partition(table, spec)
    regrouped = [row for _, group in groups for row in rows_of(group)]
    assert Counter(_key(r) for r in regrouped) == Counter(_key(r) for r in rows_of(table))
    seen = set()
    for values, group in groups:
        assert group.schema == table.schema
        key = tuple(values)
        assert key not in seen  # one group per partition
        seen.add(key)
        numbers = group.column("row").to_pylist()
        assert numbers == sorted(numbers)  # the table's order within a group
        for row in rows_of(group):
            assert values == [apply(f.transform, row[f.source], f.source_type) for f in spec.fields]
    firsts = [group.column("row")[0].as_py() for _, group in groups]
    assert firsts == sorted(firsts)  # groups in the order of their first row


@settings(max_examples=50)
@given(rows=rows(), spec=specs())
def test_partition_values_are_one_array_per_field(rows: list[Row], spec: PartitionSpec) -> None:
    values = partition_values(table_of(rows), spec)
    assert len(values) == len(spec.fields)
    for f, array in zip(spec.fields, values, strict=True):
        assert array.to_pylist() == [apply(f.transform, row[f.source], f.source_type) for row in rows]


def test_values_are_json_ready() -> None:
    table = table_of([{"n": 5, "i": 1, "d": 3, "ts": -1, "local": 0, "s": "abcd", "flag": True}])
    spec = parse_partitioning("d, ts, days(ts), truncate(2, s), flag, bucket(4, s)", SCHEMA, 1, 999)
    [(values, group)] = split_by_partition(table, spec)
    assert values == [3, -1, -1, "ab", True, apply("bucket[4]", "abcd")]
    assert group.num_rows == 1


def test_an_unpartitioned_spec_gives_one_group_and_no_rows_none() -> None:
    table = table_of([{"n": 1, "i": 1, "d": 1, "ts": 1, "local": 1, "s": "a", "flag": None}])
    assert split_by_partition(table, PartitionSpec(0)) == [([], table)]
    spec = parse_partitioning("days(ts)", SCHEMA, 1, 999)
    assert split_by_partition(table.slice(0, 0), spec) == []


def test_null_sources_form_their_own_partition() -> None:
    table = table_of([{"n": None, "i": 1, "d": 1, "ts": None, "local": 1, "s": None, "flag": None},
                      {"n": 7, "i": 2, "d": 1, "ts": 0, "local": 1, "s": "x", "flag": None},
                      {"n": None, "i": 3, "d": 1, "ts": None, "local": 1, "s": None, "flag": None}])
    spec = parse_partitioning("bucket(4, n), hours(ts)", SCHEMA, 1, 999)
    groups = split_by_partition(table, spec)
    assert [(values, group.column("i").to_pylist()) for values, group in groups] == [
        ([None, None], [1, 3]), ([apply("bucket[4]", 7), 0], [2])]


def test_a_missing_source_column_is_named() -> None:
    spec = parse_partitioning("days(ts)", SCHEMA, 1, 999)
    with pytest.raises(PartitioningError, match="reads column 'ts', not in the rows"):
        split_by_partition(pa.table({"n": [1]}), spec)
