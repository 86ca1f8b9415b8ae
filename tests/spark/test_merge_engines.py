"""The aggregation and first-row merge engines through Spark: INSERT adds inputs, DELETE removes a key,
reads before and after compaction (the Python merge and Spark's own Parquet scan) agree with a model, and
the change feed shows each commit's effect (docs/changelog-tables.md, "Merge engines")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.helpers import catalog_beside, rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_an_aggregation_table_aggregates_inserts_across_commits_and_compaction(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.totals"
    spark.sql(f"""CREATE TABLE {table} (item STRING NOT NULL, qty BIGINT, n BIGINT, top INT, tags STRING,
                  last_seen STRING, CONSTRAINT totals_pk PRIMARY KEY (item)) USING avro TBLPROPERTIES (
                  'merge-engine' = 'aggregation', 'fields.qty.aggregate-function' = 'sum',
                  'fields.n.aggregate-function' = 'count', 'fields.top.aggregate-function' = 'max',
                  'fields.tags.aggregate-function' = 'listagg')""")
    spark.sql(f"INSERT INTO {table} VALUES ('tea', 2, 7, 3, 'a', 'x'), ('jam', 1, NULL, 9, NULL, 'y'), "
              f"('tea', 5, 7, 1, 'b', NULL)")
    spark.sql(f"INSERT INTO {table} VALUES ('tea', 1, 0, 8, 'c', 'z'), ('cake', 4, 1, 2, 'd', 'w')")
    expected = [("cake", 4, 1, 2, "d", "w"), ("jam", 1, 0, 9, None, "y"), ("tea", 8, 3, 8, "a,b,c", "z")]
    assert rows(spark, f"SELECT * FROM {table} ORDER BY item") == expected
    assert rows(spark, f"SELECT item, qty FROM {table} VERSION AS OF 1 ORDER BY item") == [("jam", 1), ("tea", 7)]
    feed = rows(spark, f"SELECT item, qty, n, _change_type FROM {table} CHANGES FROM VERSION 2 TO VERSION 2 "
                       "ORDER BY item, _change_type")
    assert feed == [("cake", 4, 1, "insert"), ("tea", 8, 3, "update_postimage"), ("tea", 7, 2, "update_preimage")]

    with pytest.raises(Exception, match=r"UPDATE of .*totals: an aggregation table") as refused:
        spark.sql(f"UPDATE {table} SET qty = 0 WHERE item = 'tea'")
    assert "\tat " not in str(refused.value)
    spark.sql(f"DELETE FROM {table} WHERE item = 'jam'")
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.totals')")
    after = [e for e in expected if e[0] != "jam"]
    assert rows(spark, f"SELECT * FROM {table} ORDER BY item") == after
    python_path = catalog_beside(spark, "agg_python", **{"native-scan": "false"})
    assert rows(spark, f"SELECT * FROM {python_path}.{scope}.totals ORDER BY item") == after
    # inputs after the compaction aggregate onto its rows (a count counts each new value once)
    spark.sql(f"INSERT INTO {table} VALUES ('tea', 10, 99, 1, NULL, NULL)")
    assert rows(spark, f"SELECT * FROM {table} WHERE item = 'tea'") == [("tea", 18, 4, 8, "a,b,c", "z")]


def test_a_first_row_table_keeps_the_first_row_of_each_key(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.firsts"
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, v STRING, CONSTRAINT firsts_pk PRIMARY KEY (id)) "
              "USING avro TBLPROPERTIES ('merge-engine' = 'first-row')")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'A'), (3, 'c')")
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'again')")
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [(1, "again"), (2, "b"), (3, "c")]
