"""transforms.py: partition values against oracles (Iceberg's spec vectors, Python's calendar), and the
vectorised path against the one-value path."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_api.partitioning.spec import PartitioningError, Transform
from catalog_api.partitioning.transforms import (
    apply,
    apply_arrow,
    bucket_hash,
    civil_from_days,
    stats_units,
)

EPOCH = dt.datetime(1970, 1, 1)
UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def days_of(day: dt.date) -> int:
    return (day - EPOCH.date()).days


def micros_of(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(microseconds=1)


# -- bucket: Iceberg's spec, "Appendix B: 32-bit Hash Requirements" ---------------------------------------

HASH_VECTORS: list[tuple[str, Any, pa.DataType, int]] = [
    ("int", 34, pa.int32(), 2017239379),
    ("long", 34, pa.int64(), 2017239379),
    ("date", dt.date(2017, 11, 16), pa.date32(), -653330422),
    ("timestamp", dt.datetime(2017, 11, 16, 22, 31, 8), pa.timestamp("us"), -2047944441),
    ("timestamptz", dt.datetime(2017, 11, 16, 22, 31, 8, tzinfo=dt.UTC), pa.timestamp("us", "UTC"), -2047944441),
    ("string", "iceberg", pa.string(), 1210000089),
    ("binary", bytes([0, 1, 2, 3]), pa.binary(), -188683207),
]


def test_the_stats_units_of_the_vectors_are_the_specs() -> None:
    assert days_of(dt.date(2017, 11, 16)) == 17486
    assert micros_of(dt.datetime(2017, 11, 16, 22, 31, 8)) == 1510871468000000


@pytest.mark.parametrize(("kind", "value", "arrow_type", "expected"), HASH_VECTORS, ids=[v[0] for v in HASH_VECTORS])
def test_the_bucket_hash_is_icebergs(kind: str, value: Any, arrow_type: pa.DataType, expected: int) -> None:
    unit = stats_units(pa.array([value], arrow_type)).to_pylist()[0]
    assert bucket_hash(unit) == expected
    for count in (1, 7, 16, 1_000_000):
        want = (expected & 0x7FFFFFFF) % count
        assert apply(f"bucket[{count}]", unit) == want
        assert apply_arrow(f"bucket[{count}]", pa.array([value, None], arrow_type)).to_pylist() == [want, None]


def test_a_chunked_column_buckets_like_a_contiguous_one() -> None:
    chunked = pa.chunked_array([pa.array([34, None], pa.int64()), pa.array([35], pa.int64())])
    assert apply_arrow("bucket[16]", chunked).to_pylist() == [apply("bucket[16]", v) for v in [34, None, 35]]


def test_booleans_have_no_bucket() -> None:
    with pytest.raises(TypeError):
        bucket_hash(True)
    with pytest.raises(PartitioningError):
        apply_arrow("bucket[4]", pa.array([True]))


# -- year, month, day, hour against Python's calendar ------------------------------------------------------

dates = st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31))
moments = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59, 999999))
near_epoch = st.datetimes(min_value=dt.datetime(1968, 1, 1), max_value=dt.datetime(1972, 1, 1))


@settings(max_examples=300)
@given(day=dates)
def test_the_time_transforms_of_a_date_count_calendar_units(day: dt.date) -> None:
    days = days_of(day)
    assert apply("year", days, "date") == day.year - 1970
    assert apply("month", days, "date") == (day.year - 1970) * 12 + day.month - 1
    assert apply("day", days, "date") == days
    assert civil_from_days(days) == (day.year, day.month, day.day)


@settings(max_examples=300)
@given(moment=st.one_of(moments, near_epoch))
def test_the_time_transforms_of_a_timestamp_floor(moment: dt.datetime) -> None:
    micros = micros_of(moment)
    for source_type in ("timestamp", "timestamp_ntz"):
        assert apply("year", micros, source_type) == moment.year - 1970
        assert apply("month", micros, source_type) == (moment.year - 1970) * 12 + moment.month - 1
        assert apply("day", micros, source_type) == (moment.date() - EPOCH.date()).days
        assert apply("hour", micros, source_type) == (moment - EPOCH) // dt.timedelta(hours=1)


def test_before_1970_is_negative() -> None:
    one_micro_before = -1
    assert apply("hour", one_micro_before) == -1
    assert apply("day", one_micro_before, "timestamp") == -1
    assert apply("month", one_micro_before, "timestamp") == -1
    assert apply("year", one_micro_before, "timestamp") == -1
    assert apply("year", -1, "date") == -1


def test_year_month_and_day_need_the_source_type() -> None:
    with pytest.raises(ValueError, match="source type"):
        apply("day", 5)
    with pytest.raises(TypeError):
        apply("day", "2020-01-01", "date")


@settings(max_examples=200)
@given(values=st.lists(st.one_of(st.none(), moments), max_size=20), tz=st.sampled_from([None, "UTC", "Europe/Oslo"]))
def test_the_time_transforms_of_timestamp_columns_agree_with_one_value(values: list[dt.datetime | None],
                                                                       tz: str | None) -> None:
    if tz is not None:  # the same instants, in a zone: partition values are of the UTC instant
        values = [None if v is None else v.replace(tzinfo=dt.UTC) for v in values]
    column = pa.array(values, pa.timestamp("us", tz))
    micros = [None if v is None else micros_of(v.replace(tzinfo=None)) for v in values]
    assert stats_units(column).to_pylist() == micros
    for kind in ("year", "month", "day", "hour"):
        assert apply_arrow(kind, column).to_pylist() == [apply(kind, v, "timestamp") for v in micros]


@settings(max_examples=200)
@given(values=st.lists(st.one_of(st.none(), dates), max_size=20))
def test_the_time_transforms_of_date_columns_agree_with_one_value(values: list[dt.date | None]) -> None:
    column = pa.array(values, pa.date32())
    days = [None if v is None else days_of(v) for v in values]
    for kind in ("year", "month", "day"):
        assert apply_arrow(kind, column).to_pylist() == [apply(kind, v, "date") for v in days]
    with pytest.raises(PartitioningError):
        apply_arrow("hour", column)


def test_timestamps_of_other_units_are_read_as_microseconds() -> None:
    seconds = pa.array([-1, 3600, None], pa.timestamp("s"))
    assert apply_arrow("hour", seconds).to_pylist() == [-1, 1, None]
    assert stats_units(pa.array([86_400_000], pa.date64())).to_pylist() == [1]


# -- truncate: Iceberg's spec examples -----------------------------------------------------------------------


def test_truncate_follows_the_specs_examples() -> None:
    assert apply("truncate[10]", 1) == 0
    assert apply("truncate[10]", -1) == -10
    assert apply("truncate[10]", 10) == 10
    assert apply("truncate[3]", "iceberg") == "ice"
    assert apply("truncate[3]", "ic") == "ic"
    assert apply("truncate[2]", "\U0001f600ab") == "\U0001f600a"  # code points, not bytes
    assert apply("truncate[3]", b"\x00\x01\x02\x03") == base64.b64encode(b"\x00\x01\x02").decode()
    column = pa.array([1, -1, 10, None], pa.int32())
    assert apply_arrow("truncate[10]", column).to_pylist() == [0, -10, 10, None]
    assert apply_arrow("truncate[3]", pa.array(["iceberg", None])).to_pylist() == ["ice", None]


def test_truncate_saturates_at_the_types_minimum() -> None:
    smallest = -(2**63)
    assert apply("truncate[10]", smallest) == smallest
    assert apply("truncate[10]", -(2**31) + 1, "integer") == -(2**31)
    # -2**63 is 2 above a multiple of 10: the multiple below it does not fit, the one above does
    assert apply_arrow("truncate[10]", pa.array([smallest, smallest + 1, smallest + 8, smallest + 9], pa.int64())
                       ).to_pylist() == [smallest, smallest, smallest + 8, smallest + 8]
    assert apply_arrow("truncate[1000]", pa.array([-128, 127], pa.int8())).to_pylist() == [-128, 0]


INT_TYPES = {"byte": pa.int8(), "short": pa.int16(), "integer": pa.int32(), "long": pa.int64()}


def _int_column(type_name: str) -> st.SearchStrategy[list[int | None]]:
    bits = INT_TYPES[type_name].bit_width
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    near = st.one_of(st.integers(low, min(low + 2000, high)), st.integers(max(high - 2000, low), high),
                     st.integers(max(low, -3000), min(high, 3000)))
    return st.lists(st.one_of(st.none(), st.integers(low, high), near), max_size=20)


@settings(max_examples=200)
@given(data=st.data(), type_name=st.sampled_from(sorted(INT_TYPES)),
       transform=st.one_of(st.builds(lambda n: f"bucket[{n}]", st.integers(1, 1_000_000)),
                           st.builds(lambda w: f"truncate[{w}]", st.integers(1, 10**12)),
                           st.just("identity")))
def test_integer_columns_agree_with_one_value(data: st.DataObject, type_name: str, transform: str) -> None:
    values = data.draw(_int_column(type_name))
    column = pa.array(values, INT_TYPES[type_name])
    assert apply_arrow(transform, column).to_pylist() == [apply(transform, v, type_name) for v in values]


@settings(max_examples=200)
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=20),
       transform=st.one_of(st.builds(lambda n: f"bucket[{n}]", st.integers(1, 1000)),
                           st.builds(lambda w: f"truncate[{w}]", st.integers(1, 8)), st.just("identity")),
       large=st.booleans())
def test_string_columns_agree_with_one_value(values: list[str | None], transform: str, large: bool) -> None:
    column = pa.array(values, pa.large_string() if large else pa.string())
    assert apply_arrow(transform, column).to_pylist() == [apply(transform, v, "string") for v in values]


@settings(max_examples=100)
@given(values=st.lists(st.one_of(st.none(), st.binary(max_size=6)), max_size=20),
       transform=st.one_of(st.builds(lambda n: f"bucket[{n}]", st.integers(1, 1000)),
                           st.builds(lambda w: f"truncate[{w}]", st.integers(1, 8))))
def test_binary_columns_agree_with_one_value(values: list[bytes | None], transform: str) -> None:
    column = pa.array(values, pa.binary())
    assert apply_arrow(transform, column).to_pylist() == [apply(transform, v, "binary") for v in values]


@settings(max_examples=100)
@given(values=st.lists(st.one_of(st.none(), dates), max_size=20), count=st.integers(1, 1000))
def test_date_buckets_agree_with_one_value(values: list[dt.date | None], count: int) -> None:
    column = pa.array(values, pa.date32())
    days = [None if v is None else days_of(v) for v in values]
    assert apply_arrow(f"bucket[{count}]", column).to_pylist() == [apply(f"bucket[{count}]", d) for d in days]
    assert apply_arrow("identity", column).to_pylist() == days


def test_nulls_stay_null_through_every_transform() -> None:
    columns = {
        "long": pa.array([None, None], pa.int64()),
        "string": pa.array([None, None], pa.string()),
        "timestamp": pa.array([None, None], pa.timestamp("us", "UTC")),
        "date": pa.array([None, None], pa.date32()),
    }
    for transform in ("identity", "bucket[3]", "truncate[2]", "year", "month", "day", "hour"):
        for type_name, column in columns.items():
            assert apply(transform, None, type_name) is None
            try:
                result = apply_arrow(transform, column)
            except PartitioningError:
                continue  # a transform the type does not take
            assert result.to_pylist() == [None, None]


def test_transforms_are_named_as_iceberg_names_them() -> None:
    assert apply(Transform("bucket", 16), 34) == apply("bucket[16]", 34)
    with pytest.raises(PartitioningError):
        apply("bucket[0]", 34)
    with pytest.raises(PartitioningError):
        apply("days", 34)
