"""The aggregation and first-row merge engines (docs/changelog-tables.md, "Merge engines"), over the real
server: every aggregate function with retractions, written by StreamWriter, read at every cut, after a
compaction and through the change feed, against a plain-Python model; Debezium updates and deletes as
retractions; what the server and the writers refuse."""

from __future__ import annotations

import math
import random
import uuid
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.changelog import CHANGE_TYPE, replay
from catalog_api.streams.compaction import compact
from catalog_api.streams.debezium.ingest import ingest
from catalog_api.streams.merge import TableLayout
from catalog_api.streams.row_kinds import DELETE, RETRACT, UPSERT
from registry.client import RegistryClient
from registry.errors import BadRequest

#: column -> (Spark type, aggregate function, ignore retractions)
COLUMNS: dict[str, tuple[str, str, bool]] = {
    "s": ("long", "sum", False), "p": ("long", "product", False), "c": ("long", "count", False),
    "mn": ("long", "min", True), "mx": ("long", "max", True), "fv": ("string", "first_value", True),
    "fnn": ("string", "first_non_null_value", True), "lv": ("string", "last_value", True),
    "lnn": ("string", "last_non_null_value", True), "ba": ("boolean", "bool_and", True),
    "bo": ("boolean", "bool_or", True), "la": ("string", "listagg", True),
}
ARROW = {"long": pa.int64(), "string": pa.string(), "boolean": pa.bool_()}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    *(pa.field(name, ARROW[kind]) for name, (kind, _, _) in COLUMNS.items())])
Row = dict[str, Any]


def spark_schema(columns: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    fields = [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]
    fields += [{"name": n, "type": kind, "nullable": True, "metadata": {}} for n, (kind, _, _) in columns.items()]
    return {"type": "struct", "fields": fields}


def aggregation_properties(columns: dict[str, tuple[str, str, bool]]) -> dict[str, str]:
    properties = {"primary-key": "id", "merge-engine": "aggregation"}
    if "la" in columns:
        properties["fields.la.list-agg-delimiter"] = "|"
    for name, (_, function, ignore) in columns.items():
        properties[f"fields.{name}.aggregate-function"] = function
        if ignore:
            properties[f"fields.{name}.ignore-retract"] = "true"
    return properties


def model(changes: list[tuple[int, Row]]) -> dict[int, Row]:
    """What the engine promises: per key, the aggregate of its inputs since its last delete."""
    by_key: dict[int, list[tuple[int, Row]]] = {}
    for op, row in changes:
        if op == DELETE:
            by_key[row["id"]] = []
        else:
            by_key.setdefault(row["id"], []).append((op, row))
    result = {}
    for key, inputs in by_key.items():
        if not inputs:
            continue
        ups = [r for op, r in inputs if op == UPSERT]
        downs = [r for op, r in inputs if op == RETRACT]

        def values(rows: list[Row], column: str) -> list[Any]:
            return [r[column] for r in rows if r.get(column) is not None]

        def maybe(found: list[Any], fold: Any) -> Any:
            return fold(found) if found else None

        s_up, s_down = values(ups, "s"), values(downs, "s")
        p_up, p_down = values(ups, "p"), values(downs, "p")
        strings = [r.get("fv") for r in ups]
        row: Row = {
            "id": key,
            "s": sum(s_up) - sum(s_down) if s_up or s_down else None,
            "p": math.prod(p_up) // math.prod(p_down) if p_up else None,
            "c": len(values(ups, "c")) - len(values(downs, "c")),
            "mn": maybe(values(ups, "mn"), min), "mx": maybe(values(ups, "mx"), max),
            "fv": strings[0] if strings else None,
            "fnn": maybe(values(ups, "fnn"), lambda v: v[0]),
            "lv": ups[-1].get("lv") if ups else None,
            "lnn": maybe(values(ups, "lnn"), lambda v: v[-1]),
            "ba": maybe(values(ups, "ba"), all), "bo": maybe(values(ups, "bo"), any),
            "la": maybe(values(ups, "la"), "|".join),
        }
        result[key] = row
    return result


def random_input(rng: random.Random, key: int) -> Row:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.25 else value
    return {"id": key, "s": maybe(rng.randrange(-50, 50)), "p": maybe(rng.choice([1, 2, 3])),
            "c": maybe(rng.randrange(100)), "mn": maybe(rng.randrange(1000)), "mx": maybe(rng.randrange(1000)),
            "fv": maybe(rng.choice("abc")), "fnn": maybe(rng.choice("abc")), "lv": maybe(rng.choice("abc")),
            "lnn": maybe(rng.choice("abc")), "ba": maybe(rng.random() < 0.7), "bo": maybe(rng.random() < 0.3),
            "la": maybe(rng.choice("xyz"))}


def retraction_of(row: Row) -> Row:
    """A before-image retracting what ``row`` added to the retractable columns (the others null)."""
    return {"id": row["id"], "s": row["s"], "p": row["p"], "c": row["c"]}


def by_key(rows: list[Row]) -> dict[int, Row]:
    return {r["id"]: r for r in rows}


@pytest.fixture
def registry(server_url: str, scope: str) -> RegistryClient:
    return RegistryClient(server_url, scope)


@pytest.mark.parametrize("seed", [1, 2])
def test_every_aggregate_function_with_retractions_at_every_cut_compacted_and_in_the_feed(
    catalog: CatalogClient, registry: RegistryClient, scope: str, seed: int
) -> None:
    rng = random.Random(seed)
    name = f"agg{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, spark_schema(COLUMNS), properties=aggregation_properties(COLUMNS))
    history: list[tuple[int, Row]] = []
    states = {0: {}}
    live: dict[int, list[Row]] = {}  # per key, inputs that a later retraction may take back
    with StreamWriter(catalog, registry, scope, name) as writer:
        for number in range(1, 8):
            rows, ops = [], []
            for _ in range(rng.randint(1, 30)):
                key = rng.randrange(12)
                roll = rng.random()
                if roll < 0.1:
                    change: tuple[int, Row] = (DELETE, {"id": key})
                    live[key] = []
                elif roll < 0.35 and live.get(key):
                    change = (RETRACT, retraction_of(live[key].pop(rng.randrange(len(live[key])))))
                else:
                    change = (UPSERT, random_input(rng, key))
                    live.setdefault(key, []).append(change[1])
                history.append(change)
                ops.append(change[0])
                rows.append(change[1])
            writer.write_changes(pa.Table.from_pylist(rows, schema=SCHEMA), ops)
            writer.flush()
            states[number] = model(history)
    reader = StreamReader(catalog, registry, scope, name)
    for cut, expected in states.items():
        assert by_key(list(reader.read(cut=cut))) == expected, f"cut {cut}"
    # the feed of every commit replays to the next state
    start = pa.Table.from_pylist(list(states[2].values()), schema=SCHEMA)
    feed = pa.Table.from_batches(list(reader.change_batches(2, 7)))
    assert set(feed.column(CHANGE_TYPE).to_pylist()) <= {"insert", "update_preimage", "update_postimage", "delete"}
    assert by_key(replay(start, feed, TableLayout(("id",))).to_pylist()) == states[7]
    # a compaction changes no row, and later inputs aggregate onto the compacted states
    compact(catalog, registry, scope, name)
    assert by_key(list(reader.read())) == states[7]
    more = [(UPSERT, random_input(rng, key)) for key in range(3)]
    more += [(RETRACT, retraction_of(live[k][0])) for k in range(12) if live.get(k)][:2]
    with StreamWriter(catalog, registry, scope, name) as writer:
        writer.write_changes(pa.Table.from_pylist([r for _, r in more], schema=SCHEMA), [op for op, _ in more])
        writer.flush()
    assert by_key(list(reader.read())) == model(history + more)


def test_first_row_keeps_each_keys_first_row_until_it_is_deleted(
    catalog: CatalogClient, registry: RegistryClient, scope: str
) -> None:
    name = f"first{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, spark_schema({"s": ("long", "", False)}),
                         properties={"primary-key": "id", "merge-engine": "first-row"})
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.int64())])
    with StreamWriter(catalog, registry, scope, name) as writer:
        writer.write_changes(pa.table({"id": [1, 2, 1], "s": [10, 20, 11]}, schema=schema))
        writer.flush()
        writer.write_changes(pa.table({"id": [1, 2, 2, 3], "s": [12, None, 21, 30]}, schema=schema),
                             [UPSERT, DELETE, UPSERT, UPSERT])
        writer.flush()
    reader = StreamReader(catalog, registry, scope, name)
    assert sorted((r["id"], r["s"]) for r in reader.read(cut=1)) == [(1, 10), (2, 20)]
    assert sorted((r["id"], r["s"]) for r in reader.read()) == [(1, 10), (2, 21), (3, 30)]
    feed = [(r["id"], r[CHANGE_TYPE], r["s"]) for r in reader.changes(1, 2)]
    # key 1's later row changes nothing, so the feed shows nothing for it
    assert sorted(feed) == [(2, "update_postimage", 21), (2, "update_preimage", 20), (3, "insert", 30)]


def test_a_retraction_a_function_cannot_take_back_is_refused_naming_the_column(
    catalog: CatalogClient, registry: RegistryClient, scope: str
) -> None:
    columns = {"s": ("long", "sum", False), "mx": ("long", "max", False)}
    name = f"agg{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, spark_schema(columns), properties=aggregation_properties(columns))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.int64()),
                        pa.field("mx", pa.int64())])
    with StreamWriter(catalog, registry, scope, name) as writer:
        with pytest.raises(ValueError, match=r"column mx aggregates by max.*fields\.mx\.ignore-retract"):
            writer.write_changes(pa.table({"id": [1], "s": [5], "mx": [5]}, schema=schema), [RETRACT])
        # a retraction that leaves max's column empty takes back only the sum
        writer.write_changes(pa.table({"id": [1, 1, 1], "s": [5, 7, 5], "mx": [5, 7, None]}, schema=schema),
                             [UPSERT, UPSERT, RETRACT])
        writer.flush()
    assert list(StreamReader(catalog, registry, scope, name).read()) == [{"id": 1, "s": 7, "mx": 7}]


def test_debezium_updates_and_deletes_are_retractions(
    catalog: CatalogClient, registry: RegistryClient, scope: str
) -> None:
    from tests.changelog.helpers import event

    columns = {"total": ("long", "sum", False), "n": ("long", "count", False)}
    name = f"cdc{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, spark_schema(columns), properties=aggregation_properties(columns))
    events = [
        event("c", None, {"id": 1, "total": 10, "n": 1}, 100),
        event("c", None, {"id": 1, "total": 5, "n": 1}, 110),
        event("u", {"id": 1, "total": 10, "n": 1}, {"id": 1, "total": 12, "n": 1}, 120),
        event("c", None, {"id": 2, "total": 3, "n": 1}, 130),
        event("d", {"id": 1, "total": 5, "n": 1}, None, 140),
    ]
    ingest(catalog, registry, scope, name, events, writer_id="cdc", batch_size=2)
    rows = sorted((r["id"], r["total"], r["n"]) for r in StreamReader(catalog, registry, scope, name).read())
    assert rows == [(1, 12, 1), (2, 3, 1)]


@pytest.mark.parametrize(("properties", "message"), [
    ({"fields.s.aggregate-function": "median"}, "'median' is not one of"),
    ({"fields.name.aggregate-function": "sum"}, "column name of type string cannot take aggregate function sum"),
    ({"fields.id.aggregate-function": "max"}, "id is a key column"),
    ({"fields.nosuch.aggregate-function": "max"}, "names no column"),
    ({"fields.s.ignore-retract": "maybe"}, "must be true or false"),
])
def test_the_server_refuses_aggregations_it_cannot_apply(
    catalog: CatalogClient, scope: str, properties: dict[str, str], message: str
) -> None:
    schema = spark_schema({"s": ("long", "", False), "name": ("string", "", False)})
    with pytest.raises(BadRequest, match=message):
        catalog.create_table(scope, f"t{uuid.uuid4().hex[:8]}", schema,
                             properties={"primary-key": "id", "merge-engine": "aggregation", **properties})
    with pytest.raises(BadRequest, match="apply to tables with 'merge-engine' = 'aggregation'"):
        catalog.create_table(scope, f"t{uuid.uuid4().hex[:8]}", schema,
                             properties={"primary-key": "id", "fields.s.aggregate-function": "sum"})
