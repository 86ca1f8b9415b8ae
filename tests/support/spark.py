"""One local SparkSession (local[2]) for every Spark test, on a server of its own (SQLite backend).

The Spark tests run against one backend only, to keep the suite fast: the catalog's
behaviour on PostgreSQL is covered by the catalog's own tests. A plugin of the root conftest, so that
every test directory (tests/spark, tests/faults) shares the one session.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

import spark_plugin
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.support.net import serve_in_thread


@pytest.fixture(scope="session")
def spark_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A migrated SQLite database, a warehouse directory of the Spark tests' own, and a root
    where tables may be created with an explicit LOCATION."""
    root = tmp_path_factory.mktemp("spark-server")
    url = f"sqlite:///{root / 'catalog.db'}"
    migrate.upgrade(url)
    external = root / "external"
    external.mkdir()
    return Settings(database_url=url, warehouse=str(root / "warehouse"), allowed_locations=(str(external),))


@pytest.fixture(scope="session")
def spark_server(spark_settings: Settings) -> Iterator[str]:
    """The whole application over HTTP, for Spark to talk to."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with serve_in_thread(create_app(spark_settings)) as url:
        yield url


@pytest.fixture(scope="session")
def spark(spark_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's SparkSession, with the catalog ``streamcat`` on the test server."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("streamcat-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + str(tmp_path_factory.mktemp("derby")))
    )
    session = spark_plugin.configure(builder, uri=spark_server).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
