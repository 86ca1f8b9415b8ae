"""The Spark catalog plugin: a Java catalog shim plus the Python data source ``pyspark_streamcat``.

PySpark users configure a session builder::

    from pyspark.sql import SparkSession
    import spark_plugin

    spark = spark_plugin.configure(SparkSession.builder, uri="http://localhost:9092").getOrCreate()
    spark.sql("CREATE NAMESPACE streamcat.sales")

``spark-sql`` / ``spark-submit`` users pass the flags ``streamcat spark-conf`` prints.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CATALOG_CLASS", "configure", "jar_path", "spark_conf"]

#: The catalog class of the Java shim.
CATALOG_CLASS = "streamcat.spark.StreamcatCatalog"

Builder = TypeVar("Builder")


def jar_path() -> Path:
    """The shim's jar, compiled against the installed pyspark if it is not cached yet."""
    from spark_plugin.build import build  # imported here: ``python -m spark_plugin.build`` runs it as __main__

    return build()


def spark_conf(uri: str, catalog: str = "streamcat", python: str | None = None) -> dict[str, str]:
    """The Spark settings that make ``catalog`` a Streamcat catalog served at ``uri``.

    ``python`` is the interpreter Spark's Python workers run (default: this one, which has
    the project, pyarrow and the data source installed).
    """
    interpreter = python or sys.executable
    return {
        "spark.jars": str(jar_path()),
        f"spark.sql.catalog.{catalog}": CATALOG_CLASS,
        f"spark.sql.catalog.{catalog}.uri": uri,
        "spark.pyspark.python": interpreter,
        "spark.pyspark.driver.python": interpreter,
        "spark.executorEnv.PYSPARK_PYTHON": interpreter,
    }


def configure(builder: Builder, uri: str, catalog: str = "streamcat", python: str | None = None) -> Builder:
    """Set :func:`spark_conf` on a ``SparkSession.Builder``; returns the builder for chaining."""
    target: Any = builder
    for key, value in spark_conf(uri, catalog, python).items():
        target = target.config(key, value)
    return builder
