"""``streamcat streams``: stream data maintenance on the admin host (against STREAMCAT_DATABASE_URL)."""

from __future__ import annotations

import click

from catalog_api.gc import DEFAULT_GRACE_SECONDS, collect_all
from catalog_api.server.config import ConfigError, Settings
from catalog_api.server.extensions import Streamcat
from registry.errors import StreamcatError


@click.group()
def streams() -> None:
    """Stream data maintenance: files, chunks."""


@streams.command()
@click.option("--scope", help="only this scope (default: every scope)")
@click.option("--stream", help="only streams of this name")
@click.option(
    "--grace-seconds",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE_SECONDS,
    show_default=True,
    help="keep unreferenced files younger than this: a writer may be about to commit them",
)
@click.option("--dry-run", is_flag=True, help="list what would be removed, remove nothing")
def gc(scope: str | None, stream: str | None, grace_seconds: float, dry_run: bool) -> None:
    """Remove chunk files that no commit references (left by writers that died before committing)."""
    try:
        streamcat = Streamcat.create(Settings.from_env())
    except ConfigError as e:
        raise click.ClickException(e.message) from None
    catalog = streamcat.catalog
    verb = "would remove" if dry_run else "removed"
    files = size = 0
    try:
        for found in collect_all(catalog, scope, stream, grace_seconds, dry_run=dry_run):
            for path in found.paths:
                click.echo(f"{verb} {found.scope}/{found.stream}: {path}")
            files += len(found.paths)
            size += found.bytes
    except StreamcatError as e:
        raise click.ClickException(e.message) from None
    finally:
        streamcat.close()
    click.echo(f"{verb} {files} files, {size} bytes")
