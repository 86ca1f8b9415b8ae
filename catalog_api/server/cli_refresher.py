"""``streamcat refresher``: keeps materialized tables fresh, on local Spark or on any Spark master.

    streamcat refresher                          # local[*], the server at $STREAMCAT_URI or :9092
    streamcat refresher --master spark://host:7077 --once --conf spark.executor.memory=2g

Several may run against one server: each table is refreshed by one refresher at a time (a lease in
the database), and a refresher that dies is taken over when its lease expires (docs/materialized-tables.md).
Continuous tables are stepped incrementally from their source's change feed where their query allows; before
the first pass, the refresher warms its session with dry runs of their steps and says how long that took (a table
that becomes due meanwhile cuts the warming short: it is stepped first, and the rest warmed after).

The server is asked for the tables before Spark starts: an unreachable server or refused credentials is
one line and exit status 1, not a Spark start-up. Spark keeps its catalog in memory and its warehouse in a
temporary directory (nothing is left in the working directory), logs at WARN (``--verbose``: INFO) and
draws no progress bars.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from typing import Any

import click
import requests

import spark_plugin
from catalog_api.client import CatalogClient
from catalog_api.materialized.refresher import Refresher, all_tables, plan_line, warm_key
from catalog_api.materialized.refresher import log as refresher_log
from catalog_api.server.cli_spark import default_uri
from registry.errors import Forbidden, StreamcatError, Unauthorized


def _settings(pairs: tuple[str, ...]) -> dict[str, str]:
    """``--conf KEY=VALUE`` flags as Spark settings."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--conf")
        settings[key.strip()] = value
    return settings


def _unreachable(server: str, error: requests.RequestException) -> str:
    """Why the server could not be reached, in one line (the innermost reason, without urllib3's wrapping)."""
    reason: Any = error.args[0] if error.args else error
    reason = getattr(reason, "reason", reason)
    text = str(reason).rsplit(": ", 1)[-1].strip() or type(error).__name__
    return f"cannot reach the Streamcat server at {server}: {text}"


def _tables(client: CatalogClient, server: str, scopes: tuple[str, ...]) -> list[dict[str, Any]]:
    """The materialized tables, or a one-line ClickException when the server cannot be asked."""
    try:
        return list(all_tables(client, scopes))
    except requests.RequestException as e:
        raise click.ClickException(_unreachable(server, e)) from None
    except (Unauthorized, Forbidden) as e:
        raise click.ClickException(f"the Streamcat server at {server} refused the refresher's credentials: "
                                   f"{e.message}") from None
    except StreamcatError as e:
        raise click.ClickException(f"{server}: {e.message}") from None


def warm(refresher: Refresher, started: float) -> None:
    """Warm the new session before the first pass (Refresher.warm), saying so: what it warms, each table's dry
    runs (or that due work interrupted them), and how long it took from the start of Spark."""
    tables = list(refresher.tables())  # anew: a source may have moved while Spark started
    continuous = sum(1 for table in tables if warm_key(table) is not None)
    click.echo(f"refresher {refresher.holder}: warming: Spark session up in {time.monotonic() - started:.1f} s; "
               f"dry runs of the steps of {continuous} continuous table(s)")
    for attempt in refresher.warm(tables):
        click.echo(attempt.line())
    click.echo(f"refresher {refresher.holder}: warm in {time.monotonic() - started:.1f} s; refreshing")


@click.command("refresher")
@click.option("--master", default="local[*]", show_default=True, help="the Spark master the refreshes run on")
@click.option("--uri", help="the Streamcat server (default: $STREAMCAT_URI or http://127.0.0.1:9092)")
@click.option("--catalog", default="streamcat", show_default=True, help="the catalog's name in Spark SQL")
@click.option("--once", is_flag=True, help="one pass over the tables, then exit (status 1 if a refresh failed)")
@click.option("--poll", default=5.0, show_default=True, help="seconds between passes (shorter while a continuous "
              "table's freshness asks for it: a tenth of it)")
@click.option("--lease-seconds", default=60, show_default=True, help="a refresh's lease; a dead refresher's "
              "tables are taken over after it")
@click.option("--holder", help="this refresher's name in leases (default: a random one)")
@click.option("--token", envvar="STREAMCAT_TOKEN", help="API token or OIDC access token ($STREAMCAT_TOKEN)")
@click.option("--scope", "scopes", multiple=True, metavar="SCOPE",
              help="refresh only the materialized tables of this scope (repeatable; default: every scope)")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="a Spark setting for the refresher's session (repeatable), e.g. spark.executorEnv.X=...")
@click.option("--verbose", is_flag=True, help="Spark's own log at INFO (default WARN), and every table each pass skips")
def refresher_command(master: str, uri: str | None, catalog: str, once: bool, poll: float, lease_seconds: int,
                      holder: str | None, token: str | None, scopes: tuple[str, ...], confs: tuple[str, ...],
                      verbose: bool) -> None:
    """Refresh materialized tables when their sources change, to their declared freshness."""
    settings = _settings(confs)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if verbose:
        logging.getLogger(refresher_log.name).setLevel(logging.DEBUG)
    server = uri or default_uri()
    client = CatalogClient(server, token=token)
    tables = _tables(client, server, scopes)
    refresher_name = holder or Refresher.new_holder()
    if not once:
        now = int(time.time() * 1000)
        click.echo(f"refresher {refresher_name}: {len(tables)} materialized table(s) on {server}")
        for table in tables:
            click.echo(plan_line(table, now, refresher_name))

    from pyspark.sql import SparkSession

    started = time.monotonic()
    warehouse = tempfile.mkdtemp(prefix="streamcat-refresher-")
    try:
        builder: Any = (SparkSession.builder.master(master).appName("streamcat-refresher")
                        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                        .config("spark.sql.catalogImplementation", "in-memory")
                        .config("spark.sql.warehouse.dir", warehouse))
        builder = spark_plugin.configure(builder, uri=server, catalog=catalog, token=token)
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("INFO" if verbose else "WARN")
        if not verbose:
            # A dry run cancelled for due work (Refresher.dry_run) makes Spark's file writer log its abort with a
            # stack trace, where the refresher says "interrupted" in one line; only dry runs use that writer.
            jvm: Any = spark._jvm
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
                "org.apache.spark.sql.execution.datasources.FileFormatWriter", jvm.org.apache.logging.log4j.Level.OFF)
        try:
            refresher = Refresher(spark, client, catalog, refresher_name, lease_seconds, scopes)
            if once:
                attempts = refresher.run_once()
                for attempt in attempts:
                    click.echo(attempt.line())
                if any(a.outcome == "failed" for a in attempts):
                    raise click.exceptions.Exit(1)
            else:
                warm(refresher, started)
                refresher.run(poll)
        finally:
            spark.stop()
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
