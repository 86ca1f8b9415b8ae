"""The shortcuts of a large ingest change nothing a user sees: lines decoded many at a time, the pre-merge of
keys by table, a pre-merged batch written as it is, and the chunks' Parquet encodings."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.streams.debezium.decoder import DebeziumDecoder, DebeziumError
from catalog_api.streams.debezium.ingest import ingest
from catalog_api.streams.writer import StreamWriter
from registry.client import RegistryClient
from tests.changelog.helpers import (  # noqa: F401
    ARROW,
    event,
    line,
    make_table,
    read_table,
    registry_fixture,
    row,
)
from tests.changelog.test_debezium_parallel import KEYED, history, mixed_history, one_pass, parallel


def either(run: Any) -> tuple[str, Any]:
    """What a decoding gave: its outcome, or the line and message of the error it raised."""
    try:
        return "batches", run()
    except DebeziumError as e:
        return "error", (e.line, str(e))


ODD_LINES = {
    "two events on one line": line(event("c", None, row(900, qty=1), 99_999_990)) + b" "
    + line(event("c", None, row(901, qty=2), 99_999_991)),
    "two events and no space": line(event("c", None, row(900, qty=1), 99_999_990))
    + line(event("c", None, row(901, qty=2), 99_999_991)),
    "two tombstones on one line": b"null null",
    "an event over two lines": line(event("c", None, row(902, qty=3), 99_999_992)).replace(b',"after"', b',\n"after"'),
    "an event over two lines, then two on one": line(event("c", None, row(902, qty=3), 99_999_992)).replace(
        b',"after"', b',\n"after"') + b"\n" + line(event("c", None, row(900, qty=1), 99_999_993))
    + line(event("c", None, row(901, qty=2), 99_999_994)),
    "a line of blanks": b"   ",
    "a truncated null": b"nul",
}


@pytest.mark.parametrize("odd", sorted(ODD_LINES))
def test_a_block_of_lines_decodes_as_one_line_at_a_time(odd: str) -> None:
    lines = mixed_history(500, seed=13)
    lines[250:250] = ODD_LINES[odd].split(b"\n")
    alone = either(lambda: one_pass(lines, batch_size=70))
    fanned = either(lambda: parallel(lines, batch_size=70, block_bytes=6_000)[0])
    assert fanned == alone
    if odd == "a line of blanks":
        assert alone[0] == "batches"  # a blank line is a tombstone
    else:
        assert alone[0] == "error"
        assert alone[1][0] == 251


def test_lines_ending_in_a_carriage_return_decode_as_one_line_at_a_time() -> None:
    lines = [x + b"\r" if x else x for x in mixed_history(400, seed=17)]
    result, fanned = parallel(lines, batch_size=60, block_bytes=4_000)
    assert result == one_pass(lines, batch_size=60)
    assert fanned.slow_blocks == 0


@pytest.mark.parametrize("spread", [1, 10**12, -(10**15)])
def test_keys_far_apart_or_negative_are_merged_as_in_one_pass(spread: int) -> None:
    lines = [msgspec.json.encode(_shifted(msgspec.json.decode(x), spread)) if x.strip() not in (b"", b"null") else x
             for x in mixed_history(800, seed=19)]
    result, fanned = parallel(lines, batch_size=90, block_bytes=3_000)
    assert result == one_pass(lines, batch_size=90)
    assert fanned.fast_blocks > 10


def _shifted(value: Any, spread: int) -> Any:
    """An event whose keys are k * spread (0 stays 0)."""
    for side in ("before", "after"):
        if value.get(side) is not None:
            value[side] = {**value[side], "id": value[side]["id"] * spread}
    return value


def test_a_premerged_batch_is_merged_again_when_other_changes_join_it(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    table = make_table(catalog, scope)
    writer = StreamWriter(catalog, registry, scope, table, writer_id="w")
    batch = pa.table({"id": pa.array([1, 2], pa.int64()), "qty": pa.array([1, 2], pa.int32())})
    writer.write_changes(batch, premerged=True)
    writer.upsert(row(1, qty=10))  # the same key again, after the pre-merged rows
    commit = writer.flush()
    assert commit is not None
    assert commit["eventCount"] == 2
    writer.write_changes(batch, premerged=True)
    writer.abort()  # what was dropped says nothing of what comes next
    writer.upsert(row(3, qty=3))
    writer.upsert(row(3, qty=30))
    commit = writer.flush()
    assert commit is not None
    assert commit["eventCount"] == 1
    writer.write_changes(batch, premerged=True)
    commit = writer.flush()
    assert commit is not None
    assert commit["eventCount"] == 2
    assert [(r["id"], r["qty"]) for r in read_table(catalog, registry, scope, table)] == [(1, 1), (2, 2), (3, 30)]


def test_an_ingest_dictionary_encodes_its_text_columns_and_keeps_every_statistic(
        catalog: CatalogClient, registry: RegistryClient, scope: str) -> None:
    lines = history([("create", k) for k in range(50)] + [("update", k) for k in range(0, 50, 3)])
    table = make_table(catalog, scope)
    result = ingest(catalog, registry, scope, table, lines, writer_id="w", batch_size=1_000)
    assert result.applied == 67
    location = catalog.get_stream(scope, table)["location"]
    fs, root = storage.resolve(location)
    _, chunks = catalog.snapshot(scope, table)
    assert chunks
    for chunk in chunks:
        with fs.open_input_file(f"{root}/{chunk.path}") as f:
            metadata = pq.ParquetFile(f).metadata
        columns = metadata.row_group(0)
        for i in range(columns.num_columns):
            column = columns.column(i)
            dictionary = any("DICTIONARY" in encoding for encoding in column.encodings)
            assert dictionary == (column.path_in_schema in ("name", "data")), column.path_in_schema
            assert column.statistics is not None
            assert column.statistics.has_null_count
            if column.statistics.null_count < metadata.num_rows:
                assert column.statistics.has_min_max, column.path_in_schema
    assert len(read_table(catalog, registry, scope, table)) == 50


def test_decoding_workers_never_load_pandas(tmp_path: Any) -> None:
    # pyarrow loads pandas (when installed) on its first conversion of Python values, only to ask whether
    # they are pandas objects: 0.3 s of every worker's time.
    script = textwrap.dedent("""
        import multiprocessing, sys
        from catalog_api.streams.debezium import parallel as debezium_parallel
        from catalog_api.streams.debezium.decoder import DebeziumDecoder
        from catalog_api.streams.merge import TableLayout
        from tests.changelog.helpers import ARROW
        from tests.changelog.test_debezium_parallel import mixed_history

        def probe(data):
            count, block = debezium_parallel._decode_task(data)
            return block is not None, "pandas" in sys.modules

        decoder = DebeziumDecoder(ARROW, TableLayout(("id",)))
        data = b"\\n".join(mixed_history(50, seed=1)) + b"\\n"
        with multiprocessing.get_context("fork").Pool(
                1, initializer=debezium_parallel._start_worker, initargs=(decoder, None)) as pool:
            print(pool.apply(probe, (data,)))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "(True, False)"


def test_a_bad_value_in_a_block_decoded_at_once_is_named_as_one_pass_names_it() -> None:
    lines = mixed_history(600, seed=23)
    lines[301:301] = [line(event("c", None, row(5, qty="many"), 99_999_999))]
    with pytest.raises(DebeziumError) as expected:
        list(DebeziumDecoder(ARROW, KEYED, batch_size=64).batches(lines))
    with pytest.raises(DebeziumError) as caught:
        parallel(lines, batch_size=64, block_bytes=8_000)
    assert caught.value.line == expected.value.line == 302
    assert str(caught.value) == str(expected.value)
