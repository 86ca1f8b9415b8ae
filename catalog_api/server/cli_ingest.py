"""``streamcat ingest``: apply a file of Debezium change events to a primary-key table, through the REST API.

    streamcat ingest --table shop.orders --format debezium-json --writer-id orders-cdc changes.jsonl

Chunk files are written straight to the table's location (as every producer writes them) and
committed through the server at ``--uri``; see ``catalog_api.streams.debezium`` for the formats,
types, deduplication and exactly-once rules.
"""

from __future__ import annotations

import atexit
import gc
import sys

import click
import requests

from catalog_api.client import CatalogClient
from catalog_api.server.cli_spark import default_uri
from catalog_api.streams.debezium.decoder import DEFAULT_BATCH_SIZE, DebeziumError
from catalog_api.streams.debezium.ingest import IngestResult, ingest
from catalog_api.streams.debezium.values import DECIMAL_MODES
from registry.client import RegistryClient
from registry.errors import StreamcatError

FORMATS = ("debezium-json",)


def _summary(result: IngestResult) -> str:
    rate = result.events / result.seconds if result.seconds > 0 else 0.0
    mark = result.mark.to_property() if result.mark is not None else "none"
    return (f"{result.commits} commits ({result.repeated} already committed), {result.lines} lines, "
            f"{result.events} events: {result.applied} applied, {result.duplicates} duplicates skipped, "
            f"{result.tombstones} tombstones; {result.rows} rows written in {result.seconds:.2f} s "
            f"({rate:,.0f} events/s, {result.workers} decoding process{'es' if result.workers > 1 else ''}); "
            f"writer {result.writer_id}, source position {mark}")


@click.command("ingest")
@click.argument("source", metavar="FILE|-")
@click.option("--table", "table_name", required=True, metavar="SCOPE.TABLE", help="the primary-key table to apply to")
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="the input's format")
@click.option("--writer-id", help="a stable id makes re-runs exactly-once: they resume after its last commit")
@click.option("--batch-size", type=click.IntRange(min=1), default=DEFAULT_BATCH_SIZE, show_default=True,
              help="applied events per commit")
@click.option("--decimal-handling", type=click.Choice(DECIMAL_MODES), default="precise", show_default=True,
              help="how the connector encodes decimals (an envelope with a schema says so itself)")
@click.option("--uri", "--url", "uri", envvar="STREAMCAT_URL",
              help="the Streamcat server (default: $STREAMCAT_URL, $STREAMCAT_URI or http://127.0.0.1:9092)")
@click.option("--token", envvar="STREAMCAT_TOKEN", help="API token or OIDC access token ($STREAMCAT_TOKEN)")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False),
              help="PEM CA certificates that signed the server's certificate (an https --uri)")
@click.option("--workers", type=click.IntRange(min=1), envvar="STREAMCAT_INGEST_WORKERS",
              help="processes that decode lines (default: $STREAMCAT_INGEST_WORKERS, else one per CPU; "
                   "input under 16 MB is decoded in one)")
@click.option("--quiet", is_flag=True, help="print only the summary")
def ingest_command(source: str, table_name: str, fmt: str, writer_id: str | None, batch_size: int,
                   decimal_handling: str, uri: str | None, token: str | None, ca_bundle: str | None,
                   workers: int | None, quiet: bool) -> None:
    """Apply Debezium JSON change events (one per line; FILE or - for standard input) to a primary-key
    table, in commits of --batch-size events. A line that cannot be applied stops the ingest, naming
    it; the commits before it stay."""
    scope, dot, table = table_name.partition(".")
    if not dot or not scope or not table:
        raise click.UsageError("--table is SCOPE.TABLE")
    url = uri or default_uri()
    # When the process ends, the interpreter's last garbage collections walk every object of pyarrow, numpy,
    # pydantic and the rest: 0.2 s after a large ingest. Frozen, those objects are still freed with their
    # modules; only cycles among them are left to the ending process (the ingest has closed its files).
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    catalog = CatalogClient(url, token=token, verify=ca_bundle)
    registry = RegistryClient(url, scope, token=token, verify=ca_bundle)

    committed = [0]

    def progress(result: IngestResult) -> None:
        committed[0] = result.lines
        if not quiet:
            click.echo(f"commit {result.last_commit}: through line {result.lines}, {result.applied} applied",
                       err=True)

    try:
        if source == "-":
            result = ingest(catalog, registry, scope, table, sys.stdin.buffer, writer_id=writer_id,
                            batch_size=batch_size, decimal_handling=decimal_handling, on_commit=progress,
                            workers=workers)
        else:
            with open(source, "rb", buffering=1 << 20) as lines:
                result = ingest(catalog, registry, scope, table, lines, writer_id=writer_id,
                                batch_size=batch_size, decimal_handling=decimal_handling, on_commit=progress,
                                workers=workers)
    except DebeziumError as e:
        done = f"lines up to {committed[0]} are committed" if committed[0] else "nothing was committed"
        raise click.ClickException(f"{source}: {e}; nothing of its batch was committed ({done})") from None
    except (StreamcatError, ValueError, TypeError) as e:
        raise click.ClickException(str(e)) from None
    except requests.RequestException as e:
        raise click.ClickException(f"cannot reach {url}: {e}") from None
    except OSError as e:
        raise click.ClickException(str(e)) from None
    click.echo(_summary(result))


if __name__ == "__main__":
    ingest_command()
