"""``streamcat spark-conf``: the flags that give spark-sql / spark-submit / pyspark a Streamcat catalog.

    spark-sql $(streamcat spark-conf --uri http://localhost:9092)

builds the catalog shim's jar first if it is not cached yet (see ``spark_plugin.build``).
"""

from __future__ import annotations

import os
import shlex

import click


def default_uri() -> str:
    """``$STREAMCAT_URI``, else the local server on ``$STREAMCAT_PORT`` (default 9092)."""
    return os.environ.get("STREAMCAT_URI") or f"http://127.0.0.1:{os.environ.get('STREAMCAT_PORT') or 9092}"


@click.command("spark-conf")
@click.option("--uri", help="the Streamcat server Spark talks to (default: $STREAMCAT_URI or http://127.0.0.1:9092)")
@click.option("--catalog", default="streamcat", show_default=True, help="the name of the catalog in Spark SQL")
@click.option("--python", help="the interpreter of Spark's Python workers (default: the one running this command)")
@click.option("--properties", is_flag=True, help="print spark-defaults.conf lines instead of command-line flags")
def spark_conf(uri: str | None, catalog: str, python: str | None, properties: bool) -> None:
    """Print the --jars / --conf flags (or spark-defaults.conf lines) for a Streamcat catalog."""
    from spark_plugin import spark_conf as settings
    from spark_plugin.build import BuildError

    try:
        conf = settings(uri or default_uri(), catalog, python)
    except BuildError as e:
        raise click.ClickException(str(e)) from None
    if properties:
        for key, value in conf.items():
            click.echo(f"{key} {value}")
        return
    click.echo(f"--jars {shlex.quote(conf.pop('spark.jars'))}")
    for key, value in conf.items():
        click.echo(f"--conf {shlex.quote(f'{key}={value}')}")
