"""Hidden state columns of the aggregation engine (docs/changelog-tables.md, "Hidden state columns"): ``avg``
kept through ``<column>$sum`` and ``<column>$count``, and the hidden row count ``$rows``, against a plain-Python
model with retractions and deletes, from rows written without state (the fill rule) and rows that carry it, at
every cut, after a compaction, through the change feed, StreamReader and the Spark data source's Python side
(without a SparkSession); what the server and the Spark writer refuse."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from itertools import groupby
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType, TimestampType
from pyspark_streamcat.options import OptionError, SourceOptions
from pyspark_streamcat.reader import BatchReader
from pyspark_streamcat.writer import BatchWriter

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.changelog import CHANGE_TYPE, FEED_COLUMNS, replay
from catalog_api.streams.compaction import compact
from catalog_api.streams.merge import TableLayout
from catalog_api.streams.row_kinds import DELETE, RETRACT, UPSERT
from registry.client import RegistryClient
from registry.errors import BadRequest
from tests.iceberg.clients import pyiceberg

SPARK_SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": False, "metadata": {}},
    {"name": "a", "type": "double", "nullable": True, "metadata": {}},
    {"name": "f", "type": "float", "nullable": True, "metadata": {}},
    {"name": "s", "type": "long", "nullable": True, "metadata": {}},
]}
PROPERTIES = {"primary-key": "id", "merge-engine": "aggregation", "fields.a.aggregate-function": "avg",
              "fields.f.aggregate-function": "avg", "fields.s.aggregate-function": "sum",
              "aggregation.row-count-field": "$rows"}
VISIBLE = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("a", pa.float64()),
                     pa.field("f", pa.float32()), pa.field("s", pa.int64())])
#: the rows the refresh writes: visible avg columns null, their state set, the row count
STATE = pa.schema([*VISIBLE, pa.field("a$sum", pa.float64()), pa.field("a$count", pa.int64()),
                   pa.field("f$sum", pa.float64()), pa.field("f$count", pa.int64()), pa.field("$rows", pa.int64())])
Row = dict[str, Any]


def contribution(row: Row) -> dict[str, float]:
    """What one input adds to its key's state: its state where it carries some, else its values (one sample)."""
    out: dict[str, float] = {"$rows": row.get("$rows", 1), "s": row.get("s") or 0}
    for column in ("a", "f"):
        value = row.get(column)
        out[f"{column}$sum"] = float(row.get(f"{column}$sum", value) or 0.0)
        out[f"{column}$count"] = int(row.get(f"{column}$count", value is not None))
    return out


def model(changes: list[tuple[int, Row]]) -> dict[int, Row]:
    """Per live key: the visible columns of the aggregate of its inputs since its last delete, less retractions;
    a key whose row count is not positive is not live."""
    inputs: dict[int, list[tuple[int, Row]]] = {}
    for op, row in changes:
        if op == DELETE:
            inputs[row["id"]] = []
        else:
            inputs.setdefault(row["id"], []).append((op, row))
    result = {}
    for key, rows in inputs.items():
        totals: dict[str, float] = {}
        for op, row in rows:
            sign = -1 if op == RETRACT else 1
            for name, value in contribution(row).items():
                totals[name] = totals.get(name, 0) + sign * value
        some_s = any(row.get("s") is not None for _, row in rows)
        if not rows or totals["$rows"] <= 0:
            continue
        averages = {c: totals[f"{c}$sum"] / totals[f"{c}$count"] if totals[f"{c}$count"] > 0 else None
                    for c in ("a", "f")}
        if averages["f"] is not None:
            averages["f"] = float(np.float32(averages["f"]))  # f is a float column
        result[key] = {"id": key, "s": int(totals["s"]) if some_s else None, **averages}
    return result


def plain_input(rng: random.Random, key: int) -> Row:
    """A row as a producer writes it (no state): halves, so that every sum is exact."""
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.2 else value
    return {"id": key, "a": maybe(rng.randrange(-40, 40) / 2), "f": maybe(rng.randrange(0, 20) / 2),
            "s": maybe(rng.randrange(-9, 9))}


def state_input(rng: random.Random, key: int) -> Row:
    """A row as a materialized table's step writes it: the visible avg columns null, their state set."""
    a_count, f_count = rng.randrange(0, 4), rng.randrange(1, 4)
    return {"id": key, "a": None, "f": None, "s": rng.randrange(-9, 9), "a$sum": rng.randrange(-40, 40) / 2 * a_count,
            "a$count": a_count, "f$sum": rng.randrange(0, 20) / 2 * f_count, "f$count": f_count,
            "$rows": rng.randrange(1, 3)}


def by_key(rows: list[Row]) -> dict[int, Row]:
    for row in rows:
        assert not [c for c in row if "$" in c], row
    return {r["id"]: {c: r[c] for c in ("id", "a", "f", "s")} for r in rows}


def write(writer: StreamWriter, changes: list[tuple[int, Row]]) -> None:
    """One commit of ``changes`` in their order: each run of rows that carry state, or of plain rows, one piece."""
    for stated, run in groupby(changes, key=lambda change: "$rows" in change[1]):
        piece = list(run)
        writer.write_changes(pa.Table.from_pylist([r for _, r in piece], schema=STATE if stated else VISIBLE),
                             [op for op, _ in piece])
    writer.flush()


def python_source(url: str, scope: str, name: str, schema: StructType, **options: str) -> list[Row]:
    """Every row the Spark data source's Python side reads (what Spark's tasks would run)."""
    reader = BatchReader(SourceOptions.parse({"uri": url, "scope": scope, "table": name, **options}).resolved(),
                         schema)
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    return pa.Table.from_batches(batches).to_pylist() if batches else []


@pytest.fixture
def registry(server_url: str, scope: str) -> RegistryClient:
    return RegistryClient(server_url, scope)


def test_avg_and_hidden_row_count_against_a_model_at_every_cut_compacted_and_in_the_feed(
    server_url: str, catalog: CatalogClient, registry: RegistryClient, scope: str
) -> None:
    rng = random.Random(7)
    name = f"avg{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, SPARK_SCHEMA, properties=PROPERTIES)
    history: list[tuple[int, Row]] = []
    states: dict[int, dict[int, Row]] = {0: {}}
    live: dict[int, list[Row]] = {}  # per key, inputs a later retraction may take back
    with StreamWriter(catalog, registry, scope, name) as writer:
        for number in range(1, 7):
            changes: list[tuple[int, Row]] = []
            for _ in range(rng.randint(5, 20)):
                key = rng.randrange(8)
                roll = rng.random()
                if roll < 0.08:
                    change: tuple[int, Row] = (DELETE, {"id": key})
                    live[key] = []
                elif roll < 0.4 and live.get(key):  # an update's before-image, or all of a delete's
                    change = (RETRACT, live[key].pop(rng.randrange(len(live[key]))))
                else:
                    change = (UPSERT, state_input(rng, key) if roll < 0.7 else plain_input(rng, key))
                    live.setdefault(key, []).append(change[1])
                changes.append(change)
            write(writer, changes)
            history += changes
            states[number] = model(history)
    assert any(len(s) < len({r["id"] for _, r in history}) for s in states.values())  # keys did leave
    reader = StreamReader(catalog, registry, scope, name)
    for cut, expected in states.items():
        assert by_key(list(reader.read(cut=cut))) == expected, f"cut {cut}"
    table_schema = StructType.fromJson(SPARK_SCHEMA)
    assert by_key(python_source(server_url, scope, name, table_schema)) == states[6]
    # the feed shows visible columns only, and replays to each state
    feed = pa.Table.from_batches(list(reader.change_batches(2, 6)))
    assert feed.column_names == [*VISIBLE.names, *FEED_COLUMNS]
    start = pa.Table.from_pylist(list(states[2].values()), schema=VISIBLE)
    assert by_key(replay(start, feed, TableLayout(("id",))).to_pylist()) == states[6]
    feed_schema = StructType([*table_schema.fields, StructField(FEED_COLUMNS[0], StringType()),
                              StructField(FEED_COLUMNS[1], LongType()), StructField(FEED_COLUMNS[2], TimestampType())])
    sparks = python_source(server_url, scope, name, feed_schema, **{"streamcat.changes.from": "3"})
    assert Counter(tuple(r.values()) for r in sparks) == Counter(tuple(r.values()) for r in feed.to_pylist())
    # a compaction keeps the state: it writes it, its visible avg columns hold the average, and later inputs
    # (plain and stated) aggregate onto it exactly
    compact(catalog, registry, scope, name)
    assert by_key(list(reader.read())) == states[6]
    assert by_key(python_source(server_url, scope, name, table_schema)) == states[6]  # no merge: the file's values
    chunk = reader.snapshot()[1][0]
    fs, root = storage.resolve(reader.location)
    with fs.open_input_file(f"{root}/{chunk.path}") as source:
        compacted = pq.read_table(source)
    assert set(STATE.names) <= set(compacted.column_names)
    assert not any(compacted.schema.field(n).metadata for n in STATE.names if "$" in n)  # no field ids
    # an Iceberg client reads the compacted table; the name mapping passes over the hidden columns
    iceberg = pyiceberg(server_url).load_table(f"{scope}.{name}").scan().to_arrow().to_pylist()
    assert by_key(iceberg) == states[6]
    assert {r["id"]: (r["a"], r["f"]) for r in compacted.to_pylist()} == {
        k: (r["a"], r["f"]) for k, r in states[6].items()}
    more = [(UPSERT, plain_input(rng, k)) for k in range(4)] + [(UPSERT, state_input(rng, k)) for k in range(2, 6)]
    more += [(RETRACT, live[k][0]) for k in range(8) if live.get(k)][:3]
    with StreamWriter(catalog, registry, scope, name) as writer:
        write(writer, more)
    assert by_key(list(reader.read())) == model(history + more)
    assert by_key(python_source(server_url, scope, name, table_schema)) == model(history + more)


def test_a_change_of_hidden_state_alone_is_no_feed_row_and_a_key_whose_rows_all_leave_is_deleted(
    catalog: CatalogClient, registry: RegistryClient, scope: str
) -> None:
    name = f"avg{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, SPARK_SCHEMA, properties=PROPERTIES)
    rows = [{"id": 1, "a": 2.0}, {"id": 1, "a": 4.0}, {"id": 2, "a": 5.0}]
    with StreamWriter(catalog, registry, scope, name) as writer:
        write(writer, [(UPSERT, r) for r in rows])
        write(writer, [(UPSERT, {"id": 1, "a": 3.0})])           # 1's average stays 3: only its state moves
        write(writer, [(RETRACT, {"id": 2, "a": 5.0})])          # 2's only row leaves
    reader = StreamReader(catalog, registry, scope, name)
    assert sorted((r["id"], r["a"]) for r in reader.read(cut=1)) == [(1, 3.0), (2, 5.0)]
    assert [(r["id"], r["a"]) for r in reader.read()] == [(1, 3.0)]
    assert list(reader.changes(1, 2)) == []
    assert [(r["id"], r[CHANGE_TYPE], r["a"]) for r in reader.changes(2, 3)] == [(2, "delete", 5.0)]
    # an avg's own samples can still be taken back: the hidden state, not the shown value, is what merges
    with StreamWriter(catalog, registry, scope, name) as writer:
        write(writer, [(RETRACT, {"id": 1, "a": 2.0}), (UPSERT, {"id": 2, "a": 1.0})])
    assert sorted((r["id"], r["a"]) for r in reader.read()) == [(1, 3.5), (2, 1.0)]


def test_the_spark_python_writer_writes_declared_state_columns_and_refuses_others(
    server_url: str, catalog: CatalogClient, registry: RegistryClient, scope: str
) -> None:
    name = f"avg{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, SPARK_SCHEMA, properties=PROPERTIES)
    hidden = [StructField("a$sum", DoubleType()), StructField("a$count", LongType()),
              StructField("f$sum", DoubleType()), StructField("f$count", LongType()), StructField("$rows", LongType())]
    schema = StructType([*StructType.fromJson(catalog.get_table(scope, name)["schema"]).fields, *hidden])
    options = SourceOptions.parse({"uri": server_url, "scope": scope, "table": name}).resolved()
    writer = BatchWriter(options, schema, overwrite=False)
    rows = [{"id": 1, "s": 3, "a$sum": 9.0, "a$count": 3, "f$sum": 2.0, "f$count": 2, "$rows": 3},
            {"id": 2, "s": 1, "a$sum": 0.0, "a$count": 0, "f$sum": 2.0, "f$count": 1, "$rows": 1}]
    batch = pa.RecordBatch.from_pylist(rows, schema=STATE.remove(STATE.get_field_index("id")).insert(
        0, pa.field("id", pa.int64())))
    writer.commit([writer.write(iter([batch]))])
    with StreamWriter(catalog, registry, scope, name) as plain:
        write(plain, [(UPSERT, {"id": 1, "a": 7.0, "f": 4.0}), (RETRACT, {"id": 2, "s": 1, "f": 2.0})])
    assert by_key(list(StreamReader(catalog, registry, scope, name).read())) == {
        1: {"id": 1, "a": 4.0, "f": 2.0, "s": 3}}
    assert python_source(server_url, scope, name, StructType.fromJson(SPARK_SCHEMA)) == [
        {"id": 1, "a": 4.0, "f": 2.0, "s": 3}]
    for wrong, message in ((StructField("b$sum", DoubleType()), "column b\\$sum is no column"),
                           (StructField("a$count", DoubleType()), "a\\$count is of type long, not double")):
        bad = StructType([f for f in schema.fields if f.name != wrong.name] + [wrong])
        with pytest.raises(OptionError, match=message):
            BatchWriter(options, bad, overwrite=False)


@pytest.mark.parametrize(("properties", "message"), [
    ({"fields.name.aggregate-function": "avg"}, "column name of type string cannot take aggregate function avg"),
    ({"fields.n.aggregate-function": "avg"}, "column n of type long cannot take aggregate function avg"),
    ({"aggregation.row-count-field": "$other"}, "the only hidden row count is '\\$rows'"),
    ({"fields.a$sum.aggregate-function": "sum"}, "names holding '\\$' are hidden state columns"),
])
def test_the_server_refuses_state_it_cannot_keep(catalog: CatalogClient, scope: str, properties: dict[str, str],
                                                 message: str) -> None:
    schema = {"type": "struct", "fields": [*SPARK_SCHEMA["fields"],
                                           {"name": "name", "type": "string", "nullable": True, "metadata": {}},
                                           {"name": "n", "type": "long", "nullable": True, "metadata": {}}]}
    with pytest.raises(BadRequest, match=message):
        catalog.create_table(scope, f"t{uuid.uuid4().hex[:8]}", schema, properties={**PROPERTIES, **properties})
