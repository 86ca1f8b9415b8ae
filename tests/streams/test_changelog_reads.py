"""StreamReader on tables that change, over the real server: the merged state at every cut, and the
change feed between cuts, against a plain-Python model of the same commits."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.streams import StreamReader
from catalog_api.streams.changelog import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION, FEED_COLUMNS, replay
from catalog_api.streams.merge import TableLayout
from catalog_api.streams.row_kinds import DELETE, UPSERT, write_change_chunk, write_position_deletes
from registry.api.models import VersionInfo as VersionInfoModel
from registry.client import RegistryClient
from tests.streams.helpers import keyed_chunk

COLUMNS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                     pa.field("amount", pa.float64()), pa.field("ts", pa.int64())])
SPARK_SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": False, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    {"name": "amount", "type": "double", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "long", "nullable": True, "metadata": {}},
]}

Row = dict[str, Any]


class Table:
    """A table on the test server, written chunk by chunk, and the model of what each cut holds."""

    def __init__(self, catalog: CatalogClient, registry: RegistryClient, scope: str, properties: dict[str, str]):
        self.catalog, self.scope = catalog, scope
        self.name = f"t{uuid.uuid4().hex[:10]}"
        answer = catalog.create_table(scope, self.name, SPARK_SCHEMA, properties=properties)
        self.location = answer["stream"]["location"]
        self.registry = RegistryClient(registry.url, scope, session=registry.http)
        version = VersionInfoModel.model_validate(answer["schemaVersion"]).to_domain()
        self.encoding_id = int(self.registry.encoding_id(self.name, version))
        self.layout = TableLayout.from_properties(answer["properties"])

    def reader(self) -> StreamReader:
        return StreamReader(self.catalog, self.registry, self.scope, self.name)

    def change_chunk(self, rows: list[tuple[int, Row]]) -> Chunk:
        return keyed_chunk(self.location, self.encoding_id, COLUMNS, rows)

    def commit(self, chunks: list[Chunk], **options: Any) -> int:
        return int(self.catalog.commit(self.scope, self.name, chunks, **options)["number"])

    def visible(self, cut: int | None = None) -> list[Chunk]:
        return self.catalog.snapshot(self.scope, self.name, cut=cut)[1]


def by_key(rows: list[Row]) -> dict[int, Row]:
    result = {r["id"]: {k: r[k] for k in COLUMNS.names} for r in rows}
    assert len(result) == len(rows), "one row per key"
    return result


def random_row(rng: random.Random, key: int, partial: bool) -> Row:
    def maybe(value: Any) -> Any:
        return None if partial and rng.random() < 0.4 else value
    return {"id": key, "name": maybe(rng.choice(["a", "b", "c"])), "amount": maybe(round(rng.random() * 100, 2)),
            "ts": maybe(rng.randrange(1000))}


@pytest.mark.parametrize(("engine", "seed"), [("deduplicate", 1), ("partial-update", 2), ("deduplicate", 3)])
def test_a_primary_key_table_reads_merged_at_every_cut_and_its_feed_replays(
    catalog: CatalogClient, client: RegistryClient, scope: str, engine: str, seed: int
) -> None:
    rng = random.Random(seed)
    table = Table(catalog, client, scope, {"primary-key": "id", "merge-engine": engine})
    partial = engine == "partial-update"
    states: dict[int, dict[int, Row]] = {0: {}}
    state: dict[int, Row] = {}
    for number in range(1, 9):
        if number == 5:  # a compaction of everything at the cut before: changes no row
            merged = table.reader().read_batches()
            rows = [(UPSERT, r) for b in merged for r in b.to_pylist()]
            chunk = table.change_chunk(sorted(rows, key=lambda r: r[1]["id"]))
            got = table.commit([chunk], kind="compaction", base_cut=number - 1,
                               removes=[c.path for c in table.visible()])
            assert got == number
            states[number] = dict(state)
            continue
        overwrite = number == 7
        if overwrite:
            state = {}
        chunks = []
        for _ in range(rng.randint(1, 2)):
            rows = []
            for _ in range(rng.randint(1, 25)):
                key = rng.randrange(20)
                if rng.random() < 0.25:
                    rows.append((DELETE, {"id": key}))
                    state.pop(key, None)
                else:
                    row = random_row(rng, key, partial)
                    old = state.get(key)
                    state[key] = ({c: (row[c] if row[c] is not None else old[c]) for c in row}
                                  if partial and old else row)
                    rows.append((UPSERT, row))
            chunks.append(table.change_chunk(rows))
        assert table.commit(chunks, overwrite=overwrite) == number
        states[number] = dict(state)
    reader = table.reader()
    for cut, expected in states.items():
        assert by_key(list(reader.read(cut=cut))) == expected, f"cut {cut}"
        assert by_key(pa.Table.from_batches(list(reader.read_batches(cut=cut)), schema=COLUMNS).to_pylist()) \
            == expected
    for after, to in [(0, 8), (0, 3), (2, 6), (4, 5), (4, 8), (6, 7)]:
        feed = list(reader.changes(after, to))
        assert {r[COMMIT_VERSION] for r in feed} <= set(range(after + 1, to + 1)) - {5}
        assert {r[CHANGE_TYPE] for r in feed} <= {"insert", "update_preimage", "update_postimage", "delete"}
        start = pa.Table.from_pylist(list(states[after].values()), schema=COLUMNS)
        batches = list(reader.change_batches(after, to))
        replayed = replay(start, pa.Table.from_batches(batches) if batches else _empty_feed(), TableLayout(("id",)))
        assert by_key(replayed.to_pylist()) == states[to], f"({after}, {to}]"
        times = [r[COMMIT_TIMESTAMP] for r in feed]
        assert times == sorted(times)
    assert [r[CHANGE_TYPE] for r in reader.changes(4, 5)] == []  # the compaction shows nothing


def _empty_feed() -> pa.Table:
    from catalog_api.streams.changelog import FEED_FIELDS

    return pa.schema([*COLUMNS, *FEED_FIELDS]).empty_table()


def test_an_append_table_applies_position_deletes_and_its_feed_shows_them(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    table = Table(catalog, client, scope, {})
    first = table.change_chunk([(UPSERT, {"id": i, "name": f"r{i}"}) for i in range(6)])
    second = table.change_chunk([(UPSERT, {"id": i, "name": f"r{i}"}) for i in range(6, 9)])
    assert table.commit([first, second]) == 1
    # an UPDATE of rows 1 and 7: position deletes of the old rows, the new rows in a new chunk
    deletes = write_position_deletes(table.location, f"data/{uuid.uuid4().hex}.parquet",
                                     [first.path, second.path], [1, 1])
    updated = table.change_chunk([(UPSERT, {"id": 1, "name": "new1"}), (UPSERT, {"id": 7, "name": "new7"})])
    assert table.commit([deletes, updated], kind="row-level", read_cut=1) == 2
    reader = table.reader()
    names = sorted(r["name"] for r in reader.read())
    assert names == sorted([f"r{i}" for i in range(9) if i not in (1, 7)] + ["new1", "new7"])
    assert sorted(r["name"] for b in reader.read_batches() for r in b.to_pylist()) == names
    assert sorted(r["name"] for r in reader.read(cut=1)) == sorted(f"r{i}" for i in range(9))
    feed = [(r[CHANGE_TYPE], r["name"], r[COMMIT_VERSION]) for r in reader.changes(1, 2)]
    assert sorted(feed) == [("delete", "r1", 2), ("delete", "r7", 2), ("insert", "new1", 2), ("insert", "new7", 2)]
    # a delete of a whole chunk (removed by name) and an overwrite
    assert table.commit([], kind="row-level", read_cut=2, removes=[second.path]) == 3
    assert sorted(r["name"] for r in reader.read()) == sorted(["r0", "r2", "r3", "r4", "r5", "new1", "new7"])
    assert sorted((r[CHANGE_TYPE], r["name"]) for r in reader.changes(2, 3)) == [("delete", "r6"), ("delete", "r8")]
    last = table.change_chunk([(UPSERT, {"id": 100, "name": "only"})])
    assert table.commit([last], overwrite=True) == 4
    feed4 = sorted((r[CHANGE_TYPE], r["name"]) for r in reader.changes(3))
    gone = ["r0", "r2", "r3", "r4", "r5", "new1", "new7"]
    assert feed4 == sorted([("delete", n) for n in gone] + [("insert", "only")])
    start = pa.Table.from_pylist(list(reader.read(cut=1)), schema=COLUMNS)
    replayed = replay(start, pa.Table.from_batches(list(reader.change_batches(1, 4))), table.layout)
    assert replayed.to_pylist() == list(reader.read())
    assert set(FEED_COLUMNS) <= set(next(iter(reader.changes(0))).keys())


def test_deletes_of_a_table_with_not_null_columns(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    strict = {"type": "struct", "fields": [{**f, "nullable": False} for f in SPARK_SCHEMA["fields"]]}
    name = f"t{uuid.uuid4().hex[:10]}"
    answer = catalog.create_table(scope, name, strict, properties={"primary-key": "id"})
    registry = RegistryClient(client.url, scope, session=client.http)
    encoding = int(registry.encoding_id(name, VersionInfoModel.model_validate(answer["schemaVersion"]).to_domain()))
    location = answer["stream"]["location"]

    def chunk(rows: list[dict[str, Any]], ops: list[int]) -> Chunk:
        path = f"data/{uuid.uuid4().hex}.parquet"
        stats = write_change_chunk(location, path, pa.Table.from_pylist(rows, schema=COLUMNS),
                                   pa.array(ops, pa.int8()), encoding)
        return stats.columnar(path)

    full = {"name": "n", "amount": 1.0, "ts": 1}
    catalog.commit(scope, name, [chunk([{"id": 1, **full}, {"id": 2, **full}], [UPSERT, UPSERT])])
    catalog.commit(scope, name, [chunk([{"id": 2}], [DELETE])])  # a delete row: only its key is set
    reader = StreamReader(catalog, registry, scope, name)
    assert list(reader.read()) == [{"id": 1, **full}]
    assert [(r[CHANGE_TYPE], r["id"]) for r in reader.changes(0)] == [("insert", 1), ("insert", 2), ("delete", 2)]
