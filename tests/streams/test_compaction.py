"""Local compaction: every cut reads the same before and after, feeds skip it, racing appends survive."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from click.testing import CliRunner

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.errors import CommitConflict
from catalog_api.server.cli_tables import tables
from catalog_api.streams import StreamWriter
from catalog_api.streams.compaction import compact
from catalog_api.streams.conflicts import COMPACTION, Intent, Table, commit_checked
from catalog_api.streams.reader import StreamReader
from tests.streams.test_conflicts_support import (
    DELETE,
    INSERT,
    UPDATE,
    TableHandle,
    by_id,
    make_table,
    sort_rows,
)


def rows(ids: range | list[int], name: str = "a") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{name}{i}", "amount": float(i)} for i in ids]


def history_of_a_keyed_table(t: TableHandle) -> None:
    """Inserts, upserts of old keys, event chunks, key deletes and a key-changing update."""
    t.insert(rows(range(30)), rows(range(30, 50)))
    t.insert(rows(range(20, 40), name="b"))
    t.events([{"id": i, "name": f"e{i}", "amount": None} for i in range(45, 60)])
    cut = t.last()
    t.row_level(cut, [{"_op": DELETE, "_id_id": i} for i in range(10)],
                [{"_op": UPDATE, "_id_id": 12, "id": 112, "name": "moved", "amount": 12.0}])
    t.insert(rows(range(5, 8), name="c"))


def every_cut(t: TableHandle, last: int) -> dict[int, list[dict[str, Any]]]:
    return {cut: t.state(cut) for cut in range(1, last + 1)}


def feed(t: TableHandle, after: int, to: int) -> list[tuple[int, str, list[str]]]:
    return [(c["number"], c["kind"], sorted(ch["path"] for ch in c["chunks"]))
            for c in t.catalog.changes(t.scope, t.name, after, to)]


@pytest.fixture(name="keyed")
def keyed_fixture(server_url: str, catalog: CatalogClient, scope: str) -> TableHandle:
    return make_table(server_url, catalog, scope, key=("id",))


@pytest.fixture(name="append_table")
def append_table_fixture(server_url: str, catalog: CatalogClient, scope: str) -> TableHandle:
    return make_table(server_url, catalog, scope)


def test_compacting_a_keyed_table_changes_no_read_at_any_cut(keyed: TableHandle) -> None:
    t = keyed
    history_of_a_keyed_table(t)
    last = t.last()
    before = every_cut(t, last)
    feed_before = feed(t, 0, last)

    result = compact(t.catalog, t.registry, t.scope, t.name, rows_per_chunk=7)

    assert result.commit == last + 1
    assert result.base_cut == last
    assert result.rows == len(before[last])
    assert every_cut(t, last) == before
    assert t.state() == before[last]
    # the output: ceil(rows / 7) columnar chunks sorted by key, nothing else visible
    _cut, chunks = t.snapshot()
    assert len(chunks) == result.chunks_written == -(-result.rows // 7)
    assert {c.commit for c in chunks} == {result.commit}
    assert {c.sequence for c in chunks} == {last}
    reader = StreamReader(t.catalog, t.registry, t.scope, t.name)
    ids = [r["id"] for c in chunks for r in reader.read_chunk(c)]
    assert ids == sorted(ids)
    # change feeds and streaming reads skip the compaction
    assert feed(t, 0, result.commit) == feed_before
    assert feed(t, last, result.commit) == []
    position, records = reader.poll(last)
    assert records == []
    assert position == result.commit


def test_compacting_an_append_table_applies_deletes_and_keeps_row_order(append_table: TableHandle) -> None:
    t = append_table
    t.insert(rows(range(10)), rows(range(10, 20)))
    t.events([{"id": i, "name": f"e{i}", "amount": None} for i in range(20, 25)])
    cut = t.last()
    scanned = t.rows_with_ids()
    t.row_level(cut, [{"_op": DELETE, "_id__chunk": r["_chunk"], "_id__pos": r["_pos"]}
                      for r in scanned if r["id"] % 4 == 0])
    t.insert(rows([3, 3]))  # duplicates stay: an append table has no key
    last = t.last()
    before = every_cut(t, last)
    in_order = [r["id"] for r in t.rows_with_ids() if not r["_deleted"]]

    result = compact(t.catalog, t.registry, t.scope, t.name, rows_per_chunk=6)

    assert result.commit == last + 1
    assert every_cut(t, last) == before
    assert t.state() == before[last]
    assert [r["id"] for r in t.rows_with_ids()] == in_order  # row order kept, no deletes chunk left
    assert all(c.kind == "columnar" for c in t.snapshot()[1])


def test_nothing_to_compact_commits_nothing(keyed: TableHandle) -> None:
    t = keyed
    empty = compact(t.catalog, t.registry, t.scope, t.name)
    assert empty.commit is None
    t.insert(rows(range(10)), rows(range(5, 15)))
    first = compact(t.catalog, t.registry, t.scope, t.name)
    assert first.commit == t.last()
    again = compact(t.catalog, t.registry, t.scope, t.name)
    assert again.commit is None
    assert t.last() == first.commit
    t.insert(rows([3], name="z"))
    assert compact(t.catalog, t.registry, t.scope, t.name).commit == t.last()
    assert by_id(t.state())[3]["name"] == "z3"


def test_appends_racing_a_compaction_survive(keyed: TableHandle) -> None:
    """A writer keeps appending (new keys and upserts of compacted keys) while compactions run; every
    compaction commits, and the table ends as the writes say."""
    t = keyed
    base_rows = 60_000
    t.insert(*(rows(range(i, i + 10_000)) for i in range(0, base_rows, 10_000)))
    t.insert(rows(range(0, base_rows, 7), name="b"))
    expected = by_id(rows(range(base_rows)))
    expected.update(by_id(rows(range(0, base_rows, 7), name="b")))
    stop = threading.Event()
    errors: list[BaseException] = []
    appended: list[dict[str, Any]] = []

    def append() -> None:
        try:
            registry = t.registry
            writer = StreamWriter(t.catalog, registry, t.scope, t.name,
                                  schema=registry.latest_schemas(t.name)[0].schema)
            n = 0
            while not stop.is_set():
                batch = [{"id": (n * 13) % base_rows, "name": f"r{n}", "amount": None},
                         {"id": base_rows + n, "name": f"new{n}", "amount": 1.0}]
                for record in batch:
                    writer.write(record)
                writer.flush()
                appended.extend(batch)
                n += 1
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=append)
    thread.start()
    results = []
    try:
        while len(appended) < 4:
            time.sleep(0.01)
        for _ in range(2):
            results.append(compact(t.catalog, t.registry, t.scope, t.name, rows_per_chunk=25_000))
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors
    assert all(r.commit is not None for r in results)
    # the appender committed between each compaction's base cut and its commit
    assert any(r.commit is not None and r.commit > r.base_cut + 1 for r in results)
    for record in appended:
        expected[record["id"]] = record
    assert t.state() == sort_rows(list(expected.values()))


def test_a_compaction_conflicts_with_an_overwrite_after_its_base(keyed: TableHandle) -> None:
    t = keyed
    base = t.insert(rows(range(5)))
    _cut, visible = t.snapshot()
    overwrite = t.overwrite(rows(range(100, 102)))
    table = Table.of(t.catalog, t.scope, t.name, t.registry)
    with pytest.raises(CommitConflict, match=f"commit {overwrite} "):
        commit_checked(table, [], Intent(COMPACTION, base, removes=tuple(c.path for c in visible)))
    assert t.state() == sort_rows(rows(range(100, 102)))


def test_a_compaction_of_an_append_table_conflicts_with_its_row_level_commits(append_table: TableHandle) -> None:
    t = append_table
    base = t.insert(rows(range(5)))
    _cut, visible = t.snapshot()
    row = t.rows_with_ids()[0]
    # a MERGE that only inserts adds rows as an append does: no conflict
    t.row_level(base, [{"_op": INSERT, "id": 9, "name": "nine", "amount": None}])
    table = Table.of(t.catalog, t.scope, t.name, t.registry)
    table.check(t.catalog.changes(t.scope, t.name, base, t.last()), Intent(COMPACTION, base))
    t.row_level(base, [{"_op": DELETE, "_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}])
    deleting = t.last()
    with pytest.raises(CommitConflict, match=f"commit {deleting} "):
        commit_checked(table, [], Intent(COMPACTION, base, removes=tuple(c.path for c in visible)))


def test_a_statement_whose_chunk_a_compaction_rewrote_conflicts(append_table: TableHandle) -> None:
    t = append_table
    cut = t.insert(rows(range(5)), rows(range(5, 10)))
    row = t.rows_with_ids()[0]
    result = compact(t.catalog, t.registry, t.scope, t.name)
    with pytest.raises(CommitConflict, match=f"commit {result.commit} .*retried"):
        t.row_level(cut, [{"_op": DELETE, "_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}])
    assert t.state() == sort_rows(rows(range(10)))


def test_a_keyed_statement_that_read_before_a_compaction_still_commits(keyed: TableHandle) -> None:
    t = keyed
    cut = t.insert(rows(range(5)), rows(range(3, 8), name="b"))
    compact(t.catalog, t.registry, t.scope, t.name)
    t.row_level(cut, [{"_op": UPDATE, "_id_id": 4, "id": 4, "name": "after", "amount": None},
                      {"_op": INSERT, "id": 9, "name": "nine", "amount": None}])
    state = by_id(t.state())
    assert state[4]["name"] == "after"
    assert sorted(state) == [0, 1, 2, 3, 4, 5, 6, 7, 9]


class OverwrittenMidway(CatalogClient):
    """A client on which another client overwrites the table right after this one's first snapshot:
    a compaction through it reads the table, then loses to the overwrite."""

    def __init__(self, table: TableHandle) -> None:
        super().__init__(table.url)
        self.table = table
        self.snapshots = 0

    def snapshot(self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None,
                 after: int | None = None) -> Any:
        self.snapshots += 1
        if self.snapshots == 2:
            self.table.overwrite(rows([42]))
        return super().snapshot(scope, stream, cut=cut, as_of_time=as_of_time, after=after)


def test_a_compaction_that_loses_to_an_overwrite_leaves_no_files(keyed: TableHandle) -> None:
    t = keyed
    t.insert(rows(range(5)), rows(range(2, 4)))
    before = {f.path for f in storage.list_files(t.location)}
    with pytest.raises(CommitConflict, match="retried"):
        compact(OverwrittenMidway(t), t.registry, t.scope, t.name)
    overwritten = {c.path for c in t.snapshot()[1]}
    assert {f.path for f in storage.list_files(t.location)} == before | overwritten
    assert t.state() == sort_rows(rows([42]))


def test_the_cli_compacts(keyed: TableHandle) -> None:
    t = keyed
    t.insert(rows(range(20)), rows(range(10, 30)))
    runner = CliRunner()
    result = runner.invoke(tables, ["compact", f"{t.scope}.{t.name}", "--uri", t.url, "--rows-per-chunk", "8"])
    assert result.exit_code == 0, result.output
    assert f"commit {t.last()}" in result.output
    assert "30 rows" in result.output
    assert len(t.snapshot()[1]) == 4
    again = runner.invoke(tables, ["compact", f"{t.scope}.{t.name}", "--uri", t.url])
    assert again.exit_code == 0
    assert "nothing to compact" in again.output
    bad = runner.invoke(tables, ["compact", "no-dot", "--uri", t.url])
    assert bad.exit_code != 0
    assert "SCOPE.TABLE" in bad.output


def test_a_compaction_written_by_spark_replaces_every_chunk_of_its_base(keyed: TableHandle) -> None:
    """What the ``compact`` procedure does: Spark writes the merged rows at m, sorted by key, with
    ``streamcat.compact.base`` = m; appends made meanwhile stay."""
    from pyspark_streamcat import DefaultSource
    from pyspark_streamcat.writer import CompactionWriter

    t = keyed
    t.insert(rows(range(10)), rows(range(5, 15), name="b"))
    base = t.insert(rows([3], name="c"))
    merged = t.state(base)
    t.insert(rows([4, 20], name="d"))  # after the base: kept, and it sorts after the compacted rows
    source = DefaultSource({"uri": t.url, "scope": t.scope, "table": t.name, "streamcat.compact.base": str(base)})
    writer = source.writer(t.schema, False)
    assert isinstance(writer, CompactionWriter)
    writer.commit([writer.write(iter([t.batch(merged[:8])])), writer.write(iter([t.batch(merged[8:])]))])

    last = t.catalog.commits(t.scope, t.name)[-1]
    assert last["kind"] == "compaction"
    assert last["baseCut"] == base
    expected = by_id(merged)
    expected.update(by_id(rows([4, 20], name="d")))
    assert t.state() == sort_rows(list(expected.values()))
    assert t.state(base) == merged
    _cut, chunks = t.snapshot()
    assert [c.sequence for c in chunks] == [base, base, base + 1]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("keyed", [True, False], ids=["primary-key", "append"])
def test_random_histories_agree_with_a_model_at_every_cut(
        server_url: str, catalog: CatalogClient, scope: str, keyed: bool, seed: int) -> None:
    """Random INSERTs, producer events, DELETE/UPDATE/MERGE statements (key changes included, split
    over tasks) and compactions; after each, and at every cut in the end, the table is what a plain
    Python model of the statements says."""
    import random

    rng = random.Random(seed)
    t = make_table(server_url, catalog, scope, key=("id",) if keyed else ())
    model: list[dict[str, Any]] = []  # the live rows
    at: dict[int, list[dict[str, Any]]] = {}
    fresh = iter(range(1000, 100_000))

    def new_row(key: int | None = None) -> dict[str, Any]:
        return {"id": next(fresh) if key is None else key, "name": rng.choice(["x", "y", None]),
                "amount": rng.choice([None, round(rng.random(), 3)])}

    def upsert(rows_in: list[dict[str, Any]]) -> None:
        nonlocal model
        if keyed:
            merged = by_id(model)
            merged.update(by_id(rows_in))
            model = list(merged.values())
        else:
            model = model + rows_in

    for step in range(14):
        action = rng.choice(["insert", "insert", "events", "statement", "statement", "statement", "compact"])
        if step == 0:
            action = "insert"
        if action == "insert":
            reused = [new_row(r["id"]) for r in rng.sample(model, min(len(model), 3))] if keyed else []
            added = [new_row() for _ in range(rng.randint(1, 12))] + reused
            t.insert(added[: len(added) // 2], added[len(added) // 2:])
            upsert(added)
        elif action == "events":
            added = [new_row() for _ in range(rng.randint(1, 5))]
            if keyed and model:
                added.append(new_row(rng.choice(model)["id"]))
            t.events(added)
            upsert(added)
        elif action == "statement":
            cut = t.last()
            live = t.rows_with_ids() if not keyed else [dict(r) for r in model]
            if not keyed:
                live = [r for r in live if not r["_deleted"]]
            chosen = rng.sample(live, min(len(live), rng.randint(0, 6)))
            changes, kept_out, added = [], [], []
            freed = []
            for row in chosen:
                ids = {"_id_id": row["id"]} if keyed else {"_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}
                kept_out.append(row)
                if rng.random() < 0.5:
                    changes.append({"_op": DELETE, **ids})
                    freed.append(row["id"])
                else:
                    moved = rng.random() < 0.4
                    new = new_row(None if moved else row["id"])
                    changes.append({"_op": UPDATE, **ids, **new})
                    added.append(new)
                    if moved:
                        freed.append(row["id"])
            for _ in range(rng.randint(0, 2)):
                new = new_row()
                changes.append({"_op": INSERT, **new})
                added.append(new)
            if keyed and freed and rng.random() < 0.5:  # a key freed by this statement taken by another row
                target = next((c for c in changes if c["_op"] == UPDATE and c["id"] != c["_id_id"]), None)
                if target is not None and target["_id_id"] != freed[0]:
                    added.remove({k: target[k] for k in ("id", "name", "amount")})
                    target["id"] = freed[0]
                    added.append({k: target[k] for k in ("id", "name", "amount")})
            rng.shuffle(changes)
            split = rng.randint(0, len(changes))
            t.row_level(cut, changes[:split], changes[split:])
            if keyed:
                gone = {r["id"] for r in kept_out}
                model = [r for r in model if r["id"] not in gone] + added
            else:
                out = {(r["_chunk"], r["_pos"]) for r in kept_out}
                remaining = [r for r in t.rows_with_ids(cut)
                             if not r["_deleted"] and (r["_chunk"], r["_pos"]) not in out]
                model = [{k: r[k] for k in ("id", "name", "amount")} for r in remaining] + added
        else:
            compact(t.catalog, t.registry, t.scope, t.name, rows_per_chunk=rng.randint(3, 20))
        assert t.state() == sort_rows(model), (step, action)
        at[t.last()] = sort_rows(model)

    last = t.last()
    expected = None
    for cut in range(1, last + 1):
        expected = at.get(cut, expected)  # a statement that changed nothing made no commit
        if expected is not None:
            assert t.state(cut) == expected, cut


def test_a_compaction_whose_answer_is_lost_is_found_by_its_writer_id(keyed: TableHandle) -> None:
    """The commit request reaches the server, the answer never comes back: the compaction finds its own
    commit instead of deleting files the table now reads, or committing twice."""
    from tests.streams.helpers import LosingAnswers

    t = keyed
    t.insert(rows(range(10)), rows(range(5, 15), name="b"))
    before = t.state()
    losing = LosingAnswers(1)
    result = compact(CatalogClient(t.url, session=losing), t.registry, t.scope, t.name)
    assert losing.sent == 1
    assert result.commit == t.last()
    assert [c["kind"] for c in t.catalog.commits(t.scope, t.name)].count("compaction") == 1
    assert t.state() == before
    on_disk = {f.path for f in storage.list_files(t.location)}
    assert {c.path for c in t.snapshot()[1]} <= on_disk
