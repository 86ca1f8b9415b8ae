"""A refusal reaches a PySpark user as one exception carrying one line that names the table: no Java
frames (PySpark knows the exception's class) and no Python traceback of the data source."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.errors import PySparkException

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def refusal(action: Any) -> str:
    with pytest.raises(PySparkException) as caught:
        action()
    text = str(caught.value)
    assert "\tat " not in text
    assert "Traceback" not in text
    assert "JVM stacktrace" not in text
    return text


def test_catalog_and_procedure_refusals_are_one_line(spark: Any, scope: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id BIGINT) USING avro")
    spark.sql(f"INSERT INTO streamcat.{scope}.t VALUES (1)")

    text = refusal(lambda: spark.sql(f"CREATE TABLE streamcat.{scope}.pq (id INT) USING parquet"))
    assert text.startswith(f"[STREAMCAT_INVALID_ARGUMENT] cannot create streamcat.{scope}.pq USING parquet")
    assert text.endswith("SQLSTATE: 22023")
    assert "\n" not in text

    text = refusal(lambda: spark.sql(f"SELECT * FROM streamcat.{scope}.t VERSION AS OF 99").collect())
    assert f"VERSION AS OF 99 of streamcat.{scope}.t: the table's versions are 0 to 1" in text

    text = refusal(lambda: spark.sql(f"ALTER TABLE streamcat.{scope}.t RENAME TO streamcat.{scope}.u"))
    assert text.startswith(f"[STREAMCAT_UNSUPPORTED_OPERATION] cannot rename streamcat.{scope}.t")

    text = refusal(lambda: spark.sql(f"CALL streamcat.system.set_partitioning(table => '{scope}.t', "
                                     "partitioning => 'days(nosuch)')"))
    assert f"cannot partition {scope}.t by 'days(nosuch)'" in text


def test_the_python_sources_refusals_are_one_line(spark: Any, spark_server: str, scope: str) -> None:
    source = spark.read.format("streamcat").option("uri", spark_server).option("scope", scope)
    text = refusal(lambda: source.option("stream", "nosuch").load().collect())
    assert "Refused: the streamcat data source:" in text
    assert "nosuch" in text

    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id BIGINT) USING avro")
    text = refusal(lambda: source.option("stream", "t").option("rowsPerPartition", "lots").load().collect())
    assert "rowsperpartition" in text.lower()
