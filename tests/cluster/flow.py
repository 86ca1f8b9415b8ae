"""The core flow on a Spark cluster, as a PySpark program for ``spark-submit``: run by tests/cluster/.

    spark-submit --master spark://... flow.py SCOPE CHECKPOINTS CATALOG [CATALOG ...]

For each catalog (each a Streamcat server, configured by ``spark.sql.catalog.<name>.*``): CREATE, INSERT,
SELECT, MERGE into a primary-key table, a change feed (CHANGES), an availableNow streaming query into
another table, and a materialized table (created, then its source changed for the refresher to catch up).
What it sees is printed as one ``RESULT <catalog> <json>`` line per catalog.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession


def one(spark: SparkSession, sql: str) -> list[Any]:
    """The first row of a query, as a list."""
    return list(spark.sql(sql).collect()[0])


def flow(spark: SparkSession, catalog: str, scope: str, checkpoints: str) -> dict[str, Any]:
    """The core flow in ``catalog``.``scope``; what it saw."""
    ns = f"{catalog}.{scope}"
    spark.sql(f"CREATE NAMESPACE {ns}")
    spark.sql(f"CREATE TABLE {ns}.orders (id BIGINT, item STRING, qty INT) USING avro")
    # Four tasks: both executors write chunk files.
    spark.sql(f"INSERT INTO {ns}.orders SELECT id, IF(id % 2 = 0, 'tea', 'cake'), 1 FROM range(0, 1000, 1, 4)")
    seen: dict[str, Any] = {"orders": one(spark, f"SELECT count(*), sum(qty), count(DISTINCT id) FROM {ns}.orders")}

    spark.sql(f"CREATE TABLE {ns}.stock (id BIGINT NOT NULL, item STRING, qty INT, "
              "CONSTRAINT stock_pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO {ns}.stock SELECT id, 'old', 1 FROM range(0, 100, 1, 4)")
    spark.sql(f"MERGE INTO {ns}.stock t USING (SELECT id, 'new' AS item, 5 AS qty FROM range(90, 110, 1, 2)) s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET item = s.item, qty = s.qty "
              "WHEN NOT MATCHED THEN INSERT *")
    seen["stock"] = one(spark, f"SELECT count(*), count_if(item = 'new'), sum(qty) FROM {ns}.stock")
    changes = spark.sql(f"SELECT _change_type, count(*) FROM {ns}.stock CHANGES FROM VERSION 2 TO VERSION 2 "
                        "GROUP BY _change_type").collect()
    seen["changes"] = dict(changes)

    spark.sql(f"CREATE TABLE {ns}.orders_copy (id BIGINT, item STRING, qty INT) USING avro")
    query = (spark.readStream.table(f"{ns}.orders").writeStream
             .option("checkpointLocation", f"{checkpoints}/{catalog}")
             .trigger(availableNow=True).toTable(f"{ns}.orders_copy"))
    query.awaitTermination()
    seen["copy"] = one(spark, f"SELECT count(*), count(DISTINCT id) FROM {ns}.orders_copy")

    spark.sql(f"CALL {catalog}.system.create_materialized_table(table => '{scope}.revenue', "
              f"query => 'SELECT item, sum(qty) AS qty FROM {ns}.orders GROUP BY item', freshness => '1 second', "
              "refresh_mode => 'full', primary_key => 'item')")
    seen["revenue"] = sorted(tuple(r) for r in spark.sql(f"SELECT item, qty FROM {ns}.revenue").collect())
    # The source changes: the refresher has a refresh to do.
    spark.sql(f"INSERT INTO {ns}.orders VALUES (1000, 'tea', 10), (1001, 'cake', 20)")
    return seen


def main(argv: list[str]) -> None:
    scope, checkpoints, *catalogs = argv
    spark = SparkSession.builder.appName("streamcat-cluster-flow").getOrCreate()
    try:
        for catalog in catalogs:
            print(f"RESULT {catalog} {json.dumps(flow(spark, catalog, scope, checkpoints))}", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
