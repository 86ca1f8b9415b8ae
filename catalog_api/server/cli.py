"""The ``streamcat`` command: serve, and manage the database schema.

Each command imports what it needs when it runs (the subcommands' modules when they are first looked
up): a command such as ``streamcat ingest`` then starts without loading the server, the ORM and the
migrations, which it never uses.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from catalog_api.server.config import Settings

#: Commands defined in other modules: name -> (module, attribute), imported when looked up.
LAZY_COMMANDS = {
    "streams": ("catalog_api.server.cli_streams", "streams"),
    "tables": ("catalog_api.server.cli_tables", "tables"),
    "ingest": ("catalog_api.server.cli_ingest", "ingest_command"),
    "spark-conf": ("catalog_api.server.cli_spark", "spark_conf"),
    "users": ("catalog_api.server.cli_auth", "users"),
    "tokens": ("catalog_api.server.cli_auth", "tokens"),
    "grants": ("catalog_api.server.cli_auth", "grants"),
    "refresher": ("catalog_api.server.cli_refresher", "refresher_command"),
}


class LazyGroup(click.Group):
    """A group whose LAZY_COMMANDS are imported only when looked up (listed by name without importing)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = super().get_command(ctx, cmd_name)
        if known is not None or cmd_name not in LAZY_COMMANDS:
            return known
        module, attribute = LAZY_COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attribute} is not a click command")
        return command


def _settings() -> Settings:
    from catalog_api.server.config import ConfigError, Settings

    try:
        return Settings.from_env()
    except ConfigError as e:
        raise click.ClickException(e.message) from None


def _prepare_local_paths(settings: Settings) -> None:
    """Create the directories the embedded defaults live in (SQLite file, warehouse)."""
    if settings.database_url.startswith("sqlite:///"):
        Path(settings.database_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    if "://" not in settings.warehouse:
        Path(settings.warehouse).mkdir(parents=True, exist_ok=True)


@click.group(cls=LazyGroup)
def main() -> None:
    """Streamcat: catalog and schema registry for event streams."""


@main.command()
@click.option("--host", help="address to listen on (STREAMCAT_HOST, default 127.0.0.1)")
@click.option("--port", type=int, help="port to listen on (STREAMCAT_PORT, default 9092)")
@click.option("--workers", type=int, help="gunicorn worker processes (STREAMCAT_WORKERS, default 2)")
@click.option("--migrate", "do_migrate", is_flag=True, help="apply pending database migrations first")
@click.option("--tls-cert", help="PEM certificate (chain) to serve HTTPS with (STREAMCAT_TLS_CERT)")
@click.option("--tls-key", help="PEM private key of --tls-cert (STREAMCAT_TLS_KEY)")
@click.option("--tls-client-ca", help="PEM CA that must sign client certificates: mutual TLS (STREAMCAT_TLS_CLIENT_CA)")
def serve(host: str | None, port: int | None, workers: int | None, do_migrate: bool, tls_cert: str | None,
          tls_key: str | None, tls_client_ca: str | None) -> None:
    """Serve the REST API with gunicorn (HTTPS when given a certificate and key)."""
    from catalog_api.server import migrate
    from catalog_api.server.config import ConfigError

    settings = _settings()
    settings = replace(
        settings,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers or settings.workers,
        tls_cert=tls_cert or settings.tls_cert,
        tls_key=tls_key or settings.tls_key,
        tls_client_ca=tls_client_ca or settings.tls_client_ca,
    )
    try:
        settings.validate()
    except ConfigError as e:
        raise click.ClickException(e.message) from None
    _prepare_local_paths(settings)
    if do_migrate:
        migrate.upgrade(settings.database_url)
    try:
        migrate.require_current(settings.database_url)
        settings.validate_serving()
    except (migrate.SchemaBehind, ConfigError) as e:
        raise click.ClickException(e.message) from None
    # Workers write their metrics to files that /metrics sums; set before prometheus loads.
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="streamcat-metrics-"))
    from catalog_api.server.observability import configure_logging
    from catalog_api.server.wsgi import run

    configure_logging()
    run(settings)


@main.group()
def db() -> None:
    """Database schema migrations (Alembic)."""


@db.command()
@click.argument("revision", default="head")
def upgrade(revision: str) -> None:
    """Apply migrations up to REVISION (default: head)."""
    from catalog_api.server import migrate

    settings = _settings()
    _prepare_local_paths(settings)
    migrate.upgrade(settings.database_url, revision)
    click.echo(f"database at {', '.join(sorted(_current(settings)))}")


@db.command()
@click.argument("revision")
def downgrade(revision: str) -> None:
    """Revert migrations down to REVISION (``base`` removes every table)."""
    from catalog_api.server import migrate

    settings = _settings()
    migrate.downgrade(settings.database_url, revision)
    click.echo(f"database at {', '.join(sorted(_current(settings))) or 'base'}")


def _current(settings: Settings) -> set[str]:
    from catalog_api.server import migrate
    from registry.db import make_engine

    engine = make_engine(settings.database_url)
    try:
        return migrate.current_revisions(engine)
    finally:
        engine.dispose()


@db.command()
def current() -> None:
    """Print the revision the database is at."""
    settings = _settings()
    click.echo(", ".join(sorted(_current(settings))) or "base (empty database)")


@db.command()
def check() -> None:
    """Fail unless the database is at head and matches the ORM models."""
    from catalog_api.server import migrate

    settings = _settings()
    try:
        migrate.require_current(settings.database_url)
    except migrate.SchemaBehind as e:
        raise click.ClickException(e.message) from None
    drift = migrate.model_drift(settings.database_url)
    if drift:
        lines = "\n  ".join(drift)
        raise click.ClickException(f"the models and the migrations differ; add a revision:\n  {lines}")
    click.echo("database is at head and matches the models")


@main.command("backup")
@click.option("--out", "out_path", required=True, help="file to write ('-' for standard output)")
def backup_command(out_path: str) -> None:
    """Write every namespace, group, schema, encoding, scope, stream, table and commit to a file."""
    from catalog_api.server import backup
    from registry.db import make_engine

    engine = make_engine(_settings().database_url)
    with click.open_file(out_path, "w") as out:
        counts = backup.backup(engine, out)
    click.echo(f"backed up {sum(counts.values())} rows: {counts}", err=True)


@main.command("restore")
@click.argument("source")
@click.option("--merge", is_flag=True, help="allow a non-empty database; rows already there are skipped")
def restore_command(source: str, merge: bool) -> None:
    """Load a backup into a migrated, empty database (ids preserved)."""
    from catalog_api.server import backup
    from registry.db import make_engine

    settings = _settings()
    _prepare_local_paths(settings)
    engine = make_engine(settings.database_url)
    try:
        with click.open_file(source, "r") as f:
            counts = backup.restore(engine, f, merge=merge)
    except backup.BackupError as e:
        raise click.ClickException(e.message) from None
    click.echo(f"restored {sum(counts.values())} rows: {counts}", err=True)



def run(argv: list[str] | None = None) -> Any:
    """Entry point for ``python -m catalog_api.server.cli``."""
    return main.main(args=argv if argv is not None else sys.argv[1:], prog_name="streamcat")


if __name__ == "__main__":
    run()
