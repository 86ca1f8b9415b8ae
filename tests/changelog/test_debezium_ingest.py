"""Ingest into a primary-key table through the server: exactly once across re-runs, failed batches invisible,
the Python API and ``streamcat ingest``; and the stream writer's upserts and deletes by key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.server.cli_ingest import ingest_command
from catalog_api.streams import StreamWriter
from catalog_api.streams.debezium.decoder import DebeziumError, SourceMark
from catalog_api.streams.debezium.ingest import POSITION_PROPERTY, ingest
from registry.client import RegistryClient
from tests.changelog.helpers import event, line, make_table, read_table, registry_fixture, row  # noqa: F401
from tests.streams.helpers import LosingAnswers


def history(n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` changes: keys 0..9 created, updated, deleted and created again, at LSNs 1000 + 10 i."""
    out = []
    live: dict[int, dict[str, Any]] = {}
    for i in range(start, start + n):
        key = i % 10
        lsn = 1000 + 10 * i
        if key not in live:
            live[key] = row(key, qty=i)
            out.append(event("c", None, live[key], lsn))
        elif i % 3:
            old, live[key] = live[key], row(key, qty=i, name=f"v{i}")
            out.append(event("u", old, live[key], lsn))
        else:
            out.append(event("d", live.pop(key), None, lsn))
    return out


def expected(events: list[dict[str, Any]]) -> list[tuple[int, int, str | None]]:
    """(id, qty, name) of the live rows after ``events``, the oracle of the reads."""
    state: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["op"] == "d":
            state.pop(e["before"]["id"], None)
        else:
            state[e["after"]["id"]] = e["after"]
    return sorted((r["id"], r["qty"], r["name"]) for r in state.values())


def contents(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str) -> list[tuple[Any, ...]]:
    return [(r["id"], r["qty"], r["name"]) for r in read_table(catalog, registry, scope, table)]


def ours(catalog: CatalogClient, scope: str, table: str, writer: str) -> list[dict[str, Any]]:
    return [c for c in catalog.commits(scope, table) if c["writerId"] == writer]


def test_a_rerun_commits_nothing_twice_and_an_overlapping_file_only_what_is_new(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    events = history(60)
    first = ingest(catalog, registry, scope, table, [line(e) for e in events[:40]], writer_id="cdc", batch_size=7)
    assert (first.commits, first.applied) == (6, 40)
    assert contents(catalog, registry, scope, table) == expected(events[:40])
    assert [int(c["writerSequence"]) for c in ours(catalog, scope, table, "cdc")] == [1, 2, 3, 4, 5, 6]

    again = ingest(catalog, registry, scope, table, [line(e) for e in events[:40]], writer_id="cdc", batch_size=7)
    assert (again.commits, again.applied, again.duplicates) == (0, 0, 40)
    # a restarted connector's next file starts before where the last one ended
    rest = ingest(catalog, registry, scope, table, [line(e) for e in events[30:]], writer_id="cdc", batch_size=7)
    assert (rest.commits, rest.applied, rest.duplicates) == (3, 20, 10)
    assert contents(catalog, registry, scope, table) == expected(events)
    commits = ours(catalog, scope, table, "cdc")
    assert [int(c["writerSequence"]) for c in commits] == list(range(1, 10))
    assert SourceMark.from_property(commits[-1]["properties"][POSITION_PROPERTY]).position == (1589, 1590)
    # another writer id knows nothing of these: it applies everything again (idempotent on the state);
    # the Python API takes parsed events (dicts, None for a tombstone) as well as lines
    other = ingest(catalog, registry, scope, table, [*events[:30], None, *events[30:]], batch_size=100)
    assert other.applied == 60
    assert contents(catalog, registry, scope, table) == expected(events)


def test_a_bad_line_leaves_nothing_of_its_batch_and_a_fixed_rerun_resumes(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    events = history(30)
    lines = [line(e) for e in events]
    lines.insert(17, b'{"op": "c", "after": ')  # line 18: the third batch of 7
    with pytest.raises(DebeziumError, match="line 18: not JSON") as caught:
        ingest(catalog, registry, scope, table, lines, writer_id="w", batch_size=7)
    assert caught.value.line == 18
    assert contents(catalog, registry, scope, table) == expected(events[:14])
    assert len(ours(catalog, scope, table, "w")) == 2
    fixed = ingest(catalog, registry, scope, table, [line(e) for e in events], writer_id="w", batch_size=7)
    assert (fixed.applied, fixed.duplicates) == (16, 14)
    assert contents(catalog, registry, scope, table) == expected(events)


def test_a_lost_commit_answer_is_resent_as_the_same_sequence(
        catalog: CatalogClient, registry: RegistryClient, scope: str, server_url: str) -> None:
    table = make_table(catalog, scope)
    events = history(20)
    losing = CatalogClient(server_url, session=LosingAnswers(lose=1))
    result = ingest(losing, registry, scope, table, [line(e) for e in events], writer_id="flaky", batch_size=10)
    assert result.commits == 2
    assert result.repeated == 0  # the first commit's answer was lost; the catalog, asked, holds it: its own
    assert [int(c["writerSequence"]) for c in ours(catalog, scope, table, "flaky")] == [1, 2]
    assert contents(catalog, registry, scope, table) == expected(events)


def test_ingest_refuses_an_append_table(catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    from tests.changelog.helpers import SCHEMA

    catalog.create_table(scope, "plain", SCHEMA)
    with pytest.raises(DebeziumError, match="not a primary-key table"):
        ingest(catalog, registry, scope, "plain", [line(e) for e in history(3)])


def test_the_command_ingests_a_file_and_names_a_bad_line(
        catalog: CatalogClient, registry: RegistryClient, scope: str, server_url: str, tmp_path: Path) -> None:
    table = make_table(catalog, scope)
    events = history(25)
    source = tmp_path / "changes.jsonl"
    source.write_bytes(b"\n".join([line(e) for e in events[:20]] + [b"null", line(events[20])]) + b"\n")
    arguments = ["--table", f"{scope}.{table}", "--format", "debezium-json", "--writer-id", "cli",
                 "--batch-size", "8", "--uri", server_url]
    done = CliRunner().invoke(ingest_command, [*arguments, str(source)])
    assert done.exit_code == 0, done.output
    assert "3 commits (0 already committed), 22 lines, 21 events: 21 applied" in done.stdout
    assert contents(catalog, registry, scope, table) == expected(events[:21])

    rest = b"\n".join(line(e) for e in events[21:])
    done = CliRunner().invoke(ingest_command, [*arguments, "-"], input=rest + b"\n")
    assert done.exit_code == 0, done.output
    assert contents(catalog, registry, scope, table) == expected(events)
    bad = line(event("u", None, row(3, qty=1), 99_999))
    done = CliRunner().invoke(ingest_command, [*arguments, "-"], input=bad + b"\n")
    assert done.exit_code == 1
    assert "-: line 1: an update without `before`" in done.output
    assert "REPLICA IDENTITY FULL" in done.output
    assert "nothing was committed" in done.output
    done = CliRunner().invoke(ingest_command, [*arguments[:-2], "--uri", server_url, "--table", "nodot", "-"])
    assert done.exit_code == 2


# -- the stream writer on a primary-key table ------------------------------------------------------------

def test_the_writer_upserts_and_deletes_by_key_premerged_per_commit(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    writer = StreamWriter(catalog, registry, scope, table, writer_id="app")
    for i in range(100):
        writer.upsert(row(i % 10, qty=i))
    writer.delete(3)
    writer.delete({"id": 4, "qty": 1})
    writer.delete((5,))
    writer.write(row(5, qty=-5))  # write() upserts on a primary-key table
    commit = writer.flush()
    assert commit is not None
    assert commit["eventCount"] == 10  # one change per key
    assert [(r["id"], r["qty"]) for r in read_table(catalog, registry, scope, table)] == [
        (k, 90 + k) for k in (0, 1, 2)] + [(5, -5)] + [(k, 90 + k) for k in (6, 7, 8, 9)]

    writer.write_changes(pa.table({"id": [1, 2, 1], "qty": [1, 2, 3]}), ops=[0, 0, 1])
    writer.write_table(pa.table({"id": pa.array([7], pa.int64()), "name": ["seven"]}))
    writer.flush()
    assert [(r["id"], r["qty"], r["name"]) for r in read_table(catalog, registry, scope, table)] == [
        (0, 90, None), (2, 2, None), (5, -5, None), (6, 96, None), (7, None, "seven"), (8, 98, None), (9, 99, None)]
    assert [int(c["writerSequence"]) for c in ours(catalog, scope, table, "app")] == [1, 2]
    writer.close()


def test_the_writer_refuses_what_a_keyed_table_cannot_take(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    writer = StreamWriter(catalog, registry, scope, table)
    with pytest.raises(ValueError, match="key column 'id'"):
        writer.upsert({"qty": 1})
    with pytest.raises(TypeError, match="dicts"):
        writer.write(b"\x01\x00\x00\x00\x01raw")
    with pytest.raises(ValueError, match="lack key column 'id'"):
        writer.write_changes(pa.table({"qty": [1]}))
    with pytest.raises(ValueError, match="row kinds"):
        writer.write_changes(pa.table({"id": [1]}), ops=[2])
    from tests.changelog.helpers import SCHEMA

    catalog.create_table(scope, "plain", SCHEMA)
    plain = StreamWriter(catalog, registry, scope, "plain")
    with pytest.raises(TypeError, match="upsert is for primary-key tables"):
        plain.upsert(row(1))
    with pytest.raises(TypeError, match="delete is for primary-key tables"):
        plain.delete(1)


def test_a_transaction_of_changes_is_one_commit_or_nothing(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    writer = StreamWriter(catalog, registry, scope, table, max_chunk_events=5)
    with writer.transaction():
        for i in range(12):
            writer.upsert(row(i))
    assert len(catalog.commits(scope, table)) == 1
    def aborted() -> None:
        with writer.transaction():
            writer.delete(1)
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        aborted()
    assert len(read_table(catalog, registry, scope, table)) == 12


def test_premerge_keeps_one_change_per_key_as_each_merge_engine_wants() -> None:
    from catalog_api.streams.merge import TableLayout, premerge

    table = pa.table({"id": [1, 2, 1, 2, 2, 3], "a": [1, None, None, 5, None, 7],
                      "b": ["x", "y", "z", None, "w", None]})
    ops = pa.array([0, 0, 0, 1, 0, 1], pa.int8())
    merged, kinds = premerge(table, ops, TableLayout(("id",)))
    assert sorted(zip(kinds.to_pylist() if kinds else [0] * 3, merged.to_pylist(), strict=True),
                  key=lambda p: p[1]["id"]) == [
        (0, {"id": 1, "a": None, "b": "z"}), (0, {"id": 2, "a": None, "b": "w"}), (1, {"id": 3, "a": 7, "b": None})]
    merged, kinds = premerge(table, ops, TableLayout(("id",), merge_engine="partial-update"))
    assert kinds is not None
    assert list(zip(kinds.to_pylist(), merged.to_pylist(), strict=True)) == [
        (0, {"id": 1, "a": 1, "b": "z"}), (1, {"id": 2, "a": 5, "b": None}), (0, {"id": 2, "a": None, "b": "w"}),
        (1, {"id": 3, "a": 7, "b": None})]
    merged, kinds = premerge(table, ops, TableLayout(("id",), sequence_field="a"))
    assert merged.num_rows == 6
    merged, kinds = premerge(table.slice(0, 3), ops.slice(0, 3), TableLayout(("id",)))
    assert kinds is None  # only upserts: a plain columnar chunk
