"""``streamcat spark-conf``: the flags that give spark-sql / spark-submit / pyspark a Streamcat catalog.

    spark-sql $(streamcat spark-conf --uri http://localhost:9092)

builds the catalog shim's jar first if it is not cached yet (see ``spark_plugin.build``).
Credentials (``--token``, or ``--user`` with ``--password-stdin``) are printed too: flags on a
command line are visible to other users of the machine, so for a shared machine prefer
``--properties`` into a ``spark-defaults.conf`` only you can read.
"""

from __future__ import annotations

import os
import shlex
import sys

import click

import spark_plugin
from spark_plugin.build import BuildError


def default_uri() -> str:
    """``$STREAMCAT_URI``, else the local server on ``$STREAMCAT_PORT`` (default 9092)."""
    return os.environ.get("STREAMCAT_URI") or f"http://127.0.0.1:{os.environ.get('STREAMCAT_PORT') or 9092}"


def _password(user: str | None, from_stdin: bool) -> str | None:
    if not from_stdin:
        if user:
            raise click.UsageError("--user needs --password-stdin (a password is never a command-line argument)")
        return None
    if not user:
        raise click.UsageError("--password-stdin needs --user")
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise click.UsageError("no password on standard input")
    return password


@click.command("spark-conf")
@click.option("--uri", help="the Streamcat server Spark talks to (default: $STREAMCAT_URI or http://127.0.0.1:9092)")
@click.option("--catalog", default="streamcat", show_default=True, help="the name of the catalog in Spark SQL")
@click.option("--python", help="the interpreter of Spark's Python workers (default: the one running this command)")
@click.option("--token", envvar="STREAMCAT_TOKEN", help="API token or OIDC access token ($STREAMCAT_TOKEN)")
@click.option("--user", help="user for HTTP Basic (the password is read from standard input: --password-stdin)")
@click.option("--password-stdin", is_flag=True, help="read --user's password from the first line of standard input")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False),
              help="PEM CA certificates that signed the server's certificate (an https --uri)")
@click.option("--client-cert", type=click.Path(exists=True, dir_okay=False),
              help="PEM client certificate, for a server that requires one (mutual TLS)")
@click.option("--client-key", type=click.Path(exists=True, dir_okay=False),
              help="PEM (PKCS#8) key of --client-cert, if not in the same file")
@click.option("--properties", is_flag=True, help="print spark-defaults.conf lines instead of command-line flags")
def spark_conf(uri: str | None, catalog: str, python: str | None, token: str | None, user: str | None,
               password_stdin: bool, ca_bundle: str | None, client_cert: str | None, client_key: str | None,
               properties: bool) -> None:
    """Print the --jars / --conf flags (or spark-defaults.conf lines) for a Streamcat catalog."""
    password = _password(user, password_stdin)
    try:
        conf = spark_plugin.spark_conf(uri or default_uri(), catalog, python, token=token, user=user,
                                       password=password, ca_bundle=ca_bundle, client_cert=client_cert,
                                       client_key=client_key)
    except BuildError as e:
        raise click.ClickException(str(e)) from None
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if properties:
        for key, value in conf.items():
            click.echo(f"{key} {value}")
        return
    click.echo(f"--jars {shlex.quote(conf.pop('spark.jars'))}")
    for key, value in conf.items():
        click.echo(f"--conf {shlex.quote(f'{key}={value}')}")
