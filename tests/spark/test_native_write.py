"""The native columnar path of writes: batch INSERTs are written by Spark's own Parquet writer (NativeWrite
in the Java shim) and committed as the Python writer commits them; every reader reads those chunks as it
reads the Python writer's, and everything the native path does not take keeps the Python data source."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog_api.client import CatalogClient
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from catalog_api.streams.reader import StreamReader
from registry.api.models import VersionInfo as VersionInfoModel
from registry.client import RegistryClient
from tests.spark.helpers import catalog_beside, rows, table_files
from tests.spark.test_types import COLUMNS, HIGH, LOW, NULLS, SOURCE, plain

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: A second catalog on the same server with native writes turned off (the Python writer always).
PYTHON = "streamcat_pywrite"
#: What Spark's Parquet writer puts in every footer, and pyarrow never does.
SPARK_WRITER_KEY = b"org.apache.spark.version"


@pytest.fixture
def python_catalog(spark: Any) -> str:
    """The catalog ``streamcat_pywrite``: the same server, ``native-write=false``."""
    return catalog_beside(spark, PYTHON, **{"native-write": "false"})


def _catalog(server: str) -> CatalogClient:
    return CatalogClient(server)


def _location(server: str, scope: str, table: str) -> str:
    return str(_catalog(server).get_stream(scope, table)["location"])


def _chunks(server: str, scope: str, table: str) -> list[Any]:
    return _catalog(server).snapshot(scope, table)[1]


def _footer(location: str, path: str) -> pq.FileMetaData:
    return pq.ParquetFile(f"{location}/{path}").metadata


def _native(location: str, path: str) -> bool:
    """Whether Spark's Parquet writer wrote the chunk (the native path) rather than pyarrow (the Python one)."""
    return SPARK_WRITER_KEY in (_footer(location, path).metadata or {})


def _physical(metadata: pq.FileMetaData) -> dict[str, tuple[str, str]]:
    """Each leaf column's (physical type, logical type) in a footer, by its dotted path."""
    schema = metadata.schema
    leaves = {}
    for i in range(len(schema)):
        column = schema.column(i)
        logical = str(column.logical_type)
        leaves[column.path] = (column.physical_type, logical)
    return leaves


def _field_ids(metadata: pq.FileMetaData) -> dict[str, bytes | None]:
    """The Parquet field id of every field in a footer (nested ones too), by dotted path."""
    found: dict[str, bytes | None] = {}

    def walk(prefix: str, field: pa.Field) -> None:
        found[prefix + field.name] = (field.metadata or {}).get(b"PARQUET:field_id")
        kind = field.type
        if pa.types.is_struct(kind):
            for child in kind:
                walk(f"{prefix}{field.name}.", child)
        elif pa.types.is_list(kind):
            walk(f"{prefix}{field.name}.", kind.value_field)
        elif pa.types.is_map(kind):
            walk(f"{prefix}{field.name}.", kind.key_field)
            walk(f"{prefix}{field.name}.", kind.item_field)

    for field in metadata.schema.to_arrow_schema():
        walk("", field)
    return found


def _read_python(server: str, scope: str, table: str) -> list[dict[str, Any]]:
    reader = StreamReader(_catalog(server), RegistryClient(server, scope), scope, table)
    return sorted(reader.read(), key=lambda r: r["k"])


def _spark_rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return [tuple(plain(v) for v in r) for r in spark.sql(f"SELECT * FROM {table} ORDER BY k").collect()]


def test_every_type_written_natively_reads_as_the_python_writers(spark: Any, scope: str, spark_server: str,
                                                                 python_catalog: str) -> None:
    source = f"{scope}_types"
    spark.createDataFrame([LOW, HIGH, NULLS], SOURCE).coalesce(1).createOrReplaceTempView(source)
    for name in ("n", "p"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.{name} ({COLUMNS}) USING avro")
    spark.sql(f"INSERT INTO streamcat.{scope}.n SELECT * FROM {source}")
    spark.sql(f"INSERT INTO {python_catalog}.{scope}.p SELECT * FROM {source}")

    (native,), (python,) = _chunks(spark_server, scope, "n"), _chunks(spark_server, scope, "p")
    n_loc, p_loc = _location(spark_server, scope, "n"), _location(spark_server, scope, "p")
    assert _native(n_loc, native.path)
    assert not _native(p_loc, python.path)

    # The commit describes the chunk as the Python writer does: the same layout, counts and statistics.
    assert native.path.startswith("data/")
    assert native.path.endswith(".parquet")
    assert len(native.path) == 45
    assert (native.kind, native.event_count, native.segment) == (python.kind, python.event_count, 0) == (
        "columnar", 3, 0)
    assert native.bytes == Path(n_loc, native.path).stat().st_size
    assert native.stats == python.stats
    n_meta, p_meta = _footer(n_loc, native.path), _footer(p_loc, python.path)
    version = VersionInfoModel.model_validate(_catalog(spark_server).get_table(scope, "n")["schemaVersion"])
    assert native.encoding_ids == (RegistryClient(spark_server, scope).encoding_id("n", version.to_domain()),)
    assert n_meta.metadata[b"streamcat.encoding_id"] == str(native.encoding_ids[0]).encode()
    assert n_meta.metadata[b"streamcat.chunk_version"] == b"1"

    # Every column has the Python writer's Parquet logical type, and its physical type too except for
    # decimals of up to 18 digits: Spark stores those as the integers the Parquet spec prefers (INT32 up
    # to 9 digits, INT64 up to 18), pyarrow by default in fixed-length bytes; every reader reads both.
    n_types, p_types = _physical(n_meta), _physical(p_meta)
    assert n_types.keys() == p_types.keys()
    assert {k: v[1] for k, v in n_types.items()} == {k: v[1] for k, v in p_types.items()}
    assert {k: v for k, v in n_types.items() if "Decimal" not in v[1]} == {
        k: v for k, v in p_types.items() if "Decimal" not in v[1]}
    assert (n_types["dec"][0], n_types["small_dec"][0]) == ("FIXED_LEN_BYTE_ARRAY", "INT32")
    # The same Parquet field ids: the table's column ids, when it has them.
    assert _field_ids(n_meta) == _field_ids(p_meta)
    ids = {f.name: f.metadata.get("parquet.field.id") for f in spark.table(f"streamcat.{scope}.n").schema.fields}
    assert {k: v for k, v in _field_ids(n_meta).items() if "." not in k} == {
        k: None if v is None else str(v).encode() for k, v in ids.items()}

    # Every reader reads the same rows from both: Spark (native scan and Python scan), the Python reader.
    expected_low = list(LOW)
    expected_low[10] = "ab  "
    assert _spark_rows(spark, f"streamcat.{scope}.n") == [tuple(expected_low), HIGH, NULLS]
    assert _spark_rows(spark, f"streamcat.{scope}.n") == _spark_rows(spark, f"streamcat.{scope}.p")
    python_scan = spark.read.option("streamcat.nativeScan", "false")
    assert ([tuple(plain(v) for v in r) for r in python_scan.table(f"streamcat.{scope}.n").orderBy("k").collect()]
            == _spark_rows(spark, f"streamcat.{scope}.p"))
    assert _read_python(spark_server, scope, "n") == _read_python(spark_server, scope, "p")


def test_insert_commits_once_with_the_python_writers_conventions(spark: Any, scope: str, spark_server: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, s STRING, ts TIMESTAMP) USING avro")
    before = _catalog(spark_server).get_stream(scope, "t")["lastCommit"]
    (spark.range(0, 2500, 1, 2).selectExpr("id", "CAST(id AS STRING) AS s", "timestamp_micros(id) AS ts")
     .writeTo(table).option("rowsPerChunk", "1000").option("streamcat.commit.property.origin", "test").append())
    commits = _catalog(spark_server).commits(scope, "t", after=before)
    assert len(commits) == 1, "one commit for the whole write"
    commit = commits[0]
    assert commit["writerId"].startswith("spark-write-")
    assert commit["writerSequence"] == 0
    assert commit["properties"]["origin"] == "test"
    assert commit["properties"]["spark.queryId"]
    chunks = _chunks(spark_server, scope, "t")
    location = _location(spark_server, scope, "t")
    assert all(_native(location, c.path) for c in chunks)
    # Two tasks of 1250 rows, a new file every 1000 rows of a task.
    assert sorted(c.event_count for c in chunks) == [250, 250, 1000, 1000]
    assert table_files(location) == {c.path for c in chunks}, "no side files (.crc) beside the chunks"
    for chunk in chunks:
        ids = pq.read_table(f"{location}/{chunk.path}", columns=["id"]).column("id").to_pylist()
        assert chunk.stats["rows"] == len(ids)
        assert chunk.stats["columns"]["id"] == {"nulls": 0, "min": min(ids), "max": max(ids)}
        assert chunk.stats["columns"]["ts"] == {"nulls": 0, "min": min(ids), "max": max(ids)}, "micros"
    assert rows(spark, f"SELECT count(*), sum(id), max(ts) FROM {table}") == [
        (2500, sum(range(2500)), dt.datetime(1970, 1, 1, 0, 0, 0, 2499))]

    # An empty INSERT commits nothing; INSERT OVERWRITE replaces every row in one commit.
    spark.sql(f"INSERT INTO {table} SELECT id, 'x', NULL FROM range(0)")
    assert len(_catalog(spark_server).commits(scope, "t", after=before)) == 1
    spark.sql(f"INSERT OVERWRITE {table} SELECT id, 'o', NULL FROM range(3)")
    last = _catalog(spark_server).commits(scope, "t", after=before)[-1]
    assert last["overwrite"]
    assert last["eventCount"] == 3
    assert rows(spark, f"SELECT id, s, ts FROM {table} ORDER BY id") == [(0, "o", None), (1, "o", None), (2, "o", None)]
    chunks = _chunks(spark_server, scope, "t")
    assert sum(c.event_count for c in chunks) == 3
    assert all(c.stats["columns"]["ts"] == {"nulls": c.event_count} for c in chunks), "no bounds when all null"


def test_the_switch_and_streams_keep_the_python_writer(spark: Any, scope: str, spark_server: str,
                                                        python_catalog: str, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id BIGINT) USING avro")
    location = _location(spark_server, scope, "t")
    spark.sql(f"INSERT INTO {python_catalog}.{scope}.t VALUES (1)")
    spark.range(2, 3).writeTo(f"streamcat.{scope}.t").option("streamcat.nativeWrite", "false").append()
    assert not any(_native(location, c.path) for c in _chunks(spark_server, scope, "t")), "native-write=false"

    query = (spark.readStream.format("rate").option("rowsPerSecond", 10).load().selectExpr("value AS id")
             .writeStream.option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .toTable(f"streamcat.{scope}.t"))
    query.awaitTermination(120)
    streamed = [c for c in _chunks(spark_server, scope, "t") if c.commit > 2]
    assert not any(_native(location, c.path) for c in streamed), "streaming writes stay on the Python writer"
    spark.sql(f"INSERT INTO streamcat.{scope}.t VALUES (3)")
    assert _native(location, _chunks(spark_server, scope, "t")[-1].path)


def test_a_failed_write_commits_nothing_and_gc_removes_its_files(spark: Any, scope: str, spark_server: str,
                                                                 spark_settings: Settings) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    location = _location(spark_server, scope, "t")
    files = table_files(location)
    commits = len(_catalog(spark_server).commits(scope, "t"))
    with pytest.raises(Exception, match="boom"):
        spark.sql(f"INSERT INTO {table} SELECT CASE WHEN id = 4000 THEN raise_error('boom') ELSE id END "
                  "FROM range(0, 5000, 1, 2)").collect()
    assert rows(spark, f"SELECT * FROM {table}") == [(1,)]
    assert len(_catalog(spark_server).commits(scope, "t")) == commits
    # The failed task deleted its file; a task that finished as the job was failing may leave one, named
    # by no commit, which the cleanup command removes.
    extension = create_app(spark_settings).extensions["streamcat"]
    try:
        extension.catalog.collect_garbage(scope, "t", 0)
    finally:
        extension.engine.dispose()
    assert table_files(location) == files
    assert rows(spark, f"SELECT * FROM {table}") == [(1,)]


def test_natively_written_chunks_serve_dml_changes_and_compaction(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v STRING) USING avro")
    spark.sql(f"INSERT INTO {table} SELECT id, 'a' FROM range(0, 10)")
    spark.sql(f"INSERT INTO {table} SELECT id, 'b' FROM range(10, 20)")
    # Metadata-only DELETE decides from the native chunks' statistics: the second chunk goes whole.
    spark.sql(f"DELETE FROM {table} WHERE id >= 10")
    assert rows(spark, f"SELECT count(*), min(v), max(v) FROM {table}") == [(10, "a", "a")]
    spark.sql(f"UPDATE {table} SET v = 'u' WHERE id = 3")
    spark.sql(f"DELETE FROM {table} WHERE id = 4")
    assert rows(spark, f"SELECT id FROM {table} WHERE v = 'u'") == [(3,)]
    changes = rows(spark, f"SELECT id, v, _change_type FROM {table} CHANGES FROM VERSION 1 TO VERSION 2 "
                          "ORDER BY id")
    assert changes == [(i, "a" if i < 10 else "b", "insert") for i in range(20)]
    expected = rows(spark, f"SELECT * FROM {table} ORDER BY id")
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.t')")
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == expected

    keyed = f"streamcat.{scope}.k"
    spark.sql(f"CREATE TABLE {keyed} (id BIGINT NOT NULL, v BIGINT, CONSTRAINT k_pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO {keyed} SELECT id, id FROM range(10)")
    spark.sql(f"INSERT INTO {keyed} SELECT id, -id FROM range(5, 15)")
    assert rows(spark, f"SELECT count(*), sum(v) FROM {keyed}") == [(15, sum(range(5)) - sum(range(5, 15)))]
