"""A table, its rows and partitionings, and filters, drawn by hypothesis; the SQL meaning of a filter."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from catalog_api.model import Chunk
from catalog_api.partitioning.spec import PartitionSpec, parse_partitioning
from catalog_api.partitioning.transforms import MICROS_PER_DAY, MICROS_PER_HOUR, split_by_partition
from catalog_api.streams.chunks import column_stats

Row = dict[str, Any]


def column(name: str, dtype: Any, fid: int | None) -> dict[str, Any]:
    """A StructField's JSON, with a field id unless ``fid`` is None."""
    return {"name": name, "type": dtype, "nullable": True, "metadata": {} if fid is None else {"parquet.field.id": fid}}


#: The table: one column of each kind a transform takes.
SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    column("n", "long", 1),
    column("i", "integer", 2),
    column("d", "date", 3),
    column("ts", "timestamp", 4),
    column("local", "timestamp_ntz", 5),
    column("s", "string", 6),
    column("flag", "boolean", 7),
    column("b", "byte", 8),
]}
ARROW = pa.schema([
    ("n", pa.int64()), ("i", pa.int32()), ("d", pa.date32()), ("ts", pa.timestamp("us", "UTC")),
    ("local", pa.timestamp("us")), ("s", pa.string()), ("flag", pa.bool_()),
    ("b", pa.int8()),
])
# Days 1-01-01 to 9999-12-31, and their microseconds.
FIRST_DAY, LAST_DAY = -719162, 2932896


def _micros() -> st.SearchStrategy[int]:
    # mostly a few days around the epoch, where hours, days, months and years change often
    return st.one_of(
        st.integers(-3 * MICROS_PER_DAY, 3 * MICROS_PER_DAY),
        st.integers(-40, 40).map(lambda h: h * MICROS_PER_HOUR),
        st.integers(FIRST_DAY * MICROS_PER_DAY, (LAST_DAY + 1) * MICROS_PER_DAY - 1),
    )


#: Each column's non-null values, in stats units.
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "n": st.one_of(st.integers(-40, 40), st.integers(-(2**63), 2**63 - 1),
                   st.integers(-(2**63), -(2**63) + 20), st.integers(2**63 - 20, 2**63 - 1)),
    "i": st.one_of(st.integers(-40, 40), st.integers(-(2**31), 2**31 - 1),
                   st.integers(-(2**31), -(2**31) + 20), st.integers(2**31 - 20, 2**31 - 1)),
    "d": st.one_of(st.integers(-70, 70), st.integers(-800, 800), st.integers(FIRST_DAY, LAST_DAY)),
    "ts": _micros(),
    "local": _micros(),
    "s": st.text(alphabet="abc\u00e9", max_size=4),
    "flag": st.booleans(),
    "b": st.one_of(st.integers(-128, 127), st.integers(-128, -110)),
}


def rows(max_size: int = 40) -> st.SearchStrategy[list[Row]]:
    """Rows of the table, any column null."""
    row = st.fixed_dictionaries({name: st.one_of(st.none(), values) for name, values in VALUES.items()})
    return st.lists(row, min_size=1, max_size=max_size)


def table_of(rows: list[Row]) -> pa.Table:
    """The rows (stats units) as an Arrow table of the schema's types."""
    columns = {}
    for f in ARROW:
        raw = [r.get(f.name) for r in rows]
        if pa.types.is_date(f.type):
            columns[f.name] = pa.array(raw, pa.int32()).cast(f.type)
        elif pa.types.is_timestamp(f.type):
            columns[f.name] = pa.array(raw, pa.int64()).cast(f.type)
        else:
            columns[f.name] = pa.array(raw, f.type)
    return pa.table(columns, schema=ARROW)


def rows_of(table: pa.Table) -> list[Row]:
    """The table's rows in stats units."""
    plain = table.cast(pa.schema([(f.name, pa.int32() if pa.types.is_date(f.type) else
                                   pa.int64() if pa.types.is_timestamp(f.type) else f.type) for f in table.schema]))
    return plain.to_pylist()


#: Partition fields, as text templates (N and W filled in when drawn).
TEMPLATES = [
    "n", "bucket({N}, n)", "truncate({W}, n)", "i", "bucket({N}, i)", "truncate({W}, i)",
    "d", "years(d)", "months(d)", "days(d)", "bucket({N}, d)",
    "ts", "years(ts)", "month(ts)", "days(ts)", "hours(ts)", "bucket({N}, ts)",
    "local", "hours(local)", "days(local)", "years(local)",
    "s", "bucket({N}, s)", "truncate({S}, s)", "flag", "b", "truncate({W}, b)", "bucket({N}, b)",
]


@st.composite
def specs(draw: st.DrawFn) -> PartitionSpec:
    """A partitioning of the table: one to three fields."""
    templates = draw(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=3, unique=True))
    items = [t.format(N=draw(st.integers(1, 8)), W=draw(st.sampled_from([1, 3, 10, 1000, 10**12])),
                      S=draw(st.integers(1, 3))) for t in templates]
    return parse_partitioning(", ".join(items), SCHEMA, 1, 999)


def filters() -> st.SearchStrategy[dict[str, Any]]:
    """A pushed filter on the table's columns (values of the column's type), with and/or."""
    def compare(name: str) -> st.SearchStrategy[dict[str, Any]]:
        return st.builds(lambda op, v: {"op": op, "column": name, "value": v},
                         st.sampled_from(["eq", "lt", "le", "gt", "ge"]), VALUES[name])

    leaves = [compare(name) for name in VALUES]
    leaves += [st.builds(lambda name, vs: {"op": "in", "column": name, "values": vs}, st.just(name),
                         st.lists(VALUES[name], max_size=3)) for name in VALUES]
    leaves.append(st.builds(lambda op, name: {"op": op, "column": name}, st.sampled_from(["isnull", "notnull"]),
                            st.sampled_from(sorted(VALUES))))
    leaves.append(st.builds(lambda p: {"op": "startswith", "column": "s", "value": p}, VALUES["s"]))
    return st.recursive(st.one_of(leaves), lambda inner: st.builds(
        lambda op, a, b: {"op": op, "left": a, "right": b}, st.sampled_from(["and", "or"]), inner, inner),
        max_leaves=4)


def passes(condition: dict[str, Any], row: Row) -> bool:
    """Whether one row passes a filter, as SQL says (a comparison with null is not true)."""
    op = condition["op"]
    if op == "and":
        return passes(condition["left"], row) and passes(condition["right"], row)
    if op == "or":
        return passes(condition["left"], row) or passes(condition["right"], row)
    value = row[condition["column"]]
    if op == "isnull":
        return value is None
    if op == "notnull":
        return value is not None
    if value is None:
        return False
    if op == "in":
        return value in condition["values"]
    if op == "startswith":
        return bool(value.startswith(condition["value"]))
    x = condition["value"]
    return bool({"eq": value == x, "lt": value < x, "le": value <= x, "gt": value > x, "ge": value >= x}[op])


def chunks_of(table: pa.Table, spec: PartitionSpec) -> list[tuple[Chunk, list[Row]]]:
    """The table written as one chunk per partition (with its statistics), and each chunk's rows."""
    out = []
    for n, (values, group) in enumerate(split_by_partition(table, spec)):
        chunk = Chunk(path=f"c{n}.parquet", kind="columnar", event_count=group.num_rows, stats=column_stats(group),
                      partition={"specId": spec.spec_id, "values": values})
        out.append((chunk, rows_of(group)))
    return out
