"""Partition values: a spec's transforms applied to one value or to Arrow columns.

Values are in the units of chunk statistics (:func:`catalog_api.streams.chunks.column_stats`): dates
as days and timestamps as microseconds since the epoch (UTC for ``timestamp``). The results, as
Iceberg's spec defines them: year/month/day/hour count whole units since 1970 (floor division, so
before 1970 is negative; day of a date is the date); ``bucket[N]`` is ``(murmur3_x86_32(bytes, seed
0) & 0x7FFFFFFF) % N`` of the value as an 8-byte little-endian long (integers, dates, timestamps),
UTF-8 (strings) or as is (binary); ``truncate[W]`` rounds integers down to a multiple of W, and keeps
the first W code points of a string or the first W bytes of binary (as base64 text, so that values
stay JSON). A null value gives a null partition value.

One deviation from Iceberg: truncating an integer within W of its type's minimum gives the
minimum, where Java's arithmetic wraps around; saturating keeps the transform monotonic, which
pruning relies on.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

import mmh3
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .spec import (
    BUCKET,
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    TRUNCATE,
    YEAR,
    PartitioningError,
    PartitionSpec,
    Transform,
)

MICROS_PER_HOUR = 3_600_000_000
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
_LONG = struct.Struct("<q")
#: The smallest value of each integer source type, which truncation saturates at.
_MINIMUM = {"byte": -(2**7), "short": -(2**15), "integer": -(2**31), "long": -(2**63)}


def _transform(transform: Transform | str) -> Transform:
    return transform if isinstance(transform, Transform) else Transform.parse(transform)


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of the proleptic Gregorian calendar ``days`` days after 1970-01-01, for any
    integer (Howard Hinnant's algorithm, the one Arrow's kernels use)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _days(value: int, source_type: str | None, kind: str) -> int:
    if source_type == "date":
        return value
    if source_type in ("timestamp", "timestamp_ntz"):
        return value // MICROS_PER_DAY
    raise ValueError(f"the {kind} transform needs the source type (date or timestamp), not {source_type!r}")


def bucket_hash(value: Any) -> int:
    """Iceberg's 32-bit hash of a value (signed): murmur3_x86_32 with seed 0 of the value's bytes; an int
    (an integer, a date's days, a timestamp's microseconds) hashes as an 8-byte little-endian long."""
    if isinstance(value, bool):
        raise TypeError("booleans have no bucket hash")
    if isinstance(value, int):
        try:
            data = _LONG.pack(value)
        except struct.error:
            raise ValueError(f"{value} is not a long") from None
    elif isinstance(value, str):
        data = value.encode()
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError(f"no bucket hash for a {type(value).__name__}")
    return mmh3.hash(data, 0, signed=True)


def truncate_int(value: int, width: int, minimum: int = _MINIMUM["long"]) -> int:
    """``value`` rounded down to a multiple of ``width`` (Iceberg's ``v - (((v % W) + W) % W)``), but not
    below ``minimum``, the smallest value of the source's type."""
    return max(value - value % width, minimum)  # Python's % is already the non-negative remainder


def apply(transform: Transform | str, value: Any, source_type: str | None = None) -> Any:
    """The partition value of one source value in stats units (see the module docstring): JSON-ready.

    ``source_type`` (the Spark type name of the source column) is needed by year, month and day, to
    tell a date's days from a timestamp's microseconds, and bounds integer truncation (``long`` when
    not given). Raises TypeError or ValueError for a value the transform cannot take.
    """
    t = _transform(transform)
    if value is None:
        return None
    kind = t.kind
    if kind == IDENTITY:
        return value
    if kind in (YEAR, MONTH, DAY, HOUR):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"the {kind} transform takes days or microseconds, not {value!r}")
        if kind == HOUR:
            return value // MICROS_PER_HOUR
        days = _days(value, source_type, kind)
        if kind == DAY:
            return days
        year, month, _ = civil_from_days(days)
        return year - 1970 if kind == YEAR else (year - 1970) * 12 + month - 1
    assert t.param is not None
    if kind == BUCKET:
        return (bucket_hash(value) & 0x7FFFFFFF) % t.param
    if kind == TRUNCATE:
        if isinstance(value, bool):
            raise TypeError("booleans cannot be truncated")
        if isinstance(value, int):
            return truncate_int(value, t.param, _MINIMUM.get(source_type or "long", _MINIMUM["long"]))
        if isinstance(value, str):
            return value[: t.param]
        if isinstance(value, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(value)[: t.param]).decode()
        raise TypeError(f"the truncate transform takes integers, strings or binary, not {value!r}")
    raise ValueError(f"unknown transform {t}")


# -- Arrow ------------------------------------------------------------------------------------------------


def stats_units(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``array`` in stats units: dates as int32 days, timestamps as int64 microseconds (any unit or time
    zone), anything else as it is; one contiguous array."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if pa.types.is_date32(kind):
        return array.cast(pa.int32())
    if pa.types.is_date64(kind):
        return _floor_divide(array.cast(pa.int64()), MICROS_PER_DAY // 1000).cast(pa.int32())
    if pa.types.is_timestamp(kind):
        if kind.unit != "us":
            array = array.cast(pa.timestamp("us", kind.tz), safe=False)
        return array.cast(pa.int64())
    return array


def _floor_divide(values: pa.Array, divisor: int) -> pa.Array:
    # Arrow's integer division truncates toward zero; Iceberg's time transforms floor
    quotient = pc.divide(values, divisor)
    remainder = pc.subtract(values, pc.multiply(quotient, divisor))
    return pc.if_else(pc.less(remainder, 0), pc.subtract(quotient, 1), quotient)


def _dates(array: pa.Array, kind: str) -> pa.Array:
    """Days since the epoch of a date or timestamp column (stats units in)."""
    if pa.types.is_timestamp(array.type):
        return _floor_divide(stats_units(array), MICROS_PER_DAY)
    if pa.types.is_date(array.type):
        return stats_units(array)
    raise PartitioningError(f"the {kind} transform takes dates or timestamps, not {array.type}")


def _time(t: Transform, array: pa.Array) -> pa.Array:
    if t.kind == HOUR:
        if not pa.types.is_timestamp(array.type):
            raise PartitioningError(f"the hour transform takes timestamps, not {array.type}")
        return _floor_divide(stats_units(array), MICROS_PER_HOUR)
    days = _dates(array, t.kind)
    if t.kind == DAY:
        return days.cast(pa.int32())
    dates = days.cast(pa.int32()).cast(pa.date32())
    years = pc.subtract(pc.year(dates), 1970)
    if t.kind == YEAR:
        return years.cast(pa.int32())
    return pc.add(pc.multiply(years, 12), pc.subtract(pc.month(dates), 1)).cast(pa.int32())


def _truncate(width: int, array: pa.Array) -> pa.Array:
    kind = array.type
    if pa.types.is_integer(kind):
        if not pa.types.is_signed_integer(kind):
            raise PartitioningError(f"the truncate transform takes signed integers, not {kind}")
        minimum = -(2 ** (kind.bit_width - 1))
        values = array.cast(pa.int64())
        remainder = pc.subtract(values, pc.multiply(pc.divide(values, width), width))
        remainder = pc.if_else(pc.less(remainder, 0), pc.add(remainder, width), remainder)
        # saturate at the type's minimum instead of wrapping (v - r can only fall below it)
        floor_at = pc.add(pa.scalar(minimum, pa.int64()), remainder)
        rounded = pc.if_else(pc.less(values, floor_at), pa.scalar(minimum, pa.int64()), pc.subtract(values, remainder))
        return rounded.cast(kind)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pc.utf8_slice_codeunits(array, 0, width)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return _python_loop(array, lambda v: base64.b64encode(v[:width]).decode(), pa.string())
    raise PartitioningError(f"the truncate transform takes integers, strings or binary, not {kind}")


def _python_loop(array: pa.Array, fn: Callable[[Any], Any], result: pa.DataType) -> pa.Array:
    return pa.array([None if v is None else fn(v) for v in array.to_pylist()], result)


def _bucket(count: int, array: pa.Array) -> pa.Array:
    kind = array.type
    if not (pa.types.is_integer(kind) or pa.types.is_date(kind) or pa.types.is_timestamp(kind)
            or pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        raise PartitioningError(f"the bucket transform does not take {kind}")
    units = stats_units(array)
    if pa.types.is_integer(units.type):
        return _bucket_longs(count, units)
    # mmh3 hashes one value per call: a loop, but over plain Python strings and bytes
    return _python_loop(units, lambda v: (bucket_hash(v) & 0x7FFFFFFF) % count, pa.int32())


def _rotl(x: npt.NDArray[np.uint32], r: int) -> npt.NDArray[np.uint32]:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _bucket_longs(count: int, array: pa.Array) -> pa.Array:
    """The buckets of integers (dates' days, timestamps' micros), each hashed as its 8-byte little-endian
    long: murmur3_x86_32 (seed 0) unrolled over the two 4-byte blocks on whole numpy columns, because a
    call of mmh3 per row costs more than the rest of a partitioned write."""
    longs = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    blocks = longs.view(np.uint32).reshape(-1, 2)  # little-endian: low word first, as the bytes go
    h = np.zeros(len(longs), dtype=np.uint32)
    for k in (blocks[:, 0].copy(), blocks[:, 1].copy()):
        k *= np.uint32(0xCC9E2D51)
        k = _rotl(k, 15)
        k *= np.uint32(0x1B873593)
        h ^= k
        h = _rotl(h, 13)
        h = h * np.uint32(5) + np.uint32(0xE6546B64)
    h ^= np.uint32(8)  # the length in bytes
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    buckets = ((h & np.uint32(0x7FFFFFFF)) % np.uint32(count)).astype(np.int32)
    return pa.array(buckets, pa.int32(), mask=array.is_null().to_numpy(zero_copy_only=False))


def apply_arrow(transform: Transform | str, array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """:func:`apply` of every value of an Arrow column, vectorised; the source type comes from the Arrow
    type. Results: identity gives the column in stats units (dates int32, timestamps int64), year/month/
    day/bucket int32, hour int64, truncate the column's type (binary: base64 ``string``). Raises
    :class:`PartitioningError` for a column type the transform does not take."""
    t = _transform(transform)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if t.kind == IDENTITY:
        return stats_units(array)
    if t.kind in (YEAR, MONTH, DAY, HOUR):
        return _time(t, array)
    assert t.param is not None
    if t.kind == BUCKET:
        return _bucket(t.param, array)
    if t.kind == TRUNCATE:
        return _truncate(t.param, array)
    raise PartitioningError(f"unknown transform {t}")


def partition_values(table: pa.Table, spec: PartitionSpec) -> list[pa.Array]:
    """The partition values of each row of ``table``, one array per field of ``spec``, reading each field's
    source column by its name (``source``: give a spec with current names, see
    :func:`~catalog_api.partitioning.spec.with_current_names`). Raises :class:`PartitioningError` when a
    source column is missing or of a type its transform does not take."""
    out = []
    for f in spec.fields:
        if f.source not in table.column_names:
            raise PartitioningError(f"partition field {f.name} reads column {f.source!r}, not in the rows "
                                    f"(columns: {', '.join(table.column_names)})")
        out.append(apply_arrow(f.transform, table.column(f.source)))
    return out


def split_by_partition(table: pa.Table, spec: PartitionSpec) -> list[tuple[list[Any], pa.Table]]:
    """``table``'s rows grouped by their partition values under ``spec``: (JSON-ready values, one per spec
    field, and the rows that have them, in their order in ``table``) per group, groups in the order of
    their first row. An unpartitioned spec gives one group of every row; no rows, no group."""
    if table.num_rows == 0:
        return []
    if spec.unpartitioned:
        return [([], table)]
    values = partition_values(table, spec)
    keys = [f"k{i}" for i in range(len(values))]
    groups = (
        pa.table({**dict(zip(keys, values, strict=True)), "row": pa.array(range(table.num_rows), pa.int64())})
        # one thread keeps groups in the order of their first row and rows in order within a group
        .group_by(keys, use_threads=False)
        .aggregate([("row", "list")])
    )
    rows = groups.column("row_list").combine_chunks()
    # the hash grouping's own order of groups is not the rows' one: order groups by their first row
    groups = groups.take(pc.sort_indices(pc.list_element(rows, 0)))
    key_values = [groups.column(k).to_pylist() for k in keys]
    rows = groups.column("row_list").combine_chunks()
    return [
        ([column[i] for column in key_values], table.take(rows[i].values))
        for i in range(groups.num_rows)
    ]
