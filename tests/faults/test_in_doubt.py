"""A commit whose answer is lost: every writer keeps its files, learns from the catalog that the commit was
made, and reports success.

A real proxy on 127.0.0.1 (tests/support/proxy.py) sits between each writer and the real server: it
forwards the writer's commit, which the server makes, and loses the answer (the connection closed, or a
502 in its place). Afterwards the table holds each row exactly once and every chunk it names exists.
The Spark writers go through a second catalog, ``faulty``, of the shared session, pointed at the proxy.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import spark_plugin
from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.server.cli_ingest import ingest_command
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from tests.changelog.helpers import event, line, make_table, read_table, row
from tests.streams.helpers import V1, make_stream
from tests.support.proxy import BAD_GATEWAY, DROP, Faults, faulty_proxy

MODES = [DROP, BAD_GATEWAY]


def files_named(catalog: CatalogClient, scope: str, name: str) -> tuple[set[str], set[str]]:
    """(the paths of the chunks visible now, the files under the stream's location)."""
    _cut, chunks = catalog.snapshot(scope, name)
    location = catalog.get_stream(scope, name)["location"]
    return {c.path for c in chunks}, {f.path for f in storage.list_files(location)}


def assert_whole(catalog: CatalogClient, scope: str, name: str) -> None:
    """Every chunk the table names exists."""
    named, present = files_named(catalog, scope, name)
    assert named, f"{scope}.{name} names no chunk"
    assert named <= present, f"chunks named by {scope}.{name} but deleted: {sorted(named - present)}"


# -- Python writers ----------------------------------------------------------------------------------


@pytest.fixture
def registry(server_url: str, scope: str) -> RegistryClient:
    """A registry client in the scope's namespace."""
    return RegistryClient(server_url, scope)


@pytest.fixture
def proxied(server_url: str) -> Iterator[tuple[str, Faults]]:
    """A proxy in front of the test server (its URL, its faults)."""
    with faulty_proxy(server_url) as found:
        yield found


@pytest.mark.parametrize("mode", MODES)
def test_the_stream_writer_reports_its_commit_made_although_the_answer_was_lost(
        catalog: CatalogClient, registry: RegistryClient, scope: str, proxied: tuple[str, Faults], mode: str) -> None:
    url, faults = proxied
    stream = make_stream(catalog, registry, scope)
    writer = StreamWriter(CatalogClient(url), stream.registry, scope, stream.name, schema=V1, backoff=0.01)
    faults.arm(1, mode=mode)
    for i in range(50):
        writer.write({"key": "k", "seq": i})
    made = writer.flush()
    assert faults.lost == [1]
    assert made is not None
    assert (made["number"], made["duplicate"]) == (1, False), "the flush's own commit, made once"
    writer.write({"key": "k", "seq": 50})
    writer.close()
    assert [r["seq"] for r in stream.reader().read()] == list(range(51))
    assert_whole(catalog, scope, stream.name)


@pytest.mark.parametrize("mode", MODES)
def test_ingest_reports_its_commit_made_although_the_answer_was_lost(
        catalog: CatalogClient, registry: RegistryClient, scope: str, proxied: tuple[str, Faults], mode: str,
        tmp_path: Path) -> None:
    url, faults = proxied
    table = make_table(catalog, scope)
    events = [event("c", None, row(k, qty=k), 1000 + 10 * k) for k in range(30)]
    source = tmp_path / "changes.jsonl"
    source.write_bytes(b"\n".join(line(e) for e in events) + b"\n")
    faults.arm(2, mode=mode)
    done = CliRunner().invoke(ingest_command, ["--table", f"{scope}.{table}", "--format", "debezium-json",
                                               "--writer-id", "cdc", "--batch-size", "10", "--uri", url,
                                               "--quiet", str(source)])
    assert done.exit_code == 0, done.output
    assert faults.lost == [2]
    assert "3 commits (0 already committed), 30 lines" in done.stdout
    assert [(r["id"], r["qty"]) for r in read_table(catalog, registry, scope, table)] \
        == [(k, k) for k in range(30)]
    assert [c["writerSequence"] for c in catalog.commits(scope, table)] == [1, 2, 3]
    assert_whole(catalog, scope, table)


# -- Spark writers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def faulty_catalog(spark: Any, spark_server: str) -> Iterator[Faults]:
    """The catalog ``faulty`` of the shared session: the test server behind a proxy; its faults."""
    with faulty_proxy(spark_server) as (url, faults):
        for key, value in spark_plugin.catalog_conf(url, "faulty").items():
            spark.conf.set(key, value)
        yield faults


@pytest.fixture
def faulty(faulty_catalog: Faults) -> Faults:
    """The faults of the catalog ``faulty``, none armed."""
    faulty_catalog.arm()
    return faulty_catalog


@pytest.fixture
def spark_scope(spark: Any) -> str:
    """A Spark namespace of this test's own."""
    name = f"f{uuid.uuid4().hex[:12]}"
    spark.sql(f"CREATE NAMESPACE streamcat.{name}")
    return name


def ids(spark: Any, table: str) -> list[int]:
    return [r[0] for r in spark.sql(f"SELECT id FROM {table} ORDER BY id").collect()]


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_spark_batch_write_succeeds_once_although_the_answer_was_lost(
        spark: Any, spark_server: str, faulty: Faults, spark_scope: str, native: bool, mode: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{spark_scope}.t (id BIGINT) USING avro")
    faulty.arm(1, mode=mode)
    (spark.range(0, 500, numPartitions=2).writeTo(f"faulty.{spark_scope}.t")
     .option("streamcat.nativeWrite", str(native).lower()).append())
    assert faulty.lost == [1]
    assert ids(spark, f"streamcat.{spark_scope}.t") == list(range(500))
    catalog = CatalogClient(spark_server)
    assert [c["number"] for c in catalog.commits(spark_scope, "t")] == [1]
    assert_whole(catalog, spark_scope, "t")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_a_streaming_write_succeeds_once_although_the_answer_was_lost(
        spark: Any, spark_server: str, faulty: Faults, spark_scope: str, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE streamcat.{spark_scope}.src (id BIGINT) USING avro")
    spark.sql(f"CREATE TABLE streamcat.{spark_scope}.dst (id BIGINT) USING avro")
    spark.sql(f"INSERT INTO streamcat.{spark_scope}.src SELECT id FROM range(0, 300)")
    faulty.arm(1)  # the connection closed: the answer lost
    query = (spark.readStream.table(f"streamcat.{spark_scope}.src").writeStream
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .toTable(f"faulty.{spark_scope}.dst"))
    query.awaitTermination(120)
    assert query.exception() is None
    assert faulty.lost == [1]
    assert ids(spark, f"streamcat.{spark_scope}.dst") == list(range(300))
    assert_whole(CatalogClient(spark_server), spark_scope, "dst")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_a_merge_succeeds_once_although_the_answer_was_lost(
        spark: Any, spark_server: str, faulty: Faults, spark_scope: str) -> None:
    table = f"{spark_scope}.stock"
    spark.sql(f"CREATE TABLE streamcat.{table} (id BIGINT NOT NULL, qty BIGINT, CONSTRAINT pk PRIMARY KEY (id))")
    spark.sql(f"INSERT INTO streamcat.{table} SELECT id, 0 FROM range(0, 100)")
    faulty.arm(1, mode=BAD_GATEWAY)  # made, but answered with a 502
    spark.sql(f"""MERGE INTO faulty.{table} t USING (SELECT id, 1 AS qty FROM range(50, 150)) u ON t.id = u.id
                  WHEN MATCHED THEN UPDATE SET qty = u.qty WHEN NOT MATCHED THEN INSERT *""")
    assert faulty.lost == [1]
    got = [tuple(r) for r in spark.sql(f"SELECT id, qty FROM streamcat.{table} ORDER BY id").collect()]
    assert got == [(i, int(i >= 50)) for i in range(150)]
    assert_whole(CatalogClient(spark_server), spark_scope, "stock")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_a_compaction_succeeds_once_although_the_answer_was_lost(
        spark: Any, spark_server: str, faulty: Faults, spark_scope: str) -> None:
    table = f"{spark_scope}.k"
    spark.sql(f"CREATE TABLE streamcat.{table} (id BIGINT NOT NULL, v BIGINT, CONSTRAINT pk PRIMARY KEY (id))")
    for round_ in range(3):
        spark.sql(f"INSERT INTO streamcat.{table} SELECT id, {round_} FROM range({round_ * 20}, {round_ * 20 + 40})")
    faulty.arm(1, mode=BAD_GATEWAY)
    result = spark.sql(f"CALL faulty.system.compact(table => '{table}')").collect()
    assert faulty.lost == [1]
    assert result[0][2] == 4, "the procedure reports the compaction commit it made"
    got = [tuple(r) for r in spark.sql(f"SELECT id, v FROM streamcat.{table} ORDER BY id").collect()]
    assert got == [(i, min(i // 20, 2)) for i in range(80)]
    catalog = CatalogClient(spark_server)
    assert [c["kind"] for c in catalog.commits(spark_scope, "k")] == ["append"] * 3 + ["compaction"]
    assert_whole(catalog, spark_scope, "k")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_a_materialized_refresh_succeeds_once_although_the_answer_was_lost(
        spark: Any, spark_server: str, faulty: Faults, spark_scope: str) -> None:
    s = f"faulty.{spark_scope}"
    spark.sql(f"CREATE TABLE {s}.orders (id INT, item STRING, qty INT)")
    spark.sql(f"INSERT INTO {s}.orders VALUES (1, 'apple', 3), (2, 'pear', 1)")
    revenue = f"SELECT item, sum(qty) AS qty FROM {s}.orders GROUP BY item"
    spark.sql(f"CALL faulty.system.create_materialized_table(table => '{spark_scope}.revenue', query => '{revenue}', "
              "freshness => '1 hour', refresh_mode => 'full')")
    spark.sql(f"INSERT INTO {s}.orders VALUES (3, 'apple', 2), (4, 'fig', 7)")
    faulty.arm(1, mode=BAD_GATEWAY)
    spark.sql(f"CALL faulty.system.refresh_materialized_table(table => '{spark_scope}.revenue')").collect()
    assert faulty.lost == [1]
    got = [tuple(r) for r in spark.sql(f"SELECT item, qty FROM streamcat.{spark_scope}.revenue ORDER BY item")
           .collect()]
    assert got == [("apple", 5), ("fig", 7), ("pear", 1)]
    assert_whole(CatalogClient(spark_server), spark_scope, "revenue")
