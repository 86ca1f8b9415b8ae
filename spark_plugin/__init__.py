"""The Spark catalog plugin: a Java catalog shim plus the Python data source ``pyspark_streamcat``.

PySpark users configure a session builder::

    from pyspark.sql import SparkSession
    import spark_plugin

    spark = spark_plugin.configure(SparkSession.builder, uri="http://localhost:9092").getOrCreate()
    spark.sql("CREATE NAMESPACE streamcat.sales")

``spark-sql`` / ``spark-submit`` users pass the flags ``streamcat spark-conf`` prints. A server
that wants credentials gets them from ``token=`` (or ``user=`` and ``password=``); one with a
certificate of a private CA is trusted through ``ca_bundle=`` (see ``CatalogCredentials.java``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TypeVar

from registry.credentials import Credentials

__all__ = ["CATALOG_CLASS", "EXTENSIONS_CLASS", "catalog_conf", "configure", "jar_path", "spark_conf", "warehouse_dir"]

#: The catalog class of the Java shim.
CATALOG_CLASS = "streamcat.spark.StreamcatCatalog"
#: The session extension of the Java shim: Spark SQL's parser, plus the materialized-table statements.
EXTENSIONS_CLASS = "streamcat.spark.StreamcatSqlExtensions"

Builder = TypeVar("Builder")


def jar_path() -> Path:
    """The shim's jar, compiled against the installed pyspark if it is not cached yet."""
    from spark_plugin.build import build  # imported here: ``python -m spark_plugin.build`` runs it as __main__

    return build()


def catalog_conf(
    uri: str,
    catalog: str = "streamcat",
    *,
    token: str | None = None,
    user: str | None = None,
    password: str | None = None,
    ca_bundle: str | os.PathLike[str] | None = None,
    client_cert: str | os.PathLike[str] | None = None,
    client_key: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """The settings of one Streamcat catalog (no jar, no Python): what ``spark.conf.set`` can add to a
    running session. Files are made absolute: Spark may run elsewhere."""

    def absolute(path: str | os.PathLike[str] | None) -> str | None:
        return str(Path(path).absolute()) if path else None

    cert, key = absolute(client_cert), absolute(client_key)
    if key and not cert:
        raise ValueError("client_key needs client_cert")
    credentials = Credentials(token=token, user=user, password=password, verify=absolute(ca_bundle) or True,
                              cert=(cert, key) if cert and key else cert)
    prefix = f"spark.sql.catalog.{catalog}"
    conf = {prefix: CATALOG_CLASS, f"{prefix}.uri": uri}
    conf.update({f"{prefix}.{k}": v for k, v in credentials.to_options().items()})
    return conf


def spark_conf(
    uri: str, catalog: str = "streamcat", python: str | None = None, **credentials: Any
) -> dict[str, str]:
    """The Spark settings that make ``catalog`` a Streamcat catalog served at ``uri``.

    ``python`` is the interpreter Spark's Python workers run (default: this one, which has
    the project, pyarrow and the data source installed). ``credentials``: the keyword
    arguments of :func:`catalog_conf` (``token``, ``user``, ``password``, ``ca_bundle``, ...).
    """
    interpreter = python or sys.executable
    return {
        "spark.jars": str(jar_path()),
        **catalog_conf(uri, catalog, **credentials),
        # the materialized-table statements (CREATE MATERIALIZED TABLE ...): docs/materialized-tables.md
        "spark.sql.extensions": EXTENSIONS_CLASS,
        "spark.pyspark.python": interpreter,
        "spark.pyspark.driver.python": interpreter,
        "spark.executorEnv.PYSPARK_PYTHON": interpreter,
        **SESSION_CONF,
        "spark.sql.warehouse.dir": str(warehouse_dir()),
    }


#: Spark settings that keep a session from writing into its working directory: the session catalog in
#: memory (no Derby ``metastore_db`` there, whose lock a second spark-sql in the same directory fails on;
#: streamcat tables live in the streamcat catalog anyway), and spark-sql's results under their column names.
SESSION_CONF = {
    "spark.sql.catalogImplementation": "in-memory",
    "spark.sql.cli.print.header": "true",
}


def warehouse_dir() -> Path:
    """Where Spark's own session catalog keeps its (unused) warehouse: beside the plugin's jar, not in the
    working directory, so that no ``spark-warehouse/`` is left behind there."""
    from spark_plugin.build import cache_dir

    return cache_dir() / "spark-warehouse"


def configure(
    builder: Builder, uri: str, catalog: str = "streamcat", python: str | None = None, **credentials: Any
) -> Builder:
    """Set :func:`spark_conf` on a ``SparkSession.Builder``; returns the builder for chaining."""
    target: Any = builder
    for key, value in spark_conf(uri, catalog, python, **credentials).items():
        target = target.config(key, value)
    return builder
