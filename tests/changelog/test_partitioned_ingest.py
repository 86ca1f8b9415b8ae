"""Debezium ingest into a partitioned primary-key table (docs/partitioning.md): every commit's changes are
cut into one change chunk per partition of the key, upserts and key deletes alike, each recording its
partition; the table reads back the merge of the changes, and scan planning skips chunks by key."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.partitioning.spec import Transform
from catalog_api.partitioning.transforms import apply
from catalog_api.server.cli_ingest import ingest_command
from catalog_api.streams.debezium import parallel as debezium_parallel
from catalog_api.streams.debezium.ingest import ingest
from registry.client import RegistryClient
from tests.changelog.helpers import event, line, make_table, read_table, registry_fixture, row  # noqa: F401
from tests.changelog.test_debezium_ingest import contents, expected, history, ours
from tests.changelog.test_debezium_parallel import mixed_history
from tests.streams.test_partitioned_writers import chunks_in_their_partitions, deleted_keys


def bucket(n: int, key: int) -> int:
    return int(apply(Transform.parse(f"bucket[{n}]"), key))


def test_ingest_writes_a_change_chunk_per_partition_and_reads_back_the_merge(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    catalog.set_partitioning(scope, table, "bucket(3, id)")
    events = history(60)
    result = ingest(catalog, registry, scope, table, [line(e) for e in events], writer_id="cdc", batch_size=25)
    assert (result.commits, result.applied) == (3, 60)
    commits = ours(catalog, scope, table, "cdc")
    assert [c["chunkCount"] for c in commits] == [3, 3, 3]  # keys 0..9 fall in all 3 buckets in each batch
    chunks = chunks_in_their_partitions(catalog, scope, table)
    assert all(c.partition is not None for c in chunks)
    assert deleted_keys(catalog, scope, table)  # key deletes went to chunks of their partition too
    assert contents(catalog, registry, scope, table) == expected(events)

    again = ingest(catalog, registry, scope, table, [line(e) for e in events], writer_id="cdc", batch_size=25)
    assert (again.commits, again.duplicates) == (0, 60)
    plan = catalog.plan_chunks(scope, table, [{"op": "eq", "column": "id", "value": 4}])
    assert plan.chunks_skipped == len(chunks) - len(plan.chunks) > 0
    assert {c.partition["values"][0] for c in plan.chunks if c.partition is not None} == {bucket(3, 4)}
    assert {c.partition["specId"] for c in chunks if c.partition is not None} == {
        catalog.get_table(scope, table)["partitionSpec"]["specId"]}


def test_a_key_change_deletes_the_old_key_in_its_own_partition(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    catalog.set_partitioning(scope, table, "truncate(10, id)")
    events = [event("c", None, row(k, qty=k), 1000 + k) for k in (1, 2, 25)]
    # keys 2 -> 31 (another partition) and 25 -> 26 (the same one), then 1 is deleted
    events += [event("u", row(2, qty=2), row(31, qty=31), 2000), event("u", row(25, qty=25), row(26, qty=26), 2010),
               event("d", row(1, qty=1), None, 2020)]
    result = ingest(catalog, registry, scope, table, [line(e) for e in events], batch_size=3)
    assert result.commits == 2
    chunks = chunks_in_their_partitions(catalog, scope, table)
    assert sorted(c.partition["values"][0] for c in chunks if c.partition is not None) == [0, 0, 20, 20, 30]
    assert deleted_keys(catalog, scope, table) == {1, 2, 25}
    assert contents(catalog, registry, scope, table) == [(26, 26, None), (31, 31, None)]
    plan = catalog.plan_chunks(scope, table, [{"op": "ge", "column": "id", "value": 30}])
    assert [c.partition for c in plan.chunks] == [{"specId": 1, "values": [30]}]


def test_the_command_ingests_into_a_partitioned_table(
        catalog: CatalogClient, registry: RegistryClient, scope: str, server_url: str, tmp_path: Path) -> None:
    table = make_table(catalog, scope)
    catalog.set_partitioning(scope, table, "bucket(4, id)")
    events = history(40)
    source = tmp_path / "changes.jsonl"
    source.write_bytes(b"\n".join(line(e) for e in events) + b"\n")
    done = CliRunner().invoke(ingest_command, ["--table", f"{scope}.{table}", "--format", "debezium-json",
                                               "--writer-id", "cli", "--batch-size", "16", "--uri", server_url,
                                               "--workers", "1", str(source)])
    assert done.exit_code == 0, done.output
    assert "3 commits (0 already committed), 40 lines, 40 events: 40 applied" in done.stdout
    chunks = chunks_in_their_partitions(catalog, scope, table)
    assert len({tuple(c.partition["values"]) for c in chunks if c.partition is not None}) == 4
    assert contents(catalog, registry, scope, table) == expected(events)


def test_parallel_decoding_into_a_partitioned_table_commits_what_one_process_commits_unpartitioned(
        catalog: CatalogClient, registry: RegistryClient, scope: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(debezium_parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(debezium_parallel, "BLOCK_BYTES", 5_000)
    lines = mixed_history(1000, seed=5)  # creates, updates, key changes, deletes, re-deliveries, tombstones
    plain, partitioned = make_table(catalog, scope), make_table(catalog, scope)
    catalog.set_partitioning(scope, partitioned, "bucket(5, id)")
    one = ingest(catalog, registry, scope, plain, lines, batch_size=150, workers=1)
    many = ingest(catalog, registry, scope, partitioned, lines, batch_size=150, workers=2)
    assert many.workers == 2
    assert (many.commits, many.applied, many.rows) == (one.commits, one.applied, one.rows)
    chunks = chunks_in_their_partitions(catalog, scope, partitioned)
    assert len(chunks) > many.commits
    assert read_table(catalog, registry, scope, partitioned) == read_table(catalog, registry, scope, plain)


def test_an_unpartitioned_table_still_gets_one_chunk_per_commit(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    events = history(30)
    ingest(catalog, registry, scope, table, [line(e) for e in events], writer_id="plain", batch_size=10)
    assert [c["chunkCount"] for c in ours(catalog, scope, table, "plain")] == [1, 1, 1]
    assert [c.partition for c in catalog.snapshot(scope, table)[1]] == [None, None, None]
    assert contents(catalog, registry, scope, table) == expected(events)
