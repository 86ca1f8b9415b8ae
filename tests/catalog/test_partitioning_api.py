"""Partitioned tables over the REST API (docs/partitioning.md): specs at creation and by evolution,
partitioned commits, scan planning that skips chunks, partition listings, and every refusal (a 400
naming what is wrong, with nothing written)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.partitioning.spec import Transform, table_spec
from catalog_api.partitioning.transforms import apply, partition_values
from catalog_api.schema.fieldids import FIELD_ID
from catalog_api.streams.chunks import write_columnar_chunk
from catalog_api.streams.compaction import compact
from registry.api.models import VersionInfo
from registry.client import RegistryClient

DAY = 86_400_000_000  # microseconds
D0 = 19_700  # a day (days since the epoch) the tests' rows are in


def col(name: str, type_: Any, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


EVENTS = struct(col("id", "long", False), col("ts", "timestamp"), col("region", "string"), col("amount", "double"))
SPEC = "days(ts), bucket(8, id), region"


def bucket8(value: int) -> int:
    return int(apply(Transform.parse("bucket[8]"), value))


class Api:
    """Raw HTTP, to see statuses and bodies as any client would."""

    def __init__(self, url: str, scope: str) -> None:
        self.url, self.scope = url, scope

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, f"{self.url}/v1/scopes/{self.scope}{path}", timeout=60, **kwargs)

    def refused(self, method: str, path: str, body: Any, *words: str) -> str:
        """The message of a 400 answer, which must name each of ``words``."""
        response = self.call(method, path, json=body)
        assert response.status_code == 400, response.text
        message = str(response.json()["error"]["message"])
        for word in words:
            assert word in message, message
        return message


@pytest.fixture
def api(server_url: str, scope: str) -> Api:
    return Api(server_url, scope)


def ids(table: dict[str, Any]) -> dict[str, int]:
    return {f["name"]: f["metadata"][FIELD_ID] for f in table["schema"]["fields"]}


def stats(ts_days: tuple[int, int], id_range: tuple[int, int], region: str, amounts: tuple[float, float],
          rows: int = 10) -> dict[str, Any]:
    return {"rows": rows, "columns": {
        "ts": {"nulls": 0, "min": ts_days[0] * DAY, "max": ts_days[1] * DAY + DAY - 1},
        "id": {"nulls": 0, "min": id_range[0], "max": id_range[1]},
        "region": {"nulls": 0, "min": region, "max": region},
        "amount": {"nulls": 0, "min": amounts[0], "max": amounts[1]},
    }}


def chunk(path: str, spec_id: int | None = None, values: list[Any] | None = None, *, kind: str = "columnar",
          events: int = 10, size: int = 1000, chunk_stats: dict[str, Any] | None = None) -> Chunk:
    partition = None if spec_id is None else {"specId": spec_id, "values": values or []}
    return Chunk(path=path, kind=kind, event_count=events, bytes=size, stats=chunk_stats or {}, partition=partition)


def three_days(catalog: CatalogClient, scope: str, name: str = "events") -> list[Chunk]:
    """Commit one chunk per day D0, D0+1, D0+2 (id 1, 2, 3; regions eu, us, eu) under spec 1."""
    made = [
        chunk(f"d{i}.parquet", 1, [D0 + i, bucket8(i + 1), region], size=1000 * (i + 1),
              chunk_stats=stats((D0 + i, D0 + i), (i + 1, i + 1), region, (10.0 * i, 10.0 * i + 5)))
        for i, region in enumerate(("eu", "us", "eu"))
    ]
    catalog.commit(scope, name, made)
    return made


def paths(chunks: list[Chunk]) -> list[str]:
    return [c.path for c in chunks]


# -- the model ----------------------------------------------------------------------------------------------


def test_a_partitioned_table_shows_its_spec(catalog: CatalogClient, scope: str) -> None:
    table = catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    column = ids(table)  # partition fields name their sources by id: the columns got ids
    spec = {
        "specId": 1,
        "fields": [
            {"fieldId": 1000, "sourceId": column["ts"], "source": "ts", "transform": "day", "name": "ts_day"},
            {"fieldId": 1001, "sourceId": column["id"], "source": "id", "transform": "bucket[8]",
             "name": "id_bucket"},
            {"fieldId": 1002, "sourceId": column["region"], "source": "region", "transform": "identity",
             "name": "region"},
        ],
        "text": SPEC,
    }
    assert table["partitionSpec"] == spec
    assert table["partitionSpecs"] == [{"specId": 0, "fields": [], "text": ""}, spec]
    assert catalog.get_table(scope, "events")["partitionSpec"] == spec
    plain = catalog.create_table(scope, "plain", EVENTS)
    assert plain["partitionSpec"] == {"specId": 0, "fields": [], "text": ""}
    assert plain["partitionSpecs"] == [plain["partitionSpec"]]
    assert plain["schema"] == EVENTS, "an unpartitioned table's schema is left as it came"
    listed = {t["tableName"]: t["partitionSpec"]["specId"] for t in catalog.list_tables(scope)}
    assert listed == {"events": 1, "plain": 0}


def test_iceberg_spellings_and_quoted_names(catalog: CatalogClient, scope: str) -> None:
    schema = struct(col("my col", "date"), col("name", "string"), col("n", "integer"))
    table = catalog.create_table(scope, "t", schema, fmt="json", partitioning="month(`my col`), truncate(4, name), n")
    fields = table["partitionSpec"]["fields"]
    assert [(f["transform"], f["name"]) for f in fields] == [
        ("month", "my col_month"), ("truncate[4]", "name_trunc"), ("identity", "n")]
    assert table["partitionSpec"]["text"] == "months(`my col`), truncate(4, name), n"


# -- commits and planning -----------------------------------------------------------------------------------


def test_planning_skips_the_chunks_filters_rule_out(catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    made = three_days(catalog, scope)
    _cut, listed = catalog.snapshot(scope, "events")
    assert [c.partition for c in listed] == [c.partition for c in made]

    everything = catalog.plan_chunks(scope, "events")
    assert (paths(everything.chunks), everything.chunks_skipped, everything.bytes_skipped) == (
        paths(listed), 0, 0)
    # by partition: day, bucket, identity
    later = catalog.plan_chunks(scope, "events", [{"op": "ge", "column": "ts", "value": (D0 + 1) * DAY}])
    assert paths(later.chunks) == ["d1.parquet", "d2.parquet"]
    assert (later.chunks_skipped, later.bytes_skipped) == (1, 1000)
    assert paths(catalog.plan_chunks(scope, "events", [{"op": "eq", "column": "region", "value": "us"}]).chunks) \
        == ["d1.parquet"]
    one_id = catalog.plan_chunks(scope, "events", [{"op": "eq", "column": "id", "value": 3}])
    assert "d2.parquet" in paths(one_id.chunks)
    assert all(c.partition and c.partition["values"][1] == bucket8(3) for c in one_id.chunks)
    # by statistics (an append table): amount is no partition source
    cheap = catalog.plan_chunks(scope, "events", [{"op": "lt", "column": "amount", "value": 9.0}])
    assert paths(cheap.chunks) == ["d0.parquet"]
    # filters are a conjunction; or/in/isnull work through the partition too
    both = catalog.plan_chunks(scope, "events", [
        {"op": "eq", "column": "region", "value": "eu"},
        {"op": "or", "left": {"op": "lt", "column": "ts", "value": D0 * DAY + 5},
         "right": {"op": "in", "column": "region", "values": ["us"]}},
    ])
    assert paths(both.chunks) == ["d0.parquet"]
    assert catalog.plan_chunks(scope, "events", [{"op": "isnull", "column": "region"}]).chunks == []
    # an older cut plans over what it saw
    catalog.commit(scope, "events", [chunk("d9.parquet", 1, [D0 + 9, bucket8(9), "eu"])])
    old = catalog.plan_chunks(scope, "events", [{"op": "eq", "column": "region", "value": "eu"}], cut=1)
    assert (old.cut, paths(old.chunks)) == (1, ["d0.parquet", "d2.parquet"])


def test_plan_answers_in_its_rest_shape(api: Api, catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    three_days(catalog, scope)
    response = api.call("POST", "/streams/events/chunks/plan",
                        json={"filters": [{"op": "eq", "column": "region", "value": "us"}]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"streamCut", "chunks", "chunksSkipped", "bytesSkipped"}
    assert (body["streamCut"], body["chunksSkipped"], body["bytesSkipped"]) == (1, 2, 4000)
    assert body["chunks"][0]["partition"] == {"specId": 1, "values": [D0 + 1, bucket8(2), "us"]}
    assert api.call("POST", "/streams/events/chunks/plan", json={}).json()["chunksSkipped"] == 0
    listed = api.call("GET", "/streams/events/chunks").json()["chunks"]
    assert [c["partition"]["values"][0] for c in listed] == [D0, D0 + 1, D0 + 2]
    catalog.create_table(scope, "plain", EVENTS)
    catalog.commit(scope, "plain", [chunk("p.parquet")])
    assert "partition" not in api.call("GET", "/streams/plain/chunks").json()["chunks"][0], "left out, not null"


def test_a_plain_stream_plans_by_statistics(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "feed")
    catalog.commit(scope, "feed", [
        chunk("a.evt", kind="events", chunk_stats={"rows": 10, "columns": {"n": {"nulls": 0, "min": 1, "max": 5}}}),
        chunk("b.evt", kind="events", chunk_stats={"rows": 10, "columns": {"n": {"nulls": 0, "min": 6, "max": 9}}}),
    ])
    plan = catalog.plan_chunks(scope, "feed", [{"op": "gt", "column": "n", "value": 5}])
    assert (paths(plan.chunks), plan.chunks_skipped) == (["b.evt"], 1)


def test_merge_read_tables_prune_by_partition_only(catalog: CatalogClient, scope: str) -> None:
    keyed = struct(col("id", "long", False), col("day", "date", False), col("v", "integer"))
    catalog.create_table(scope, "kv", keyed, properties={"primary-key": "id,day"}, partitioning="day")
    low = {"rows": 5, "columns": {"v": {"nulls": 0, "min": 1, "max": 5}, "id": {"nulls": 0, "min": 1, "max": 5}}}
    catalog.commit(scope, "kv", [chunk("a.parquet", 1, [D0], chunk_stats=low),
                                 chunk("b.parquet", 1, [D0 + 1], chunk_stats=low)])
    # statistics rule both out, but a chunk's statistics cannot prove a key's latest version is elsewhere
    plan = catalog.plan_chunks(scope, "kv", [{"op": "gt", "column": "v", "value": 100}])
    assert paths(plan.chunks) == ["a.parquet", "b.parquet"]
    # the partition can
    plan = catalog.plan_chunks(scope, "kv", [{"op": "eq", "column": "day", "value": D0 + 1}])
    assert (paths(plan.chunks), plan.chunks_skipped) == (["b.parquet"], 1)

    # an append table with position deletes at the cut: partition only, and the deletes chunk stays
    catalog.create_table(scope, "log", EVENTS, partitioning="region")
    catalog.commit(scope, "log", [chunk("eu.parquet", 1, ["eu"], chunk_stats=stats((D0, D0), (1, 1), "eu", (1, 2))),
                                  chunk("us.parquet", 1, ["us"], chunk_stats=stats((D0, D0), (2, 2), "us", (1, 2)))])
    catalog.commit(scope, "log", [chunk("del.parquet", kind="deletes", events=1,
                                        chunk_stats={"rows": 1, "columns": {"pos": {"nulls": 0, "min": 0, "max": 0}}})],
                   kind="row-level", read_cut=1)
    plan = catalog.plan_chunks(scope, "log", [{"op": "gt", "column": "amount", "value": 100.0},
                                              {"op": "eq", "column": "region", "value": "us"}])
    assert paths(plan.chunks) == ["us.parquet", "del.parquet"]


# -- evolution ----------------------------------------------------------------------------------------------


def test_evolution_keeps_old_chunks_readable_and_prunable(catalog: CatalogClient, scope: str) -> None:
    created = catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    three_days(catalog, scope)
    evolved = catalog.set_partitioning(scope, "events", "months(ts)", expected_version=created["version"])
    assert evolved["version"] == created["version"] + 1
    assert evolved["partitionSpec"]["specId"] == 2
    assert evolved["partitionSpec"]["fields"] == [
        {"fieldId": 1003, "sourceId": ids(created)["ts"], "source": "ts", "transform": "month", "name": "ts_month"}]
    assert [s["specId"] for s in evolved["partitionSpecs"]] == [0, 1, 2]
    month = int(apply(Transform.parse("month"), (D0 + 40) * DAY, "timestamp"))
    catalog.commit(scope, "events", [chunk("m.parquet", 2, [month])])
    # a writer that loaded the table before the change may still commit under spec 1
    catalog.commit(scope, "events", [chunk("late.parquet", 1, [D0 + 50, bucket8(5), "us"])])
    _cut, listed = catalog.snapshot(scope, "events")
    assert [c.partition["specId"] for c in listed if c.partition] == [1, 1, 1, 2, 1]
    # one filter prunes chunks of both specs
    plan = catalog.plan_chunks(scope, "events", [{"op": "ge", "column": "ts", "value": (D0 + 30) * DAY}])
    assert paths(plan.chunks) == ["m.parquet", "late.parquet"]
    plan = catalog.plan_chunks(scope, "events", [{"op": "lt", "column": "ts", "value": (D0 + 1) * DAY}])
    assert paths(plan.chunks) == ["d0.parquet"]

    # an identical earlier spec is re-used; the field ids stay
    back = catalog.set_partitioning(scope, "events", "days(ts), bucket(8, id), region")
    assert back["partitionSpec"]["specId"] == 1
    assert [s["specId"] for s in back["partitionSpecs"]] == [0, 1, 2]
    # unpartitioned again: chunks without a partition are fine
    none = catalog.set_partitioning(scope, "events", "")
    assert none["partitionSpec"] == {"specId": 0, "fields": [], "text": ""}
    catalog.commit(scope, "events", [chunk("flat.parquet")])
    again = catalog.set_partitioning(scope, "events", "bucket(4, id)")
    assert (again["partitionSpec"]["specId"], again["partitionSpec"]["fields"][0]["fieldId"]) == (3, 1004)


def test_a_spec_follows_its_column_through_a_rename(catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    three_days(catalog, scope)
    renamed = catalog.alter_table(scope, "events", [{"op": "renameColumn", "path": ["region"], "newName": "area"}])
    field = renamed["partitionSpec"]["fields"][2]
    assert (field["source"], field["name"]) == ("area", "region")
    assert renamed["partitionSpec"]["text"] == "days(ts), bucket(8, id), area"
    plan = catalog.plan_chunks(scope, "events", [{"op": "eq", "column": "area", "value": "us"}])
    assert paths(plan.chunks) == ["d1.parquet"]
    assert catalog.list_partitions(scope, "events")["fields"][2]["source"] == "area"


def test_partitioning_a_table_made_without_field_ids(catalog: CatalogClient, scope: str) -> None:
    plain = catalog.create_table(scope, "events", EVENTS)
    catalog.commit(scope, "events", [chunk("old.parquet")])
    table = catalog.set_partitioning(scope, "events", "region")
    assert table["partitionSpec"]["fields"][0]["sourceId"] == ids(table)["region"]
    assert table["schemaVersion"]["version"] == plain["schemaVersion"]["version"] + 1
    assert [f["name"] for f in table["schema"]["fields"]] == ["id", "ts", "region", "amount"]
    catalog.commit(scope, "events", [chunk("eu.parquet", 1, ["eu"])])
    plan = catalog.plan_chunks(scope, "events", [{"op": "eq", "column": "region", "value": "us"}])
    assert paths(plan.chunks) == ["old.parquet"], "an unpartitioned chunk is kept"


# -- partitions -----------------------------------------------------------------------------------------------


def test_list_partitions_counts_the_live_chunks_of_the_current_spec(
    api: Api, catalog: CatalogClient, scope: str
) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning="region")
    catalog.commit(scope, "events", [chunk("a", 1, ["us"], events=5, size=50), chunk("b", 1, ["eu"], events=7, size=70),
                                     chunk("c", 1, [None], events=1, size=10)])
    catalog.commit(scope, "events", [chunk("d", 1, ["eu"], events=3, size=30),
                                     chunk("x", 1, ["eu"], kind="deletes", events=2, size=5)],
                   kind="row-level", read_cut=1)
    body = api.call("GET", "/tables/events/partitions").json()
    assert body == {
        "specId": 1,
        "fields": catalog.get_table(scope, "events")["partitionSpec"]["fields"],
        "partitions": [
            {"values": [None], "chunkCount": 1, "eventCount": 1, "bytes": 10},
            {"values": ["eu"], "chunkCount": 2, "eventCount": 10, "bytes": 100},
            {"values": ["us"], "chunkCount": 1, "eventCount": 5, "bytes": 50},
        ],
    }
    catalog.commit(scope, "events", [chunk("b2", 1, ["eu"], events=20, size=200)], kind="row-level", read_cut=2,
                   removes=["b"])
    assert catalog.list_partitions(scope, "events")["partitions"][1] == {
        "values": ["eu"], "chunkCount": 2, "eventCount": 23, "bytes": 230}, "removed chunks no longer count"
    # after a spec change, only chunks of the new spec count
    catalog.set_partitioning(scope, "events", "bucket(2, id)")
    assert catalog.list_partitions(scope, "events")["partitions"] == []
    catalog.commit(scope, "events", [chunk("n", 2, [1], events=4, size=40)])
    assert catalog.list_partitions(scope, "events")["partitions"] == [
        {"values": [1], "chunkCount": 1, "eventCount": 4, "bytes": 40}]
    # an unpartitioned table: one partition of no values
    catalog.create_table(scope, "plain", EVENTS)
    assert catalog.list_partitions(scope, "plain")["partitions"] == []
    catalog.commit(scope, "plain", [chunk("p", events=2, size=20)])
    assert catalog.list_partitions(scope, "plain") == {
        "specId": 0, "fields": [], "partitions": [{"values": [], "chunkCount": 1, "eventCount": 2, "bytes": 20}]}
    assert api.call("GET", "/tables/nothing/partitions").status_code == 404


# -- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "words"), [
    ("days(ts", ["days(ts", "')'"]),
    ("years(region)", ["region", "string", "year"]),
    ("bucket(0, id)", ["bucket count", "0"]),
    ("bucket(2000000, id)", ["bucket count"]),
    ("truncate(0, region)", ["truncate width"]),
    ("nope(ts)", ["nope"]),
    ("days(missing)", ["missing"]),
    ("amount", ["amount", "double", "identity"]),
    ("ts, ts", ["repeats"]),
])
def test_bad_partitioning_text_is_refused_and_nothing_is_made(
    api: Api, catalog: CatalogClient, client: RegistryClient, scope: str, text: str, words: list[str]
) -> None:
    api.refused("POST", "/tables", {"tableName": "events", "schema": EVENTS, "partitioning": text}, *words)
    assert api.call("GET", "/tables/events").status_code == 404
    assert api.call("GET", "/streams/events").status_code == 404
    assert "events" not in [t["tableName"] for t in catalog.list_tables(scope)]
    catalog.create_table(scope, "events", EVENTS)
    before = catalog.get_table(scope, "events")
    api.refused("PATCH", "/tables/events", {"changes": [{"op": "setPartitioning", "partitioning": text}]}, *words)
    after = catalog.get_table(scope, "events")
    assert (after["version"], after["partitionSpecs"], after["schemaVersion"]) == (
        before["version"], before["partitionSpecs"], before["schemaVersion"])


def test_bad_partitions_in_a_commit_are_refused_naming_the_chunk(
    api: Api, catalog: CatalogClient, scope: str
) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    good = {"path": "good.parquet", "kind": "columnar", "eventCount": 1, "bytes": 1,
            "partition": {"specId": 1, "values": [D0, 1, "eu"]}}

    def bad(partition: Any = None, **extra: Any) -> dict[str, Any]:
        body = {"path": "bad.parquet", "kind": "columnar", "eventCount": 1, "bytes": 1, **extra}
        if partition is not None:
            body["partition"] = partition
        return {"chunks": [good, body]}

    commits = "/streams/events/commits"
    api.refused("POST", commits, bad({"specId": 1, "values": ["2023-12-09", 1, "eu"]}), "bad.parquet", "ts_day")
    api.refused("POST", commits, bad({"specId": 1, "values": [D0, 1]}), "bad.parquet", "3")
    api.refused("POST", commits, bad({"specId": 1, "values": [D0, 1, 7]}), "bad.parquet", "region")
    api.refused("POST", commits, bad({"specId": 1, "values": [D0, True, "eu"]}), "bad.parquet", "id_bucket")
    api.refused("POST", commits, bad({"specId": 1, "values": [D0, 8, "eu"]}), "bad.parquet", "id_bucket", "0 and 7")
    api.refused("POST", commits, bad({"specId": 7, "values": []}), "bad.parquet", "spec 7")
    api.refused("POST", commits, bad({"specId": 0, "values": [1]}), "bad.parquet", "spec 0")
    api.refused("POST", commits, bad({"specId": 1}), "partition")
    api.refused("POST", commits, bad(), "bad.parquet", "no partition", SPEC)
    api.refused("POST", commits, {**bad(), "overwrite": True}, "bad.parquet", "no partition")
    assert catalog.get_stream(scope, "events")["lastCommit"] == 0
    assert catalog.snapshot(scope, "events")[1] == []

    # what is fine: nulls, event chunks of producers (no partition), spec 0 spelled out in an
    # unpartitioned table, and a row-level commit's deletes
    catalog.commit(scope, "events", [chunk("n.parquet", 1, [None, None, None]), chunk("e.evt", kind="events")])
    catalog.create_table(scope, "plain", EVENTS)
    catalog.commit(scope, "plain", [chunk("z.parquet", 0, [])])
    assert catalog.snapshot(scope, "plain")[1][0].partition is None
    # a writer that loaded the table before it was partitioned names spec 0: its chunk is kept unpartitioned
    # (read, pruned by statistics, never by partition), as a chunk of any earlier spec is
    catalog.commit(scope, "events", [chunk("old.parquet", 0, [])])
    kept = {c.path: c.partition for c in catalog.snapshot(scope, "events")[1]}
    assert kept["old.parquet"] is None
    # a plain stream has only spec 0
    catalog.create_stream(scope, "feed")
    api.refused("POST", "/streams/feed/commits", {"chunks": [{**good, "kind": "events"}]}, "good.parquet", "spec 1")


def test_dropping_or_retyping_a_source_column_is_refused(api: Api, catalog: CatalogClient, scope: str) -> None:
    schema = struct(col("id", "long", False), col("ts", "timestamp"), col("n", "integer"))
    catalog.create_table(scope, "events", schema, partitioning="days(ts), n")
    before = catalog.get_table(scope, "events")
    table = "/tables/events"
    api.refused("PATCH", table, {"changes": [{"op": "dropColumn", "path": ["ts"]}]}, "ts_day", "ts", "drop")
    api.refused("PATCH", table, {"changes": [{"op": "updateColumnType", "path": ["n"], "type": "double"}]},
                "n", "double")
    after = catalog.get_table(scope, "events")
    assert (after["version"], after["schema"], after["schemaVersion"]) == (
        before["version"], before["schema"], before["schemaVersion"])
    # the refusal names the column as it is called now
    catalog.alter_table(scope, "events", [{"op": "renameColumn", "path": ["ts"], "newName": "at"}])
    api.refused("PATCH", table, {"changes": [{"op": "dropColumn", "path": ["at"]}]}, "ts_day", "column at")
    # a source only an older spec reads may go; so may a source in the same request that drops it from the spec
    catalog.alter_table(scope, "events", [{"op": "setPartitioning", "partitioning": "n"},
                                          {"op": "dropColumn", "path": ["at"]}])
    assert [f["name"] for f in catalog.get_table(scope, "events")["schema"]["fields"]] == ["id", "n"]
    # a column added in the same request may be a source
    added = catalog.alter_table(scope, "events", [{"op": "addColumn", "path": ["day"], "type": "date"},
                                                  {"op": "setPartitioning", "partitioning": "day, n"}])
    assert added["partitionSpec"]["text"] == "day, n"
    # twice in one request is refused
    api.refused("PATCH", table, {"changes": [{"op": "setPartitioning", "partitioning": "n"},
                                             {"op": "setPartitioning", "partitioning": "day"}]}, "once")


def test_a_primary_key_table_is_partitioned_by_key_columns_only(api: Api, catalog: CatalogClient, scope: str) -> None:
    schema = struct(col("id", "long", False), col("region", "string", False), col("v", "integer"))
    keyed = {"primary-key": "id,region"}
    api.refused("POST", "/tables", {"tableName": "kv", "schema": schema, "properties": keyed,
                                    "partitioning": "v"}, "v", "primary key")
    assert api.call("GET", "/tables/kv").status_code == 404
    table = catalog.create_table(scope, "kv", schema, properties=keyed, partitioning="bucket(4, id), region")
    assert table["partitionSpec"]["specId"] == 1
    api.refused("PATCH", "/tables/kv", {"changes": [{"op": "setPartitioning", "partitioning": "region, v"}]},
                "v", "primary key")
    assert catalog.get_table(scope, "kv")["version"] == table["version"]


def test_bad_plan_requests_are_refused(api: Api, catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning=SPEC)
    plan = "/streams/events/chunks/plan"
    api.refused("POST", plan, {"filters": [{"op": "like", "column": "ts", "value": 1}]}, "op")
    api.refused("POST", plan, {"filters": [{"op": "eq", "column": "ts"}]}, "value")
    api.refused("POST", plan, {"filters": [{"op": "startswith", "column": "region", "value": 1}]}, "value")
    api.refused("POST", plan, {"cut": -1}, "cut")
    api.refused("POST", plan, {"cut": 5}, "5")
    assert api.call("POST", "/streams/nothing/chunks/plan", json={}).status_code == 404


# -- compaction ---------------------------------------------------------------------------------------------------


def _write(catalog: CatalogClient, registry: RegistryClient, scope: str, name: str,
           rows: list[dict[str, Any]]) -> list[Chunk]:
    """The rows written as columnar chunks, one per partition of the table's current spec."""
    from catalog_api.partitioning.transforms import split_by_partition

    described = catalog.get_table(scope, name)
    version = VersionInfo.model_validate(described["schemaVersion"]).to_domain()
    encoding = int(RegistryClient(registry.url, scope).encoding_id(name, version))
    location = described["stream"]["location"]
    spec = table_spec(described)
    arrow = pa.Table.from_pylist(rows, schema=pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")),
                                                         ("region", pa.string()), ("amount", pa.float64())]))
    out = []
    for values, part in split_by_partition(arrow, spec):
        path = f"data/{uuid.uuid4().hex}.parquet"
        written = write_columnar_chunk(location, path, part, encoding, described["schema"]).columnar(path)
        partition = None if spec.unpartitioned else {"specId": spec.spec_id, "values": values}
        out.append(replace(written, partition=partition))
    catalog.commit(scope, name, out)
    return out


def test_compaction_keeps_partitions(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    catalog.create_table(scope, "events", EVENTS, partitioning="region")
    rows = [{"id": i, "ts": None, "region": ("eu", "us", None)[i % 3], "amount": float(i)} for i in range(30)]
    _write(catalog, client, scope, "events", rows[:15])
    _write(catalog, client, scope, "events", rows[15:])
    before = catalog.list_partitions(scope, "events")["partitions"]
    assert [p["chunkCount"] for p in before] == [2, 2, 2]

    result = compact(catalog, client, scope, "events", rows_per_chunk=100)
    assert result.commit is not None
    after = catalog.list_partitions(scope, "events")["partitions"]
    assert [(p["values"], p["chunkCount"], p["eventCount"]) for p in after] == [
        ([None], 1, 10), (["eu"], 1, 10), (["us"], 1, 10)]
    # every output chunk holds the rows of its partition only
    described = catalog.get_table(scope, "events")
    spec, location = table_spec(described), described["stream"]["location"]
    fs, root = storage.resolve(location)
    _cut, chunks = catalog.snapshot(scope, "events")
    for c in chunks:
        assert c.partition is not None
        data = pq.read_table(f"{root}/{c.path}", filesystem=fs)
        assert set(partition_values(data, spec)[0].to_pylist()) == set(c.partition["values"])

    # after a spec change, compaction rewrites the table under the new spec
    catalog.set_partitioning(scope, "events", "bucket(2, id)")
    compact(catalog, client, scope, "events", rows_per_chunk=100)
    _cut, chunks = catalog.snapshot(scope, "events")
    assert {c.partition["specId"] for c in chunks if c.partition} == {2}
    assert sum(c.event_count for c in chunks) == 30
    assert sum(p["eventCount"] for p in catalog.list_partitions(scope, "events")["partitions"]) == 30
    assert compact(catalog, client, scope, "events").commit is None, "nothing left to compact"
