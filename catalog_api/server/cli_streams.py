"""``streamcat streams``: stream data maintenance on the admin host (against STREAMCAT_DATABASE_URL)."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from catalog_api.gc import DEFAULT_GRACE_SECONDS, collect_all
from catalog_api.server.config import ConfigError, Settings
from catalog_api.server.extensions import Streamcat
from catalog_api.service import CatalogService
from registry.errors import NotFound, StreamcatError


@click.group()
def streams() -> None:
    """Stream data maintenance: files, chunks, expiry of old cuts."""


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


def _epoch_ms(text: str) -> int:
    """An ISO 8601 time (UTC unless it says otherwise) in epoch milliseconds."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 time (like 2026-11-01T00:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _split(catalog: CatalogService, name: str) -> tuple[str, str]:
    """(scope, stream) of ``SCOPE.STREAM``; names may hold dots, so every split is tried against the catalog."""
    found = []
    for i, char in enumerate(name):
        if char != ".":
            continue
        scope, stream = name[:i], name[i + 1 :]
        try:
            catalog.get_stream(scope, stream)
        except NotFound:
            continue
        found.append((scope, stream))
    if not found:
        raise click.ClickException(f"no stream {name!r}: name it as SCOPE.STREAM")
    if len(found) > 1:
        raise click.ClickException(f"{name!r} names {len(found)} streams: " + ", ".join(f"{a} / {b}" for a, b in found))
    return found[0]


@streams.command()
@click.argument("name", metavar="SCOPE.STREAM")
@click.option("--older-than", "older_than", metavar="ISO8601",
              help="cuts whose commit is older than this may go (default: no time limit)")
@click.option("--retain-last", type=click.IntRange(min=1), help="keep at least the newest N cuts (default: 1)")
def expire(name: str, older_than: str | None, retain_last: int | None) -> None:
    """Expire old cuts of a stream or table: they can no longer be read, and `streams gc` may then
    delete the files only they needed. Never a cut a registered reader still needs."""
    if older_than is None and retain_last is None:
        raise click.UsageError("say which cuts to expire: --older-than, --retain-last, or both")
    older_than_ms = None if older_than is None else _epoch_ms(older_than)
    try:
        streamcat = Streamcat.create(Settings.from_env())
    except ConfigError as e:
        raise click.ClickException(e.message) from None
    try:
        scope, stream = _split(streamcat.catalog, name)
        before = streamcat.catalog.get_stream(scope, stream)
        after = streamcat.catalog.expire(scope, stream, older_than_ms, retain_last)
    except StreamcatError as e:
        raise click.ClickException(e.message) from None
    finally:
        streamcat.close()
    click.echo(
        f"{scope}.{stream}: cuts {after.retained_from} to {after.last_commit} are retained "
        f"(were {before.retained_from} to {before.last_commit})"
    )
