"""``streamcat tables``: table maintenance through the REST API, run where the data is reachable.

    streamcat tables compact shop.orders --rows-per-chunk 1000000

Compaction runs here, with pyarrow: this command reads the table's chunk files, writes the
compacted ones next to them and asks the server (``--uri``, default ``$STREAMCAT_URI`` or
http://127.0.0.1:9092) to commit; the server never moves data bytes.
"""

from __future__ import annotations

import click

from catalog_api.server.cli_spark import default_uri
from registry.errors import StreamcatError

#: Rows per compacted chunk (catalog_api.streams.compaction.DEFAULT_ROWS_PER_CHUNK; not imported here,
#: so that the ``streamcat`` command starts without pyarrow).
DEFAULT_ROWS_PER_CHUNK = 1_000_000


@click.group()
def tables() -> None:
    """Table maintenance: compaction."""


@tables.command()
@click.argument("table", metavar="SCOPE.TABLE")
@click.option("--rows-per-chunk", type=click.IntRange(min=1), default=DEFAULT_ROWS_PER_CHUNK, show_default=True,
              help="rows per compacted chunk file")
@click.option("--uri", help="the Streamcat server (default: $STREAMCAT_URI or http://127.0.0.1:9092)")
@click.option("--token", envvar="STREAMCAT_TOKEN", help="API token or OIDC access token ($STREAMCAT_TOKEN)")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False),
              help="PEM CA certificates that signed the server's certificate (an https --uri)")
def compact(table: str, rows_per_chunk: int, uri: str | None, token: str | None, ca_bundle: str | None) -> None:
    """Rewrite a table's chunks as large columnar chunks (key-sorted, deletes applied) in one compaction
    commit; concurrent appends go on and are kept. Nothing is committed if the table is already compacted."""
    from catalog_api.client import CatalogClient
    from catalog_api.streams.compaction import compact as run
    from registry.client import RegistryClient
    from registry.credentials import Credentials

    scope, dot, name = table.partition(".")
    if not dot or not scope or not name:
        raise click.UsageError(f"name the table as SCOPE.TABLE, not {table!r}")
    url = uri or default_uri()
    session = Credentials.of(token=token, verify=ca_bundle).session()
    catalog = CatalogClient(url, session=session)
    registry = RegistryClient(url, scope, session=session)
    try:
        result = run(catalog, registry, scope, name, rows_per_chunk=rows_per_chunk)
    except StreamcatError as e:
        raise click.ClickException(e.message) from None
    if result.commit is None:
        click.echo(f"{result.table}: nothing to compact at cut {result.base_cut}")
        return
    click.echo(f"{result.table}: compacted cut {result.base_cut} in commit {result.commit}: "
               f"{result.chunks_removed} chunks -> {result.chunks_written} chunks, {result.rows} rows, "
               f"{result.seconds:.2f} s ({result.rows_per_second:,.0f} rows/s)")
