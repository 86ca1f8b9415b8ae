"""Schema evolution stays exact on every read path: columns match by field id, not by name.

Old chunks (Parquet written by Spark, events written by a producer) and new ones are read after
RENAME, ADD with a DEFAULT, DROP and ADD again under the same name, and a type promotion, through
Spark's native Parquet scan, through the Python data source (``native-scan=false``) and through
the plain Python reader (``StreamReader``): all agree, renamed columns keep their data, old rows
read a new column's default, and a dropped column's data never comes back.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader, StreamWriter
from registry.client import RegistryClient
from registry.serde import Serializer
from tests.spark.helpers import catalog_beside, rows, scans_natively

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: A second catalog on the same server with the native path turned off (the Python source always).
PYTHON = "streamcat_python"


@pytest.fixture
def python_catalog(spark: Any, spark_server: str) -> str:
    """The catalog ``streamcat_python``: the same server, ``native-scan=false``."""
    return catalog_beside(spark, PYTHON, **{"native-scan": "false"})


def _python_rows(server: str, scope: str, table: str) -> list[tuple[Any, ...]]:
    reader = StreamReader(CatalogClient(server), RegistryClient(server, scope), scope, table)
    return sorted(tuple(r.values()) for r in reader.read())


def _all_paths(spark: Any, server: str, scope: str, table: str, python_catalog: str) -> list[tuple[Any, ...]]:
    """The table's rows (sorted) through the native scan, the Python scan and the Python reader, which agree."""
    native = sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.{table}"))
    python = sorted(rows(spark, f"SELECT * FROM {python_catalog}.{scope}.{table}"))
    plain = _python_rows(server, scope, table)
    assert native == python
    assert plain == python
    return python


def test_rename_default_drop_readd_and_promote_read_old_chunks_exactly(
    spark: Any, spark_server: str, scope: str, python_catalog: str
) -> None:
    table = f"streamcat.{scope}.ev"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, a INT, b STRING, c INT) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 10, 'one', 100), (2, 20, 'two', 200)")
    assert scans_natively(spark, f"SELECT * FROM {table}")

    spark.sql(f"ALTER TABLE {table} RENAME COLUMN a TO amount")
    assert scans_natively(spark, f"SELECT * FROM {table}"), "the old file maps by its version's ids and the old name"
    assert sorted(rows(spark, f"SELECT id, amount FROM {table}")) == [(1, 10), (2, 20)]
    spark.sql(f"INSERT INTO {table} VALUES (3, 30, 'three', 300)")

    spark.sql(f"ALTER TABLE {table} ADD COLUMN d INT DEFAULT 42")
    spark.sql(f"INSERT INTO {table} (id, amount, b, c) VALUES (4, 40, 'four', 400)")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN c")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN c INT")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN amount TYPE BIGINT")
    spark.sql(f"INSERT INTO {table} VALUES (5, 50000000000, 'five', 5, 5)")

    found = _all_paths(spark, spark_server, scope, "ev", python_catalog)
    assert found == [
        (1, 10, "one", 42, None),
        (2, 20, "two", 42, None),
        (3, 30, "three", 42, None),
        (4, 40, "four", 42, None),
        (5, 50000000000, "five", 5, 5),
    ], "renamed data kept, old rows read the default, the dropped c does not come back, int promoted"


def test_event_chunks_and_columnar_chunks_agree_after_evolution(
    spark: Any, spark_server: str, scope: str, python_catalog: str
) -> None:
    table = f"streamcat.{scope}.mixed"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, a INT, c STRING) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 10, 'x')")
    registry = RegistryClient(spark_server, scope)
    [latest] = registry.latest_schemas("mixed")
    serializer = Serializer(registry, "mixed", latest.schema, register=False)
    with StreamWriter(CatalogClient(spark_server), registry, scope, "mixed", serializer=serializer) as writer:
        writer.write({"id": 2, "a": 20, "c": "y"})
        writer.flush()
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN a TO amount")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN d STRING DEFAULT 'dflt'")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN c")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN c STRING")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN amount TYPE BIGINT")
    spark.sql(f"INSERT INTO {table} VALUES (3, 30, 'z', 'new')")
    assert not scans_natively(spark, f"SELECT * FROM {table}"), "event chunks: the Python scan"
    found = _all_paths(spark, spark_server, scope, "mixed", python_catalog)
    assert found == [(1, 10, "dflt", None), (2, 20, "dflt", None), (3, 30, "z", "new")]


def test_files_carry_field_ids_and_schema_shows_them(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.ids"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, s STRUCT<x: INT, y: INT>) USING avro")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN z INT")
    fields = spark.table(table).schema.fields
    assert [f.metadata.get("parquet.field.id") for f in fields] == [1, 2, 5]
    assert [f.metadata.get("parquet.field.id") for f in fields[1].dataType.fields] == [3, 4]
    spark.sql(f"ALTER TABLE {table} DROP COLUMN z")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN z INT")
    assert spark.table(table).schema.fields[-1].metadata["parquet.field.id"] == 6, "ids are never reused"
    [latest] = RegistryClient(spark_server, scope).latest_schemas("ids")
    avro = json.loads(latest.schema.data)
    assert [f["field-id"] for f in avro["fields"]] == [1, 2, 6]


def test_column_defaults_in_create_table_fill_omitted_columns(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.dflt"
    spark.sql(f"""CREATE TABLE {table} (id BIGINT, n INT DEFAULT 42, s STRING DEFAULT 'it''s',
                  day DATE DEFAULT DATE '2026-01-31', x DOUBLE DEFAULT 1.5) USING avro""")
    spark.sql(f"INSERT INTO {table} (id) VALUES (1)")
    spark.sql(f"INSERT INTO {table} VALUES (2, 7, 'seven', DATE '2026-07-07', 7.0)")
    fields = {f.name: f for f in spark.table(table).schema.fields}
    assert fields["n"].metadata["CURRENT_DEFAULT"] == "42"
    expected = [(1, 42, "it's", dt.date(2026, 1, 31), 1.5), (2, 7, "seven", dt.date(2026, 7, 7), 7.0)]
    assert sorted(rows(spark, f"SELECT * FROM {table}")) == expected
    assert sorted(rows(spark, f"SELECT * FROM {python_catalog}.{scope}.dflt")) == expected


def test_a_default_that_is_no_literal_is_refused_naming_the_column(spark: Any, scope: str) -> None:
    with pytest.raises(Exception, match=r"column d: DEFAULT current_date\(\) is not a constant literal"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.bad (id BIGINT, d DATE DEFAULT current_date()) USING avro")


def test_alter_table_add_and_set_default(spark: Any, spark_server: str, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.alt"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN n INT DEFAULT 42")
    spark.sql(f"INSERT INTO {table} (id) VALUES (2)")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN n SET DEFAULT 7")
    spark.sql(f"INSERT INTO {table} (id) VALUES (3)")
    assert _all_paths(spark, spark_server, scope, "alt", python_catalog) == [(1, 42), (2, 42), (3, 7)], \
        "the row written before the column existed reads EXISTS_DEFAULT, which SET DEFAULT leaves alone"


# -- property: both scan paths return the same rows, whatever the evolution --------------------------------

_TYPES = {"INT": "{i}", "BIGINT": "{i} * 1000000007", "STRING": "CONCAT('s', {i})", "DOUBLE": "{i} / 3",
          "FLOAT": "CAST({i} / 7 AS FLOAT)"}
_PROMOTIONS = {"INT": "BIGINT", "FLOAT": "DOUBLE"}


@st.composite
def _evolutions(draw: st.DrawFn) -> tuple[list[tuple[str, str]], list[tuple[str, ...]]]:
    """Initial columns (name, type) and a list of steps: ("insert",) (Spark, columnar chunks), ("events",)
    (a producer, an event chunk), ("add", name, type), ("drop", name), ("rename", old, new),
    ("promote", name, type)."""
    names = iter(f"c{i}" for i in range(100))
    columns = [(next(names), draw(st.sampled_from(sorted(_TYPES)))) for _ in range(draw(st.integers(1, 4)))]
    live = dict(columns)
    dropped: list[str] = []
    steps: list[tuple[str, ...]] = [("insert",)]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["add", "readd", "drop", "rename", "promote", "insert", "events"]))
        if kind == "add" or (kind == "readd" and not dropped):
            name, kind_of = next(names), draw(st.sampled_from(sorted(_TYPES)))
            live[name] = kind_of
            steps.append(("add", name, kind_of))
        elif kind == "readd":
            name = draw(st.sampled_from(dropped))
            dropped.remove(name)
            live[name] = draw(st.sampled_from(sorted(_TYPES)))
            steps.append(("add", name, live[name]))
        elif kind == "drop" and len(live) > 1:
            name = draw(st.sampled_from(sorted(live)))
            del live[name]
            dropped.append(name)
            steps.append(("drop", name))
        elif kind == "rename":
            old = draw(st.sampled_from(sorted(live)))
            into_dropped: bool = bool(dropped) and draw(st.booleans())
            new = draw(st.sampled_from(dropped)) if into_dropped else next(names)
            if new in dropped:
                dropped.remove(new)  # renamed into a dropped column's name: that column's data stays gone
            live[new] = live.pop(old)
            steps.append(("rename", old, new))
        elif kind == "promote" and any(t in _PROMOTIONS for t in live.values()):
            name = draw(st.sampled_from(sorted(n for n, t in live.items() if t in _PROMOTIONS)))
            live[name] = _PROMOTIONS[live[name]]
            steps.append(("promote", name, live[name]))
        elif kind == "events":
            steps.append(("events",))
        else:
            steps.append(("insert",))
    steps.append(("insert",))
    return columns, steps


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evolution=_evolutions())
def test_native_and_python_scans_agree_over_random_evolutions(
    spark: Any, spark_server: str, scope: str, python_catalog: str,
    evolution: tuple[list[tuple[str, str]], list[tuple[str, ...]]],
) -> None:
    columns, steps = evolution
    name = f"p{uuid.uuid4().hex[:10]}"
    table = f"streamcat.{scope}.{name}"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, {', '.join(f'{c} {t}' for c, t in columns)}) USING avro")
    live = dict(columns)
    # What each live column must read in every row: what was written while it existed, else null.
    expected: dict[str, list[Any]] = {c: [] for c in live}
    start = 0
    for step in steps:
        if step[0] == "insert":
            values = ", ".join(_TYPES[t].format(i="id") for t in live.values())
            spark.sql(f"INSERT INTO {table} (id, {', '.join(live)}) SELECT id, {values} "
                      f"FROM range({start}, {start + 5})")
            for column, kind in live.items():
                expected[column] += [_value(kind, i) for i in range(start, start + 5)]
            start += 5
        elif step[0] == "events":  # a producer's event chunk, of the schema version of the moment
            registry = RegistryClient(spark_server, scope)
            serializer = Serializer(registry, name, registry.latest_schemas(name)[0].schema, register=False)
            with StreamWriter(CatalogClient(spark_server), registry, scope, name, serializer=serializer) as writer:
                for i in range(start, start + 5):
                    writer.write({"id": i, **{c: _value(kind, i) for c, kind in live.items()}})
                writer.flush()
            for column, kind in live.items():
                expected[column] += [_value(kind, i) for i in range(start, start + 5)]
            start += 5
        elif step[0] == "add":
            spark.sql(f"ALTER TABLE {table} ADD COLUMN {step[1]} {step[2]}")
            live[step[1]] = step[2]
            expected[step[1]] = [None] * start
        elif step[0] == "drop":
            spark.sql(f"ALTER TABLE {table} DROP COLUMN {step[1]}")
            del live[step[1]], expected[step[1]]
        elif step[0] == "rename":
            spark.sql(f"ALTER TABLE {table} RENAME COLUMN {step[1]} TO {step[2]}")
            live[step[2]] = live.pop(step[1])
            expected[step[2]] = expected.pop(step[1])
        else:
            spark.sql(f"ALTER TABLE {table} ALTER COLUMN {step[1]} TYPE {step[2]}")
            live[step[1]] = step[2]
    found = _all_paths(spark, spark_server, scope, name, python_catalog)
    order = spark.table(table).columns[1:]  # a renamed column keeps its place, an added one goes last
    assert found == [(i, *(expected[c][i] for c in order)) for i in range(start)], steps


def _value(kind: str, i: int) -> Any:
    """What ``_TYPES[kind]`` writes for row ``i``, as Spark reads it back (also after a promotion)."""
    if kind == "INT":
        return i
    if kind == "BIGINT":
        return i * 1000000007
    if kind == "STRING":
        return f"s{i}"
    if kind == "DOUBLE":
        return i / 3
    return float(np.float32(i / 7))


def test_the_native_scan_reads_renamed_columns_by_id_and_fills_defaults(
    spark: Any, spark_server: str, scope: str, python_catalog: str
) -> None:
    table = f"streamcat.{scope}.xd"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, a INT) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 10)")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN a TO b")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN d INT DEFAULT 42")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN e STRING DEFAULT 's'")
    spark.sql(f"INSERT INTO {table} VALUES (2, 20, 7, 'x')")
    assert scans_natively(spark, f"SELECT * FROM {table}"), (
        "Spark's reader matches by field id and fills EXISTS_DEFAULT")
    assert _all_paths(spark, spark_server, scope, "xd", python_catalog) == [(1, 10, 42, "s"), (2, 20, 7, "x")]


def test_files_without_field_ids_map_by_their_versions_ids(
    spark: Any, spark_server: str, scope: str, python_catalog: str
) -> None:
    table = f"streamcat.{scope}.noids"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, a INT, c STRING) USING avro")
    _write_table(spark_server, scope, "noids", pa.table({"id": [1], "a": pa.array([10], pa.int32()), "c": ["old"]}))
    assert scans_natively(spark, f"SELECT * FROM {table}"), "a file of the current version: names are the table's"
    spark.sql(f"ALTER TABLE {table} ADD COLUMN x INT")
    assert scans_natively(spark, f"SELECT * FROM {table}"), (
        "the file's version's ids, from the registry, map its columns")
    assert rows(spark, f"SELECT * FROM {table}") == [(1, 10, "old", None)]
    spark.sql(f"ALTER TABLE {table} DROP COLUMN c")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN c STRING")
    assert not scans_natively(spark, f"SELECT * FROM {table}"), (
        "Spark would read the old c by its name: the Python scan")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN a TO b")
    _write_table(spark_server, scope, "noids",
                 pa.table({"id": [2], "b": pa.array([20], pa.int32()), "x": pa.array([2], pa.int32()), "c": ["new"]}))
    assert _all_paths(spark, spark_server, scope, "noids", python_catalog) == [(1, 10, None, None), (2, 20, 2, "new")]


def _write_table(server: str, scope: str, table: str, data: pa.Table) -> None:
    """A columnar chunk written by a Python producer with the table's latest schema version (whose field
    ids, if it has any, go into the file)."""
    registry = RegistryClient(server, scope)
    serializer = Serializer(registry, table, registry.latest_schemas(table)[0].schema, register=False)
    with StreamWriter(CatalogClient(server), registry, scope, table, serializer=serializer) as writer:
        writer.write_table(data)
        writer.flush()
