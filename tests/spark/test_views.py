"""Views through the catalog shim: Spark's ViewCatalog on Streamcat (docs/views.md)."""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner

from catalog_api.server.cli_spark import spark_conf
from spark_plugin.build import pyspark_home
from tests.spark.helpers import describe, rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def stored(spark_server: str, scope: str, view: str) -> dict[str, Any]:
    """The view as the server keeps it."""
    response = requests.get(f"{spark_server}/v1/scopes/{scope}/views/{view}", timeout=30)
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


@pytest.fixture
def orders(spark: Any, scope: str) -> str:
    """A table ``orders`` with a few rows, in the test's scope."""
    spark.sql(f"CREATE TABLE streamcat.{scope}.orders (id INT, item STRING, qty INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.orders VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'apple', 2)")
    return f"streamcat.{scope}.orders"


@pytest.fixture
def back_to_default(spark: Any) -> Iterator[None]:
    """Tests that USE a namespace leave the shared session where they found it."""
    yield
    spark.sql("USE spark_catalog.default")


def test_create_query_replace_and_drop_a_view(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    big = f"streamcat.{scope}.big"
    query = f"SELECT item, qty FROM {orders} WHERE qty > 1"
    spark.sql(
        f"CREATE VIEW {big} (item COMMENT 'what was sold', qty) COMMENT 'big orders' "
        f"TBLPROPERTIES ('team' = 'sales') AS {query}"
    )
    assert sorted(rows(spark, f"SELECT * FROM {big}")) == sorted(rows(spark, query)) == [("apple", 2), ("apple", 3)]
    # A view is its query: new rows of the table show through it.
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'plum', 5)")
    assert sorted(rows(spark, f"SELECT * FROM {big}")) == sorted(rows(spark, query))
    assert ("plum", 5) in rows(spark, f"SELECT * FROM {big}")

    kept = stored(spark_server, scope, "big")
    assert kept["queryText"] == query
    assert [f["name"] for f in kept["schema"]["fields"]] == ["item", "qty"]
    assert kept["schema"]["fields"][0]["metadata"]["comment"] == "what was sold"
    assert kept["queryColumnNames"] == ["item", "qty"]
    assert (kept["comment"], kept["properties"]["team"]) == ("big orders", "sales")
    assert kept["sqlConfigs"], "Spark hands over the SQL configs the query must be resolved with"
    assert kept["owner"]

    with pytest.raises(Exception, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE VIEW {big} AS SELECT 1 AS one")
    spark.sql(f"CREATE VIEW IF NOT EXISTS {big} AS SELECT 1 AS one")
    assert stored(spark_server, scope, "big")["queryText"] == query, "IF NOT EXISTS leaves the view alone"

    replaced = f"SELECT item, sum(qty) AS total FROM {orders} GROUP BY item"
    spark.sql(f"CREATE OR REPLACE VIEW {big} AS {replaced}")
    assert sorted(rows(spark, f"SELECT * FROM {big}")) == sorted(rows(spark, replaced))
    assert stored(spark_server, scope, "big")["comment"] == "", "a replace is a new definition"

    altered = f"SELECT id FROM {orders} WHERE item = 'apple'"
    spark.sql(f"ALTER VIEW {big} AS {altered}")
    assert sorted(rows(spark, f"SELECT * FROM {big}")) == sorted(rows(spark, altered)) == [(1,), (3,)]
    spark.sql(f"ALTER VIEW {big} SET TBLPROPERTIES ('tier' = 'gold')")
    after = stored(spark_server, scope, "big")
    assert (after["queryText"], after["properties"]["tier"]) == (altered, "gold")

    spark.sql(f"DROP VIEW {big}")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {big}")
    spark.sql(f"DROP VIEW IF EXISTS {big}")
    assert rows(spark, f"SELECT count(*) FROM {orders}") == [(4,)], "dropping a view leaves its table alone"


def test_views_resolve_with_the_captured_namespace_and_over_other_views(
    spark: Any, scope: str, orders: str, back_to_default: None
) -> None:
    spark.sql(f"USE streamcat.{scope}")
    spark.sql("CREATE VIEW apples AS SELECT id, qty FROM orders WHERE item = 'apple'")
    spark.sql("USE spark_catalog.default")
    # The unqualified 'orders' resolves where the view was created, not where it is queried.
    apples = f"streamcat.{scope}.apples"
    oracle = f"SELECT id, qty FROM {orders} WHERE item = 'apple'"
    assert sorted(rows(spark, f"SELECT * FROM {apples}")) == sorted(rows(spark, oracle)) == [(1, 3), (3, 2)]

    spark.sql(f"CREATE VIEW streamcat.{scope}.apple_total AS SELECT sum(qty) AS total FROM {apples}")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.apple_total") == [(5,)]
    spark.sql(f"INSERT INTO {orders} VALUES (9, 'apple', 10)")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.apple_total") == rows(
        spark, f"SELECT sum(qty) FROM {orders} WHERE item = 'apple'"
    )
    joined = f"SELECT o.item, a.qty FROM {orders} o JOIN {apples} a ON o.id = a.id"
    assert sorted(rows(spark, joined)) == [("apple", 2), ("apple", 3), ("apple", 10)]


def test_tables_and_views_share_one_name_space(spark: Any, scope: str, orders: str) -> None:
    view = f"streamcat.{scope}.v"
    spark.sql(f"CREATE VIEW {view} AS SELECT id FROM {orders}")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {view} (id INT)")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE VIEW {orders} AS SELECT 1 AS id")
    with pytest.raises(Exception, match="EXPECT_VIEW_NOT_TABLE"):
        spark.sql(f"CREATE OR REPLACE VIEW {orders} AS SELECT 1 AS id")
    with pytest.raises(Exception, match="WRONG_COMMAND_FOR_OBJECT_TYPE"):
        spark.sql(f"DROP TABLE {view}")
    with pytest.raises(Exception, match="WRONG_COMMAND_FOR_OBJECT_TYPE"):
        spark.sql(f"DROP VIEW {orders}")
    assert rows(spark, f"SELECT count(*) FROM {view}") == [(3,)]
    assert rows(spark, f"SELECT count(*) FROM {orders}") == [(3,)]


def test_show_views_and_describe_extended(spark: Any, scope: str, orders: str) -> None:
    spark.sql(
        f"CREATE VIEW streamcat.{scope}.a (item COMMENT 'the fruit') COMMENT 'fruit' AS SELECT item FROM {orders}"
    )
    spark.sql(f"CREATE VIEW streamcat.{scope}.b AS SELECT id FROM {orders}")
    assert sorted(r[1] for r in rows(spark, f"SHOW VIEWS IN streamcat.{scope}")) == ["a", "b"]
    assert [r[1] for r in rows(spark, f"SHOW VIEWS IN streamcat.{scope} LIKE 'a*'")] == ["a"]
    assert ("orders",) not in [(r[1],) for r in rows(spark, f"SHOW VIEWS IN streamcat.{scope}")]

    info = describe(spark, f"EXTENDED streamcat.{scope}.a")
    assert info["item"] == "string"
    assert info["View Text"] == f"SELECT item FROM {orders}"
    assert info["Comment"] == "fruit"
    assert info["Type"] == "VIEW"
    column_comments = {str(r[0]): r[2] for r in spark.sql(f"DESCRIBE streamcat.{scope}.a").collect()}
    assert column_comments["item"] == "the fruit"


def test_rename_a_view(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    spark.sql(f"CREATE VIEW streamcat.{scope}.old AS SELECT id FROM {orders}")
    spark.sql(f"ALTER VIEW streamcat.{scope}.old RENAME TO {scope}.new")
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.new")) == [(1,), (2,), (3,)]
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM streamcat.{scope}.old")
    assert stored(spark_server, scope, "new")["queryText"] == f"SELECT id FROM {orders}"


def test_a_namespace_with_views_drops_only_with_cascade(spark: Any, spark_server: str, scope: str) -> None:
    spark.sql(f"CREATE VIEW streamcat.{scope}.only AS SELECT 1 AS one")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.only") == [(1,)]
    with pytest.raises(Exception, match="SCHEMA_NOT_EMPTY"):
        spark.sql(f"DROP NAMESPACE streamcat.{scope}")
    spark.sql(f"DROP NAMESPACE streamcat.{scope} CASCADE")
    spark.sql(f"CREATE NAMESPACE streamcat.{scope}")
    assert rows(spark, f"SHOW VIEWS IN streamcat.{scope}") == []


def test_spark_sql_creates_and_queries_a_view(spark_server: str, tmp_path: Path) -> None:
    # The reproduction: in spark-sql, CREATE VIEW failed with a ClassCastException.
    flags = shlex.split(CliRunner().invoke(spark_conf, ["--uri", spark_server]).output)
    scope = f"cli{uuid.uuid4().hex[:10]}"
    statements = f"""
        CREATE NAMESPACE streamcat.{scope};
        CREATE TABLE streamcat.{scope}.t (id INT, name STRING);
        INSERT INTO streamcat.{scope}.t VALUES (1, 'one'), (2, 'two');
        CREATE VIEW streamcat.{scope}.v AS SELECT concat('row:', id, ':', name) AS line FROM streamcat.{scope}.t;
        SELECT line FROM streamcat.{scope}.v ORDER BY line;
        SHOW VIEWS IN streamcat.{scope};
        DROP VIEW streamcat.{scope}.v;
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_HOME"] = str(pyspark_home())
    done = subprocess.run(
        [str(pyspark_home() / "bin" / "spark-sql"), *flags, "-e", statements],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert [line for line in lines if line.startswith("row:")] == ["row:1:one", "row:2:two"]
    assert [line.split() for line in lines if line.split()[-2:-1] == ["v"]] == [[scope, "v", "false"]]
    gone = requests.get(f"{spark_server}/v1/scopes/{scope}/views/v", timeout=30)
    assert gone.status_code == 404
