"""rules.py: a table's new spec and what it may read, the partitions a commit's chunks may carry, and the
order partitions are listed in; and check_values' refusal of values no row could have."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from catalog_api.model import Chunk
from catalog_api.partitioning.rules import (
    by_partition,
    check_partition,
    check_sources,
    check_split,
    new_spec,
    stored_partition,
)
from catalog_api.partitioning.spec import PartitioningError, PartitionSpec, check_values, parse_partitioning
from catalog_api.schema.fieldids import has_field_ids


def column(name: str, dtype: Any, fid: int | None = None) -> dict[str, Any]:
    return {"name": name, "type": dtype, "nullable": True, "metadata": {} if fid is None else {"parquet.field.id": fid}}


SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    column("id", "long", 1), column("ts", "timestamp", 2), column("region", "string", 3),
    column("raw", "binary", 4), column("n", "integer", 5),
]}
NO_IDS: dict[str, Any] = {"type": "struct", "fields": [column("id", "long"), column("ts", "timestamp")]}
SPEC = parse_partitioning("days(ts), bucket(8, id), region", SCHEMA, 1, 999)
SPECS = {0: PartitionSpec(0), 1: SPEC}


def shape(spec: PartitionSpec) -> tuple[int, list[tuple[int, int, str]]]:
    return spec.spec_id, [(f.field_id, f.source_id, str(f.transform)) for f in spec.fields]


# -- new_spec -----------------------------------------------------------------------------------------------------


def test_a_new_table_gets_spec_1_and_its_columns_get_field_ids() -> None:
    before = copy.deepcopy(NO_IDS)
    spec, schema = new_spec("days(ts)", NO_IDS)
    assert before == NO_IDS  # the schema given is left alone
    assert has_field_ids(schema)
    assert shape(spec) == (1, [(1000, 2, "day")])


def test_empty_text_is_spec_0_and_leaves_the_schema_as_it_is() -> None:
    for text in ("", "  "):
        spec, schema = new_spec(text, NO_IDS)
        assert spec == PartitionSpec(0)
        assert schema is NO_IDS


def test_a_changed_spec_gets_the_next_id_and_an_identical_one_its_old_id() -> None:
    second = parse_partitioning("bucket(4, id)", SCHEMA, 2, 1002, [SPEC])
    specs = (PartitionSpec(0), SPEC, second)
    spec, schema = new_spec("months(ts), bucket(8, id)", SCHEMA, specs, 1003)
    assert schema is SCHEMA
    # the kept field keeps its id; the new one comes after the table's highest
    assert shape(spec) == (3, [(1004, 2, "month"), (1001, 1, "bucket[8]")])
    assert shape(new_spec("days(ts), bucket(8, id), region", SCHEMA, specs, 1003)[0]) == shape(SPEC)
    assert new_spec("", SCHEMA, specs, 1003)[0] == PartitionSpec(0)
    with pytest.raises(PartitioningError, match="nope"):
        new_spec("nope(ts)", SCHEMA, specs, 1003)


# -- check_sources --------------------------------------------------------------------------------------------------


def without(name: str) -> dict[str, Any]:
    return {**SCHEMA, "fields": [c for c in SCHEMA["fields"] if c["name"] != name]}


def test_a_spec_reads_columns_that_are_still_there_and_of_a_type_it_takes() -> None:
    check_sources(SPEC, SCHEMA)
    check_sources(PartitionSpec(0), {"type": "struct", "fields": []}, ("id",))
    with pytest.raises(PartitioningError, match="cannot drop column ts: partition field ts_day") as dropped:
        check_sources(SPEC, without("ts"), dropping=True)
    assert "setPartitioning" in dropped.value.message
    with pytest.raises(PartitioningError, match="cannot remove column ts"):
        check_sources(SPEC, without("ts"))
    retyped = copy.deepcopy(SCHEMA)
    retyped["fields"][2]["type"] = "double"
    with pytest.raises(PartitioningError, match=r"region cannot become of type double.*identity takes"):
        check_sources(SPEC, retyped)
    # a rename is no drop: the field follows its column's id
    renamed = copy.deepcopy(SCHEMA)
    renamed["fields"][1]["name"] = "at"
    check_sources(SPEC, renamed)


def test_a_primary_key_table_is_partitioned_by_key_columns_only() -> None:
    check_sources(SPEC, SCHEMA, ("id", "ts", "region"))
    with pytest.raises(PartitioningError, match=r"reads column region, which is not in the primary key \(id, ts\)"):
        check_sources(SPEC, SCHEMA, ("id", "ts"))


# -- chunks' partitions -------------------------------------------------------------------------------------------


def test_a_partition_is_kept_as_given_and_spec_0_as_none() -> None:
    partition = {"specId": 1, "values": [1, 2, "eu"]}
    assert stored_partition("a.parquet", partition) is partition
    assert stored_partition("a.parquet", None) is None
    assert stored_partition("a.parquet", {"specId": 0, "values": []}) is None
    with pytest.raises(PartitioningError, match=r"chunk a\.parquet: spec 0 .* values"):
        stored_partition("a.parquet", {"specId": 0, "values": [1]})


@pytest.mark.parametrize("partition", [
    {"specId": 1}, {"values": []}, {"specId": True, "values": []}, {"specId": -1, "values": []},
    {"specId": "1", "values": []}, {"specId": 1, "values": "eu"}, {"specId": 1, "values": [], "extra": 1},
    [1, []], "1",
])
def test_a_partition_of_another_shape_is_refused_naming_the_chunk(partition: Any) -> None:
    with pytest.raises(PartitioningError, match=r"chunk a.parquet: partition must be"):
        stored_partition("a.parquet", partition)


def test_a_split_chunk_of_a_partitioned_table_names_its_spec() -> None:
    check_split("table s.t", "a.parquet", False, PartitionSpec(0))
    # any spec named passes (an earlier one's: a writer that loaded the table before the spec changed)
    check_split("table s.t", "a.parquet", True, SPEC)
    with pytest.raises(PartitioningError, match=r"chunk a.parquet has no partition, but table s.t is partitioned "
                                                r"by days\(ts\), bucket\(8, id\), region \(spec 1\)"):
        check_split("table s.t", "a.parquet", False, SPEC)


def test_a_partition_names_a_spec_of_the_table_and_values_of_its_fields() -> None:
    check_partition("table s.t", "a.parquet", None, SPECS, None)
    check_partition("table s.t", "a.parquet", {"specId": 1, "values": [19000, 7, None]}, SPECS, SCHEMA)
    with pytest.raises(PartitioningError, match=r"chunk a.parquet: partition spec 2 is not a spec of table s.t "
                                                r"\(its specs: 0, 1\)"):
        check_partition("table s.t", "a.parquet", {"specId": 2, "values": []}, SPECS, SCHEMA)
    with pytest.raises(PartitioningError, match=r"chunk a\.parquet: .*region"):
        check_partition("table s.t", "a.parquet", {"specId": 1, "values": [19000, 7, 3]}, SPECS, SCHEMA)
    with pytest.raises(PartitioningError, match=r"chunk a\.parquet: .*id_bucket.* between 0 and 7"):
        check_partition("table s.t", "a.parquet", {"specId": 1, "values": [19000, 8, "eu"]}, SPECS, SCHEMA)
    with pytest.raises(PartitioningError, match=r"spec 1 is not a spec of stream s\.f"):
        check_partition("stream s.f", "a.parquet", {"specId": 1, "values": []}, {0: PartitionSpec(0)}, None)


# -- check_values: values no row could have ------------------------------------------------------------------------


def test_values_no_row_could_have_are_refused() -> None:
    spec = parse_partitioning("bucket(4, id), truncate(10, n), truncate(3, region), truncate(2, raw)", SCHEMA, 1, 999)
    fine = [0, -20, "abc", "YWJj"]  # a truncation of binary is base64 text, longer than W
    assert check_values(spec, fine, SCHEMA) == fine
    assert check_values(spec, [3, 0, "é", None], SCHEMA) == [3, 0, "é", None]
    for bad, words in (([4, 0, "a", None], "between 0 and 3"), ([-1, 0, "a", None], "between 0 and 3"),
                       ([0, 15, "a", None], "multiple of 10"), ([0, 0, "abcd", None], "at most 3 characters")):
        with pytest.raises(PartitioningError, match=words):
            check_values(spec, bad, SCHEMA)
    # every field's type is checked before any range
    with pytest.raises(PartitioningError, match="n_trunc"):
        check_values(spec, [4, "x", "a", None], SCHEMA)


# -- listing partitions ---------------------------------------------------------------------------------------------


def chunk(path: str, partition: dict[str, Any] | None) -> Chunk:
    return Chunk(path, "columnar", partition=partition)


def test_chunks_are_grouped_by_their_values_under_the_spec_nulls_first() -> None:
    chunks = [
        chunk("a", {"specId": 1, "values": [2, "eu"]}),
        chunk("b", {"specId": 1, "values": [None, "eu"]}),
        chunk("c", {"specId": 2, "values": [1]}),
        chunk("d", None),
        chunk("e", {"specId": 1, "values": [2, None]}),
        chunk("f", {"specId": 1, "values": [2, "eu"]}),
        chunk("g", {"specId": 1, "values": [-1, "us"]}),
    ]
    groups = by_partition(chunks, SPEC)
    assert [(values, [c.path for c in group]) for values, group in groups] == [
        ((None, "eu"), ["b"]), ((-1, "us"), ["g"]), ((2, None), ["e"]), ((2, "eu"), ["a", "f"])]
    assert [(values, [c.path for c in group]) for values, group in by_partition(chunks, PartitionSpec(0))] == [
        ((), ["d"])]
    assert by_partition([], SPEC) == []
