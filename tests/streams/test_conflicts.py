"""Row-level writes (DELETE/UPDATE/MERGE as Spark hands them to the Python writer) and their conflicts.

The writer classes are driven directly with Arrow batches of the change schema, against a real
server; what a table holds afterwards is compared with a plain-Python model of the statement.
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.errors import CommitConflict
from catalog_api.streams.conflicts import ROW_LEVEL, Intent, Table, commit_checked, common_keys
from catalog_api.streams.row_kinds import DELETES_KIND, read_position_deletes
from tests.streams.test_conflicts_support import (
    DELETE,
    INSERT,
    REINSERT,
    UPDATE,
    TableHandle,
    by_id,
    make_table,
    sort_rows,
)


@pytest.fixture(name="append_table")
def append_table_fixture(server_url: str, catalog: CatalogClient, scope: str) -> TableHandle:
    """An append table."""
    return make_table(server_url, catalog, scope)


@pytest.fixture(name="keyed")
def keyed_fixture(server_url: str, catalog: CatalogClient, scope: str) -> TableHandle:
    """A primary-key table (key ``id``)."""
    return make_table(server_url, catalog, scope, key=("id",))


def rows(ids: range | list[int], name: str = "a") -> list[dict[str, Any]]:
    return [{"id": i, "name": f"{name}{i}", "amount": float(i)} for i in ids]


def commits(table: TableHandle) -> list[dict[str, Any]]:
    return table.catalog.commits(table.scope, table.name)


# -- append tables -----------------------------------------------------------------------------------

def test_delete_and_update_on_an_append_table_write_position_deletes_and_new_rows(append_table: TableHandle) -> None:
    t = append_table
    cut = t.insert(rows(range(6)), rows(range(6, 12)))
    scanned = t.rows_with_ids()
    # DELETE WHERE id % 3 = 0; UPDATE SET name = 'u' || id WHERE id % 3 = 1 (in one MERGE), over two tasks
    changes = []
    for row in scanned:
        ids = {"_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}
        if row["id"] % 3 == 0:
            changes.append({"_op": DELETE, **ids})
        elif row["id"] % 3 == 1:
            changes.append({"_op": UPDATE, **ids, "id": row["id"], "name": f"u{row['id']}", "amount": row["amount"]})
    changes.append({"_op": INSERT, "id": 100, "name": "new", "amount": None})
    t.row_level(cut, changes[:5], changes[5:], operation="merge")

    expected = [r for r in rows(range(12)) if r["id"] % 3 != 0]
    for r in expected:
        if r["id"] % 3 == 1:
            r["name"] = f"u{r['id']}"
    expected.append({"id": 100, "name": "new", "amount": None})
    assert t.state() == sort_rows(expected)
    assert t.state(cut) == sort_rows(rows(range(12)))  # the statement's cut still reads as it was

    last = commits(t)[-1]
    assert last["kind"] == "row-level"
    assert last["readCut"] == cut
    _cut, chunks = t.snapshot()
    deletes = [c for c in chunks if c.kind == DELETES_KIND]
    assert len(deletes) == 2  # one per task
    named = read_position_deletes(t.location, [c.path for c in deletes])
    assert sum(len(p) for p in named.values()) == 8  # 4 deleted + 4 updated rows


def test_a_statement_that_changes_nothing_commits_nothing(append_table: TableHandle) -> None:
    cut = append_table.insert(rows(range(3)))
    append_table.row_level(cut, [], [], operation="delete")
    assert append_table.last() == cut


def test_deletes_from_the_same_chunk_conflict_and_a_retry_succeeds(append_table: TableHandle) -> None:
    t = append_table
    cut = t.insert(rows(range(5)), rows(range(5, 10)))
    scanned = t.rows_with_ids()
    first_chunk = scanned[0]["_chunk"]
    of_first = [r for r in scanned if r["_chunk"] == first_chunk]
    of_second = [r for r in scanned if r["_chunk"] != first_chunk]

    def delete(row: dict[str, Any]) -> dict[str, Any]:
        return {"_op": DELETE, "_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}

    t.row_level(cut, [delete(of_first[0])], operation="delete")
    winner = t.last()
    # Another statement that read the same cut and deletes from the other chunk: no conflict.
    t.row_level(cut, [delete(of_second[0])], operation="delete")
    # One that read the same cut and deletes another row of the first chunk: conflict.
    with pytest.raises(CommitConflict) as caught:
        t.row_level(cut, [delete(of_first[1])], operation="delete")
    message = str(caught.value)
    assert f"{t.scope}.{t.name}" in message
    assert f"commit {winner}" in message
    assert "retried" in message
    files = {c.path for c in t.snapshot()[1]}
    # The retry reads again and succeeds.
    retry_cut = t.last()
    again = [r for r in t.rows_with_ids() if r["id"] == of_first[1]["id"] and not r["_deleted"]]
    t.row_level(retry_cut, [delete(again[0])], operation="delete")
    gone = {of_first[0]["id"], of_second[0]["id"], of_first[1]["id"]}
    assert t.state() == sort_rows([r for r in rows(range(10)) if r["id"] not in gone])
    assert files <= {c.path for c in t.snapshot()[1]}


def test_an_overwrite_since_the_read_cut_conflicts(append_table: TableHandle) -> None:
    t = append_table
    cut = t.insert(rows(range(3)))
    row = t.rows_with_ids()[0]
    overwrite = t.overwrite(rows(range(10, 12)))
    with pytest.raises(CommitConflict, match=f"commit {overwrite}"):
        t.row_level(cut, [{"_op": DELETE, "_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}])
    assert t.state() == sort_rows(rows(range(10, 12)))


def test_appends_since_the_read_cut_do_not_conflict(append_table: TableHandle) -> None:
    t = append_table
    cut = t.insert(rows(range(3)))
    row = t.rows_with_ids()[0]
    t.insert(rows(range(3, 5)))
    t.row_level(cut, [{"_op": DELETE, "_id__chunk": row["_chunk"], "_id__pos": row["_pos"]}])
    assert t.state() == sort_rows(rows(range(1, 5)))


def test_abort_deletes_the_files_of_every_task(append_table: TableHandle) -> None:
    t = append_table
    cut = t.insert(rows(range(3)))
    row = t.rows_with_ids()[0]
    before = {c.path for c in t.snapshot()[1]}
    writer = t.row_level_writer(cut)
    messages = [writer.write(iter([t.changes_batch([
        {"_op": UPDATE, "_id__chunk": row["_chunk"], "_id__pos": row["_pos"], "id": 0, "name": "x", "amount": 1.0}])]))]
    written = [c.path for m in messages for c in (*m.data, *m.deletes)]
    assert len(written) == 2
    from catalog_api import storage

    on_disk = {f.path for f in storage.list_files(t.location)}
    assert set(written) <= on_disk
    writer.abort(list(messages))
    assert not set(written) & {f.path for f in storage.list_files(t.location)}
    assert {c.path for c in t.snapshot()[1]} == before


# -- primary-key tables --------------------------------------------------------------------------------

def test_update_merge_delete_on_a_keyed_table(keyed: TableHandle) -> None:
    t = keyed
    cut = t.insert(rows(range(1, 8)))
    # UPDATE SET id = id + 1 WHERE id IN (1, 2): task one moves 1 -> 2, task two moves 2 -> 3; 3 is deleted
    # by the same statement (a MERGE), 10 inserted, 5 gets a new name, 7 re-inserted after its delete.
    task_one: list[dict[str, Any]] = [{"_op": UPDATE, "_id_id": 1, "id": 2, "name": "was1", "amount": 1.0},
                {"_op": DELETE, "_id_id": 7},
                {"_op": REINSERT, "id": 7, "name": "again7", "amount": None}]
    task_two: list[dict[str, Any]] = [{"_op": UPDATE, "_id_id": 2, "id": 3, "name": "was2", "amount": 2.0},
                {"_op": UPDATE, "_id_id": 5, "id": 5, "name": "five", "amount": 5.0},
                {"_op": DELETE, "_id_id": 3},
                {"_op": INSERT, "id": 10, "name": "ten", "amount": 10.0}]
    t.row_level(cut, task_one, task_two)
    # As SQL says: the old rows of 1, 2, 3, 5 and 7 go, the statement's new rows come.
    expected = by_id(rows(range(1, 8)))
    for gone in (1, 2, 3, 5, 7):
        del expected[gone]
    for new in (task_one[0], task_one[2], task_two[0], task_two[1], task_two[3]):
        expected[new["id"]] = {k: new[k] for k in ("id", "name", "amount")}
    assert t.state() == sort_rows(list(expected.values()))
    assert [r["id"] for r in t.state()] == [2, 3, 4, 5, 6, 7, 10]


def test_keyed_statements_conflict_on_a_common_key_only(keyed: TableHandle) -> None:
    t = keyed
    cut = t.insert(rows(range(10)))
    t.row_level(cut, [{"_op": UPDATE, "_id_id": 1, "id": 1, "name": "first", "amount": 1.0}])
    winner = t.last()
    t.row_level(cut, [{"_op": UPDATE, "_id_id": 2, "id": 2, "name": "other", "amount": 2.0}])  # other key: fine
    with pytest.raises(CommitConflict) as caught:
        t.row_level(cut, [{"_op": DELETE, "_id_id": 3}, {"_op": UPDATE, "_id_id": 1, "id": 1, "name": "lost",
                                                         "amount": 1.0}])
    assert f"commit {winner}" in str(caught.value)
    assert "1" in str(caught.value).split("key(s)")[1]
    state = by_id(t.state())
    assert state[1]["name"] == "first"  # no lost update
    assert state[2]["name"] == "other"
    assert 3 in state


def test_an_append_of_a_key_a_statement_changes_conflicts(keyed: TableHandle) -> None:
    t = keyed
    cut = t.insert(rows(range(5)))
    appended = t.insert(rows([4], name="appended"))
    # DELETE FROM t WHERE id = 0: key 0 was not touched since, fine (a DELETE's change rows carry only ids)
    t.row_level(cut, [{"_op": DELETE, "_id_id": 0}], operation="delete")
    with pytest.raises(CommitConflict, match=f"commit {appended} "):
        t.row_level(cut, [{"_op": DELETE, "_id_id": 4}], operation="delete")
    state = by_id(t.state())
    assert sorted(state) == [1, 2, 3, 4]
    assert state[4]["name"] == "appended4"


def test_keys_in_event_chunks_are_checked_too(keyed: TableHandle) -> None:
    t = keyed
    cut = t.insert(rows(range(5)))
    t.events([{"id": 3, "name": "event", "amount": None}])
    with pytest.raises(CommitConflict, match="key"):
        t.row_level(cut, [{"_op": UPDATE, "_id_id": 3, "id": 3, "name": "stale", "amount": 3.0}])
    t.row_level(cut, [{"_op": UPDATE, "_id_id": 2, "id": 2, "name": "fresh", "amount": 2.0}])
    assert by_id(t.state())[3]["name"] == "event"


def test_racing_statements_on_disjoint_keys_all_commit(keyed: TableHandle) -> None:
    """Many writers that read the same cut and lose the compare-and-set re-check and commit: no key of
    theirs was touched by the others."""
    t = keyed
    cut = t.insert(rows(range(40)))
    errors: list[BaseException] = []

    def statement(i: int) -> None:
        try:
            t.row_level(cut, [{"_op": UPDATE, "_id_id": i, "id": i, "name": f"w{i}", "amount": None}])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=statement, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    state = by_id(t.state())
    assert all(state[i]["name"] == f"w{i}" for i in range(8))
    assert t.last() == cut + 8


def test_racing_statements_on_one_key_never_lose_an_update(keyed: TableHandle) -> None:
    t = keyed
    cut = t.insert(rows(range(3)))
    outcomes: list[str] = []
    lock = threading.Lock()

    def statement(i: int) -> None:
        try:
            t.row_level(cut, [{"_op": UPDATE, "_id_id": 0, "id": 0, "name": f"w{i}", "amount": None}])
            result = f"w{i}"
        except CommitConflict:
            result = "conflict"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=statement, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    winners = [o for o in outcomes if o != "conflict"]
    assert len(winners) == 1
    assert len(outcomes) == 6
    assert by_id(t.state())[0]["name"] == winners[0]


# -- the rule functions -------------------------------------------------------------------------------

def test_common_keys_across_types_and_composite_keys() -> None:
    mine = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", "z"]})
    other = pa.table({"a": pa.array([3, 2], pa.int32()), "b": ["z", "q"]})
    assert common_keys(mine, other) == [(3, "z")]
    assert common_keys(mine, other.slice(1)) == []
    assert common_keys(mine, pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())})) == []


def test_a_refused_commit_that_is_not_a_lost_race_is_not_retried(keyed: TableHandle) -> None:
    """The server refuses to remove a chunk that is not live: the loop gives that answer back at once."""
    t = keyed
    cut = t.insert(rows(range(2)))
    table = Table.of(t.catalog, t.scope, t.name, t.registry)
    with pytest.raises(CommitConflict):
        commit_checked(table, [], Intent(ROW_LEVEL, cut, removes=("data/no-such-chunk.parquet",)))
    assert t.last() == cut


def test_update_on_a_partial_update_table_can_set_a_column_to_null(
        server_url: str, catalog: CatalogClient, scope: str) -> None:
    t = make_table(server_url, catalog, scope, key=("id",), properties={"merge-engine": "partial-update"})
    cut = t.insert(rows(range(3)))
    t.row_level(cut, [{"_op": UPDATE, "_id_id": 1, "id": 1, "name": None, "amount": 7.0}], operation="update")
    assert by_id(t.state())[1] == {"id": 1, "name": None, "amount": 7.0}
    assert by_id(t.state())[2] == {"id": 2, "name": "a2", "amount": 2.0}


def test_the_source_picks_the_row_level_writer_and_needs_the_read_cut(keyed: TableHandle) -> None:
    from pyspark_streamcat import DefaultSource
    from pyspark_streamcat.options import OptionError
    from pyspark_streamcat.writer import BatchWriter, RowLevelWriter

    t = keyed
    base = {"uri": t.url, "scope": t.scope, "table": t.name}
    chosen = DefaultSource({**base, "streamcat.rowlevel": "delete", "streamcat.readcut": "0"})
    assert isinstance(chosen.writer(t.change_schema(), False), RowLevelWriter)
    assert isinstance(DefaultSource(base).writer(t.schema, False), BatchWriter)
    with pytest.raises(OptionError, match=r"streamcat\.readcut"):
        DefaultSource({**base, "streamcat.rowlevel": "update"}).writer(t.change_schema(), False)
    with pytest.raises(OptionError, match=r"streamcat\.rowlevel"):
        DefaultSource({**base, "streamcat.rowlevel": "upsert", "streamcat.readcut": "0"}).writer(t.schema, False)


def test_a_lost_answer_without_a_writer_id_is_in_doubt(keyed: TableHandle) -> None:
    from catalog_api.streams.conflicts import CommitInDoubt
    from tests.streams.helpers import LosingAnswers

    t = keyed
    cut = t.insert(rows(range(3)))
    written = t.row_level_writer(cut).write(iter([t.changes_batch([{"_op": DELETE, "_id_id": 1}])]))
    table = Table.of(CatalogClient(t.url, session=LosingAnswers(1)), t.scope, t.name, t.registry)
    with pytest.raises(CommitInDoubt, match="may or may not"):
        commit_checked(table, written.deletes, Intent(ROW_LEVEL, cut))
    assert t.last() == cut + 1  # it was made: that is why the files must stay
    assert [r["id"] for r in t.state()] == [0, 2]
