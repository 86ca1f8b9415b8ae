"""DDL through the catalog shim: namespaces are scopes, tables are streams with a schema group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from registry.client import RegistryClient
from registry.errors import NotFound
from tests.spark.helpers import describe, rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_namespaces_are_scopes_with_comment_and_properties(spark: Any, spark_server: str, scope: str) -> None:
    catalog = CatalogClient(spark_server)
    other = f"{scope}x"
    spark.sql(f"CREATE NAMESPACE streamcat.{other} COMMENT 'orders of the shop' WITH DBPROPERTIES ('team' = 'ops')")
    assert {(scope,), (other,)} <= set(rows(spark, "SHOW NAMESPACES IN streamcat"))
    made = catalog.get_scope(other)
    assert made["comment"] == "orders of the shop"
    assert made["properties"]["team"] == "ops"

    info = describe(spark, f"NAMESPACE EXTENDED streamcat.{other}")
    assert info["Comment"] == "orders of the shop"
    assert "team" in info["Properties"]

    spark.sql(f"ALTER NAMESPACE streamcat.{other} SET PROPERTIES ('team' = 'data', 'tier' = 'gold')")
    properties = catalog.get_scope(other)["properties"]
    assert (properties["team"], properties["tier"]) == ("data", "gold")
    assert "tier" in describe(spark, f"NAMESPACE EXTENDED streamcat.{other}")["Properties"]

    with pytest.raises(Exception, match="SCHEMA_ALREADY_EXISTS"):
        spark.sql(f"CREATE NAMESPACE streamcat.{other}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS streamcat.{other}")
    spark.sql(f"DROP NAMESPACE streamcat.{other}")
    assert (other,) not in rows(spark, "SHOW NAMESPACES IN streamcat")
    with pytest.raises(NotFound):
        catalog.get_scope(other)
    with pytest.raises(Exception, match="SCHEMA_NOT_FOUND"):
        spark.sql(f"DROP NAMESPACE streamcat.{other}")


def test_a_namespace_with_tables_drops_only_with_cascade(spark: Any, spark_server: str, scope: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.t VALUES (1)")
    location = CatalogClient(spark_server).get_table(scope, "t")["stream"]["location"]
    with pytest.raises(Exception, match="SCHEMA_NOT_EMPTY"):
        spark.sql(f"DROP NAMESPACE streamcat.{scope}")
    assert rows(spark, f"SELECT id FROM streamcat.{scope}.t") == [(1,)]

    spark.sql(f"DROP NAMESPACE streamcat.{scope} CASCADE")
    assert (scope,) not in rows(spark, "SHOW NAMESPACES IN streamcat")
    with pytest.raises(NotFound):
        RegistryClient(spark_server, scope).get_group("t")
    assert not Path(location).exists()


def test_create_table_registers_stream_group_and_schema(spark: Any, spark_server: str, scope: str) -> None:
    spark.sql(f"""CREATE TABLE streamcat.{scope}.orders (id BIGINT NOT NULL COMMENT 'order id', amount DOUBLE,
                  tags ARRAY<STRING>) USING avro COMMENT 'all orders'
                  TBLPROPERTIES ('owner.team' = 'shop', 'compatibility' = 'FULL_TRANSITIVE', 'segments' = '3')""")
    assert rows(spark, f"SHOW TABLES IN streamcat.{scope}") == [(scope, "orders", False)]

    table = CatalogClient(spark_server).get_table(scope, "orders")
    assert table["format"] == "avro"
    assert table["comment"] == "all orders"
    assert table["properties"]["owner.team"] == "shop"
    assert table["compatibility"] == {"policy": "FullTransitive"}
    assert table["stream"]["scalingPolicy"]["minSegments"] == 3
    fields = {f["name"]: f for f in table["schema"]["fields"]}
    assert fields["id"]["nullable"] is False
    assert fields["id"]["metadata"]["comment"] == "order id"

    registry = RegistryClient(spark_server, scope)
    [latest] = registry.latest_schemas("orders")
    avro = json.loads(latest.schema.data)
    assert [f["name"] for f in avro["fields"]] == ["id", "amount", "tags"]
    assert avro["fields"][0]["type"] == "long"

    info = describe(spark, f"TABLE EXTENDED streamcat.{scope}.orders")
    assert info["Provider"] == "avro"
    assert info["Comment"] == "all orders"
    assert info["Location"] == table["stream"]["location"]
    assert "compatibility=FullTransitive" in info["Table Properties"]
    assert "segments=3" in info["Table Properties"]
    assert info["id"] == "bigint"


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_tables_of_other_formats_register_their_format(spark: Any, spark_server: str, scope: str, fmt: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT, name STRING) USING {fmt}")
    [latest] = RegistryClient(spark_server, scope).latest_schemas("t")
    assert latest.schema.format.name == {"protobuf": "Protobuf", "json": "Json"}[fmt]
    spark.sql(f"INSERT INTO streamcat.{scope}.t VALUES (1, 'a')")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.t") == [(1, "a")]


def test_create_table_errors_are_spark_errors(spark: Any, scope: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT)")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT)")
    spark.sql(f"CREATE TABLE IF NOT EXISTS streamcat.{scope}.t (id INT)")
    with pytest.raises(Exception, match=r"SCHEMA_NOT_FOUND|NAMESPACE_NOT_FOUND"):
        spark.sql(f"CREATE TABLE streamcat.{scope}missing.t (id INT)")
    with pytest.raises(Exception, match=r"USING parquet: streamcat tables are USING avro"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.p (id INT) USING parquet")
    with pytest.raises(Exception, match=r"hours.*\bd\b.*date|\bd\b.*date.*hour"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.p (id INT, d DATE) PARTITIONED BY (hours(d))")
    assert rows(spark, f"SHOW TABLES IN streamcat.{scope} LIKE 'p'") == []
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM streamcat.{scope}.missing")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"DROP TABLE streamcat.{scope}.missing")
    spark.sql(f"DROP TABLE IF EXISTS streamcat.{scope}.missing")


def test_alter_table_registers_a_new_version_per_schema_change(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT, name STRING, extra STRING)")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN score DOUBLE COMMENT 'points' AFTER id")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN extra")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN name COMMENT 'who'")
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('k' = 'v')")

    columns = spark.table(table).schema
    assert [(f.name, f.dataType.simpleString()) for f in columns.fields] == [
        ("id", "bigint"), ("score", "double"), ("name", "string")]
    assert columns["score"].metadata["comment"] == "points"
    assert columns["name"].metadata["comment"] == "who"
    assert dict(rows(spark, f"SHOW TBLPROPERTIES {table}"))["k"] == "v"

    versions = RegistryClient(spark_server, scope).versions("t")
    assert len(versions) == 5  # create, add, widen, drop, comment; the property is no schema change
    spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('k')")
    assert "k" not in dict(rows(spark, f"SHOW TBLPROPERTIES {table}"))


def test_an_alter_the_policy_refuses_fails_with_the_reason(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT, name STRING)")
    with pytest.raises(Exception, match=r"incompatible under policy Backward.*\$\.c.*no default") as refused:
        spark.sql(f"ALTER TABLE {table} ADD COLUMN c INT NOT NULL")
    assert "IncompatibleSchema" in str(refused.value)
    with pytest.raises(Exception, match=r"\$\.id.*cannot read"):
        spark.sql(f"ALTER TABLE {table} ALTER COLUMN id TYPE STRING")
    assert [f.name for f in spark.table(table).schema.fields] == ["id", "name"]
    assert len(RegistryClient(spark_server, scope).versions("t")) == 1

    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('compatibility' = 'ALLOW_ANY')")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN c INT NOT NULL")
    assert [f.name for f in spark.table(table).schema.fields] == ["id", "name", "c"]


def test_rename_table_is_refused_with_a_way_out(spark: Any, scope: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT)")
    with pytest.raises(Exception, match=r"cannot rename streamcat\..*CREATE TABLE"):
        spark.sql(f"ALTER TABLE streamcat.{scope}.t RENAME TO streamcat.{scope}.u")


def test_drop_table_removes_stream_group_and_files(spark: Any, spark_server: str, scope: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.t VALUES (1), (2)")
    catalog = CatalogClient(spark_server)
    location = Path(catalog.get_table(scope, "t")["stream"]["location"])
    assert any(location.rglob("*.parquet"))

    spark.sql(f"DROP TABLE streamcat.{scope}.t")
    assert rows(spark, f"SHOW TABLES IN streamcat.{scope}") == []
    with pytest.raises(NotFound):
        catalog.get_stream(scope, "t")
    with pytest.raises(NotFound):
        RegistryClient(spark_server, scope).get_group("t")
    assert not location.exists()


def test_a_table_at_an_explicit_location_keeps_its_files_even_when_purged(
    spark: Any, scope: str, external: Path
) -> None:
    kept, purged = external / "kept", external / "purged"
    spark.sql(f"CREATE TABLE streamcat.{scope}.kept (id INT) LOCATION '{kept}'")
    spark.sql(f"CREATE TABLE streamcat.{scope}.purged (id INT) LOCATION '{purged}'")
    spark.sql(f"INSERT INTO streamcat.{scope}.kept VALUES (1)")
    spark.sql(f"INSERT INTO streamcat.{scope}.purged VALUES (1)")
    # Spark hands the catalog LOCATION as a URI (file:/...); both forms name the same directory.
    assert describe(spark, f"TABLE EXTENDED streamcat.{scope}.kept")["Location"].removeprefix("file:") == str(kept)

    spark.sql(f"DROP TABLE streamcat.{scope}.kept")
    # The server purges only the locations it gave; an explicit LOCATION is the creator's.
    spark.sql(f"DROP TABLE streamcat.{scope}.purged PURGE")
    assert any(kept.rglob("*.parquet"))
    assert any(purged.rglob("*.parquet"))


def test_a_location_outside_the_allowed_roots_is_refused(
    spark: Any, scope: str, external: Path, tmp_path: Path
) -> None:
    (tmp_path / "sentinel").write_text("x")
    with pytest.raises(Exception, match="not under the warehouse or an allowed root"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT) LOCATION '{tmp_path}'")
    # Spark may resolve the '..' itself before the catalog sees it: refused either way.
    with pytest.raises(Exception, match=r"'\.\.' segment|not under the warehouse"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT) LOCATION '{external}/../../..{tmp_path}'")
    assert rows(spark, f"SHOW TABLES IN streamcat.{scope}") == []
    assert (tmp_path / "sentinel").read_text() == "x"
