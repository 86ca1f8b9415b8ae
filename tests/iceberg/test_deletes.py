"""Position deletes through the Iceberg REST catalog without Spark: a row-level commit whose position-deletes
chunk (written by the data plane's own writer, ``write_position_deletes``) names rows of chunks of several
partitions is a ``delete`` snapshot at once, read by pyiceberg and DuckDB as Streamcat reads it, and time
travel to the snapshot before it still reads the deleted rows; a deletes chunk written before it had
Iceberg's columns keeps the table's Iceberg view at the commit before it."""

from __future__ import annotations

from dataclasses import replace

import pyarrow.parquet as pq

from catalog_api.client import CatalogClient
from catalog_api.model import ROW_LEVEL, Chunk, CommitOptions
from catalog_api.streams.row_kinds import DELETES_KIND, write_position_deletes
from registry.client import RegistryClient
from tests.iceberg.clients import duck, duck_rows, pyiceberg, rows, streamcat_rows
from tests.iceberg.test_read import events, new_table, writer


def test_position_deletes_across_partitions_are_a_delete_snapshot(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "region")
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 30))
    location = catalog.get_table(scope, table)["stream"]["location"]
    cut, chunks = catalog.snapshot(scope, table)
    assert len({c.partition["values"][0] if c.partition else None for c in chunks}) == len(chunks) == 3
    # Rows 0 and 2 of one region's chunk and row 1 of another's, as Spark's DELETE writes them (the two chunks
    # whose paths sort first, so that the third lies outside the deletes' path bounds). The second deletes chunk
    # is listed by its path bounds alone, as one that names more chunks than its statistics keep.
    first, second, outside = sorted(chunks, key=lambda c: c.path)
    named = write_position_deletes(location, "data/d1.deletes.parquet", [first.path, first.path], [2, 0])
    assert named.stats["files"] == [first.path]
    bounded = write_position_deletes(location, "data/d2.deletes.parquet", [second.path], [1])
    bounded = replace(bounded, stats={k: v for k, v in bounded.stats.items() if k != "files"})
    assert pq.read_schema(f"{location}/data/d1.deletes.parquet").names == ["file_path", "pos", "path"]
    catalog.commit(scope, table, [named, bounded], CommitOptions(kind=ROW_LEVEL, read_cut=cut))

    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    assert loaded.properties["streamcat.commits-behind"] == "0"
    current = loaded.current_snapshot()
    assert current is not None
    assert current.summary is not None
    assert current.summary.operation.value == "delete"
    assert current.summary["total-delete-files"] == "2"
    expected = streamcat_rows(catalog, client, scope, table)
    assert len(expected) == 27
    assert rows(loaded.scan().to_arrow()) == expected
    # Each delete file is listed in the partition of the file it names, with its path bounds.
    planned = {task.file.file_path.rsplit("/", 1)[1]: len(task.delete_files) for task in loaded.scan().plan_files()}
    assert planned == {first.path.rsplit("/", 1)[1]: 1, second.path.rsplit("/", 1)[1]: 1,
                       outside.path.rsplit("/", 1)[1]: 0}
    assert rows(loaded.scan(snapshot_id=cut).to_arrow()) == streamcat_rows(catalog, client, scope, table, cut=cut)
    con = duck(server_url)
    assert duck_rows(con, f"SELECT * FROM ice.{scope}.{table}") == expected
    assert duck_rows(con, f"SELECT * FROM ice.{scope}.{table} AT (VERSION => {cut})") == \
        streamcat_rows(catalog, client, scope, table, cut=cut)


def test_deletes_without_icebergs_columns_lag_until_compaction(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope)
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 5))
    location = catalog.get_table(scope, table)["stream"]["location"]
    cut, chunks = catalog.snapshot(scope, table)
    # A deletes chunk as Streamcat wrote them before they had Iceberg's columns: (path, pos) only.
    write_position_deletes(location, "data/old.deletes.parquet", [chunks[0].path], [0])
    legacy = f"{location}/data/old.deletes.parquet"
    pq.write_table(pq.read_table(legacy, columns=["path", "pos"]), legacy)
    old = Chunk(path="data/old.deletes.parquet", kind=DELETES_KIND, event_count=1, bytes=1)
    catalog.commit(scope, table, [old], CommitOptions(kind=ROW_LEVEL, read_cut=cut))
    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    assert loaded.properties["streamcat.commit"] == str(cut)
    assert loaded.properties["streamcat.commits-behind"] == "1"
    assert len(loaded.scan().to_arrow()) == 5
    assert len(streamcat_rows(catalog, client, scope, table)) == 4
