"""What the Spark benchmarks share: the ``--conf`` option, and the whole application served in a thread
of the bench's process on a temporary SQLite database and local warehouse."""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

import spark_plugin
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.support.net import serve_in_thread


def add_conf_option(parser: argparse.ArgumentParser) -> None:
    """``--conf KEY=VALUE`` (repeatable): a Spark setting of the bench's session, for every contender alike."""
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the session, for every contender (repeatable)")


def conf_settings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """The ``--conf`` settings given, in order; a malformed one ends the bench with a usage error."""
    settings: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--conf wants KEY=VALUE, not {item!r}")
        settings[key] = value
    return settings


@contextmanager
def served_catalog(prefix: str) -> Iterator[tuple[str, Path]]:
    """The server's URL and a temporary directory (its database and warehouse are in it), removed after."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        url = f"sqlite:///{root / 'catalog.db'}"
        migrate.upgrade(url)
        with serve_in_thread(create_app(Settings(database_url=url, warehouse=str(root / "warehouse")))) as server:
            yield server, root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def local_session(server: str, root: Path, app: str, cores: int, driver_memory: str,
                  settings: Mapping[str, str] = MappingProxyType({}),
                  extra: Mapping[str, str] = MappingProxyType({})) -> Iterator[Any]:
    """A ``local[cores]`` SparkSession with the Streamcat catalog of ``server``, stopped after: the UI
    off, ``extra`` (the bench's own settings) before the catalog's and ``settings`` (``--conf``) last,
    so that what the user asked for wins."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", driver_memory)
               .config("spark.sql.warehouse.dir", str(root / "spark-warehouse")))
    for key, value in extra.items():
        builder = builder.config(key, value)
    builder = spark_plugin.configure(builder, uri=server)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()
