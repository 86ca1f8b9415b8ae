"""spec.py: the text form both ways, errors that name the problem, field ids across specs, JSON."""

from __future__ import annotations

from typing import Any

import pytest

from catalog_api.partitioning.spec import (
    PartitionField,
    PartitioningError,
    PartitionSpec,
    Transform,
    check_values,
    parse_partitioning,
    result_type,
    source_names,
    with_current_names,
)
from tests.partitioning.support import column

SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    column("id", "long", 1),
    column("ts", "timestamp", 2),
    column("d", "date", 3),
    column("name", "string", 4),
    column("my `col`", "string", 5),
    column("n", "integer", 6),
    column("raw", "binary", 7),
    column("flag", "boolean", 8),
    column("amount", "double", 9),
    column("address", {"type": "struct", "fields": [column("city", "string", 11)]}, 10),
    column("local", "timestamp_ntz", 12),
    column("code", "varchar(4)", 13),
    column("price", "decimal(10,2)", 14),
    column("noid", "string", None),
]}


def parse(text: str, spec_id: int = 1, last: int = 999, previous: tuple[PartitionSpec, ...] = ()) -> PartitionSpec:
    return parse_partitioning(text, SCHEMA, spec_id, last, previous)


def shape(spec: PartitionSpec) -> list[tuple[int, int, str, str, str]]:
    return [(f.field_id, f.source_id, f.source, str(f.transform), f.name) for f in spec.fields]


@pytest.mark.parametrize(("spark", "iceberg", "transform", "name"), [
    ("years(ts)", "year(ts)", "year", "ts_year"),
    ("months(ts)", "month(ts)", "month", "ts_month"),
    ("days(ts)", "day(ts)", "day", "ts_day"),
    ("hours(ts)", "hour(ts)", "hour", "ts_hour"),
    ("ts", "identity(ts)", "identity", "ts"),
    ("bucket(8, ts)", "BUCKET(8, ts)", "bucket[8]", "ts_bucket"),
    ("truncate(4, name)", "truncate(name, 4)", "truncate[4]", "name_trunc"),
])
def test_each_transform_parses_in_both_spellings(spark: str, iceberg: str, transform: str, name: str) -> None:
    for text in (spark, iceberg):
        spec = parse(text)
        assert len(spec.fields) == 1
        assert str(spec.fields[0].transform) == transform
        assert spec.fields[0].name == name
        assert spec.text() == spark  # the text form is Spark's describe()
        assert parse(spec.text()) == spec


def test_a_whole_partitioning_parses_in_order() -> None:
    spec = parse("days(ts), bucket(16, id), truncate(2, name), flag", spec_id=3)
    assert spec.spec_id == 3
    assert shape(spec) == [
        (1000, 2, "ts", "day", "ts_day"),
        (1001, 1, "id", "bucket[16]", "id_bucket"),
        (1002, 4, "name", "truncate[2]", "name_trunc"),
        (1003, 8, "flag", "identity", "flag"),
    ]
    assert spec.text() == "days(ts), bucket(16, id), truncate(2, name), flag"
    assert spec.highest_field_id() == 1003
    assert spec.highest_field_id(2000) == 2000


def test_back_quoted_names_and_doubled_back_quotes() -> None:
    spec = parse("`my ``col```, truncate(3, `name`), `ts`, days(`local`)")
    assert [f.source for f in spec.fields] == ["my `col`", "name", "ts", "local"]
    assert spec.text() == "`my ``col```, truncate(3, name), ts, days(local)"
    assert parse(spec.text()) == spec
    assert parse("bucket(8L, id)").fields[0].transform == Transform("bucket", 8)  # a long literal's describe()


def test_names_spark_leaves_unquoted_that_look_like_numbers() -> None:
    schema = {"type": "struct", "fields": [column("8L", "long", 1), column("123", "long", 2)]}
    spec = parse_partitioning("8L, bucket(4, `123`)", schema, 1, 999)
    assert [f.source for f in spec.fields] == ["8L", "123"]
    assert spec.text() == "8L, bucket(4, `123`)"


def test_names_resolve_without_regard_to_case_and_keep_the_columns_spelling() -> None:
    spec = parse("DAYS(TS), Id")
    assert [(f.source, f.name) for f in spec.fields] == [("ts", "ts_day"), ("id", "id")]


def test_empty_text_is_the_unpartitioned_spec() -> None:
    assert parse("") == PartitionSpec(0)
    assert parse("   ", spec_id=5) == PartitionSpec(0)
    assert parse("").text() == ""
    assert PartitionSpec(0).unpartitioned


@pytest.mark.parametrize(("text", "problem"), [
    ("days(missing)", "no column missing"),
    ("address.city", "address.city is a nested column"),
    ("days(address.city)", "nested column"),
    ("missing.city", "no column missing.city"),
    ("noid", "has no field id"),
    ("hours(d)", "column d of type date cannot be partitioned by hour"),
    ("days(id)", "column id of type long cannot be partitioned by day"),
    ("amount", "column amount of type double cannot be partitioned by identity"),
    ("raw", "column raw of type binary cannot be partitioned by identity"),
    ("bucket(4, flag)", "column flag of type boolean cannot be partitioned by bucket"),
    ("truncate(4, ts)", "column ts of type timestamp cannot be partitioned by truncate"),
    ("bucket(4, price)", "column price of type decimal(10,2) cannot be partitioned by bucket"),
    ("address", "column address of type struct cannot be partitioned"),
    ("bucket(0, id)", "bucket count must be between 1 and 1,000,000, not 0"),
    ("bucket(1000001, id)", "bucket count must be between 1 and 1,000,000"),
    ("truncate(0, name)", "truncate width must be at least 1, not 0"),
    ("bucket(id)", "must be written bucket(N, column)"),
    ("truncate(name)", "must be written truncate(W, column)"),
    ("days(ts, 3)", "must be written day(column)"),
    ("bucket(4, id, ts)", "must be written bucket(N, column)"),
    ("days(ts), day(ts)", "day(ts) repeats days(ts)"),
    ("id, `id`", "`id` repeats id"),
    ("days(ts), ts_day", "no column ts_day"),
    ("weeks(ts)", "unknown transform 'weeks'"),
    ("days(ts", "expected ')', found the end"),
    ("days(ts) months(ts)", "expected ',' or the end, found 'months' at position 9"),
    ("days(ts),", "expected a column name, found the end"),
    ("`ts", "unclosed back-quote at position 0"),
    ("ts + 1", "unexpected '+' at position 3"),
    ("(ts)", "expected a column name, found '('"),
])
def test_errors_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(PartitioningError) as raised:
        parse(text)
    assert problem in raised.value.message
    assert (raised.value.status, raised.value.code) == (400, "InvalidPartitioning")


def test_two_fields_may_not_share_a_name() -> None:
    schema = {"type": "struct", "fields": [column("ts", "timestamp", 1), column("ts_day", "date", 2)]}
    with pytest.raises(PartitioningError, match="would both be named ts_day"):
        parse_partitioning("days(ts), ts_day", schema, 1, 999)


# The contract's table of the source types each transform takes.
CONTRACT_TYPES = {
    "identity": {"boolean", "byte", "short", "integer", "long", "string", "date", "timestamp", "timestamp_ntz"},
    "years": {"date", "timestamp", "timestamp_ntz"},
    "months": {"date", "timestamp", "timestamp_ntz"},
    "days": {"date", "timestamp", "timestamp_ntz"},
    "hours": {"timestamp", "timestamp_ntz"},
    "bucket": {"byte", "short", "integer", "long", "string", "date", "timestamp", "timestamp_ntz", "binary"},
    "truncate": {"byte", "short", "integer", "long", "string", "binary"},
}
ALL_TYPES = ["boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary", "date",
             "timestamp", "timestamp_ntz", "decimal(10,2)", "char(3)", "varchar(5)", "void", "variant",
             {"type": "array", "elementType": "long", "containsNull": True}]


@pytest.mark.parametrize("function", sorted(CONTRACT_TYPES))
def test_each_transform_takes_exactly_the_contracts_types(function: str) -> None:
    for dtype in ALL_TYPES:
        schema = {"type": "struct", "fields": [column("c", dtype, 1)]}
        text = {"bucket": "bucket(4, c)", "truncate": "truncate(4, c)"}.get(function, f"{function}(c)")
        plain = "string" if isinstance(dtype, str) and "char(" in dtype else dtype
        if isinstance(plain, str) and plain in CONTRACT_TYPES[function]:
            assert len(parse_partitioning(text, schema, 1, 999).fields) == 1
        else:
            with pytest.raises(PartitioningError, match="cannot be partitioned"):
                parse_partitioning(text, schema, 1, 999)


def test_field_ids_carry_over_from_earlier_specs() -> None:
    first = parse("days(ts), bucket(8, id)", spec_id=1)
    assert [f.field_id for f in first.fields] == [1000, 1001]
    last = first.highest_field_id()
    # a field of the same (column, transform) keeps its id; new ones continue from the table's last
    second = parse("bucket(8, id), months(ts), days(ts)", spec_id=2, last=last, previous=(first,))
    assert [(str(f.transform), f.field_id) for f in second.fields] == [("bucket[8]", 1001), ("month", 1002),
                                                                       ("day", 1000)]
    # another bucket count is another transform, so another field
    third = parse("bucket(16, id)", spec_id=3, last=second.highest_field_id(last), previous=(first, second))
    assert third.fields[0].field_id == 1003
    # ids were never re-used even for a field dropped in between
    fourth = parse("months(ts)", spec_id=4, last=1003, previous=(first, third))
    assert fourth.fields[0].field_id == 1004


def test_an_identical_earlier_spec_is_reused() -> None:
    first = parse("days(ts), bucket(8, id)", spec_id=1)
    second = parse("months(ts)", spec_id=2, last=1001, previous=(first,))
    again = parse("day(ts), bucket(8, `id`)", spec_id=3, last=1002, previous=(first, second))
    assert again.spec_id == 1
    assert again == first
    reordered = parse("bucket(8, id), days(ts)", spec_id=3, last=1002, previous=(first, second))
    assert reordered.spec_id == 3  # the order of fields is part of a spec


def test_json_round_trips_with_camel_case_keys() -> None:
    spec = parse("days(ts), truncate(3, name)", spec_id=2)
    data = spec.to_json()
    assert data == {"specId": 2, "fields": [
        {"fieldId": 1000, "sourceId": 2, "source": "ts", "transform": "day", "name": "ts_day"},
        {"fieldId": 1001, "sourceId": 4, "source": "name", "transform": "truncate[3]", "name": "name_trunc"},
    ]}
    assert PartitionSpec.from_json(data) == spec
    assert PartitionSpec.from_json({"specId": 0, "fields": []}) == PartitionSpec(0)
    no_source = {"fieldId": 1000, "sourceId": 2, "transform": "hour", "name": "ts_hour"}
    assert PartitionField.from_json(no_source).source == ""


@pytest.mark.parametrize("data", [
    {"fields": []},
    {"specId": "1", "fields": []},
    {"specId": 1, "fields": [{"fieldId": 1000, "sourceId": 2, "transform": "days", "name": "x"}]},
    {"specId": 1, "fields": [{"fieldId": 1000, "sourceId": 2, "transform": "bucket[0]", "name": "x"}]},
    {"specId": 1, "fields": [{"fieldId": 1000, "transform": "day", "name": "x"}]},
    {"specId": 1, "fields": ["day"]},
])
def test_bad_json_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(PartitioningError):
        PartitionSpec.from_json(data)


def test_a_spec_follows_a_rename() -> None:
    spec = PartitionSpec.from_json(parse("days(ts), name", spec_id=1).to_json())
    renamed = {"type": "struct", "fields": [
        column("event_time", "timestamp", 2), column("label", "string", 4), column("id", "long", 1)]}
    current = with_current_names(spec, renamed)
    assert [f.source for f in current.fields] == ["event_time", "label"]
    assert [f.source_type for f in current.fields] == ["timestamp", "string"]
    assert [f.name for f in current.fields] == ["ts_day", "name"]  # field names stay as made
    assert current.text() == "days(event_time), label"
    assert source_names(renamed) == {2: "event_time", 4: "label", 1: "id"}
    dropped = with_current_names(spec, {"type": "struct", "fields": [column("ts", "timestamp", 2)]})
    assert [f.source for f in dropped.fields] == ["ts", "name"]


def test_result_types() -> None:
    spec = parse("years(ts), months(d), days(ts), hours(local), bucket(4, name), truncate(2, n), "
                 "truncate(2, raw), flag, d, ts")
    assert [result_type(f, SCHEMA) for f in spec.fields] == [
        "integer", "integer", "date", "integer", "integer", "integer", "string", "boolean", "date", "timestamp"]
    gone = PartitionField(1000, 99, "x", Transform("identity"), "x")
    with pytest.raises(PartitioningError, match="not in the table"):
        result_type(gone, SCHEMA)


def test_values_are_checked_against_the_result_types() -> None:
    spec = parse("days(ts), bucket(4, id), name, flag, truncate(2, n)")
    assert check_values(spec, [19000, 3, "a", True, -10], SCHEMA) == [19000, 3, "a", True, -10]
    assert check_values(spec, [None] * 5, SCHEMA) == [None] * 5
    for bad in ([19000, 3, "a", True], "x", [19000, "3", "a", True, 0], [19000, 3, 1, True, 0],
                [19000, 3, "a", 1, 0], [1.5, 3, "a", True, 0], [19000, 3, "a", True, 2**31], [True, 3, "a", True, 0]):
        with pytest.raises(PartitioningError):
            check_values(spec, bad, SCHEMA)
