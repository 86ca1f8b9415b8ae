"""``streamcat refresher``: keeps materialized tables fresh, on local Spark or on any Spark master.

    streamcat refresher                          # local[*], the server at $STREAMCAT_URI or :9092
    streamcat refresher --master spark://host:7077 --once

Several may run against one server: each table is refreshed by one refresher at a time (a lease in
the database), and a refresher that dies is taken over when its lease expires (docs/materialized-tables.md).
Continuous tables are stepped incrementally from their source's change feed where their query allows.
"""

from __future__ import annotations

import logging

import click

import spark_plugin
from catalog_api.client import CatalogClient
from catalog_api.server.cli_spark import default_uri


@click.command("refresher")
@click.option("--master", default="local[*]", show_default=True, help="the Spark master the refreshes run on")
@click.option("--uri", help="the Streamcat server (default: $STREAMCAT_URI or http://127.0.0.1:9092)")
@click.option("--catalog", default="streamcat", show_default=True, help="the catalog's name in Spark SQL")
@click.option("--once", is_flag=True, help="one pass over the tables, then exit")
@click.option("--poll", default=5.0, show_default=True, help="seconds between passes (shorter while a continuous "
              "table's freshness asks for it: a tenth of it)")
@click.option("--lease-seconds", default=60, show_default=True, help="a refresh's lease; a dead refresher's "
              "tables are taken over after it")
@click.option("--holder", help="this refresher's name in leases (default: a random one)")
@click.option("--token", envvar="STREAMCAT_TOKEN", help="API token or OIDC access token ($STREAMCAT_TOKEN)")
def refresher_command(master: str, uri: str | None, catalog: str, once: bool, poll: float, lease_seconds: int,
                      holder: str | None, token: str | None) -> None:
    """Refresh materialized tables when their sources change, to their declared freshness."""
    from pyspark.sql import SparkSession

    from catalog_api.materialized.refresher import Refresher

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = uri or default_uri()
    builder = SparkSession.builder.master(master).appName("streamcat-refresher").config("spark.ui.enabled", "false")
    spark = spark_plugin.configure(builder, uri=server, catalog=catalog, token=token).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    refresher = Refresher(spark, CatalogClient(server, token=token), catalog, holder, lease_seconds)
    try:
        if once:
            for attempt in refresher.run_once():
                first = attempt.detail.splitlines()[0] if attempt.detail else ""
                click.echo(f"{attempt.table}: {attempt.outcome} {first}")
        else:
            refresher.run(poll)
    finally:
        spark.stop()
