"""``streamcat users``, ``streamcat tokens``, ``streamcat grants``: principals and their rights,
managed on the admin host against STREAMCAT_DATABASE_URL (the REST API has the same under
``/v1/admin``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TypeVar

import click

from catalog_api.server import migrate
from catalog_api.server.auth.credentials import hash_password, new_token, token_hash
from catalog_api.server.auth.principals import ROLES, parse_role
from catalog_api.server.auth.store import PrincipalStore, StoredPrincipal
from catalog_api.server.config import ConfigError, Settings
from registry.db import make_engine, now_ms
from registry.errors import StreamcatError
from registry.permissions import Permission, Resource

#: Shorter passwords are refused: HTTP Basic passwords are what stands between the network and the data.
MIN_PASSWORD = 8

T = TypeVar("T")

_role = click.option(
    "--role",
    type=click.Choice(sorted(ROLES)),
    help="permission everywhere: reader (read), writer (read, write), admin (everything); "
    "without it, only what grants give",
)


@contextmanager
def _store() -> Iterator[PrincipalStore]:
    try:
        settings = Settings.from_env()
        migrate.require_current(settings.database_url)
    except (ConfigError, migrate.SchemaBehind) as e:
        raise click.ClickException(e.message) from None
    engine = make_engine(settings.database_url)
    try:
        yield PrincipalStore(engine)
    finally:
        engine.dispose()


def _run(action: Callable[[PrincipalStore], T]) -> T:
    with _store() as store:
        try:
            return action(store)
        except StreamcatError as e:
            raise click.ClickException(e.message) from None


def _when(ms: int | None) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _print(principals: list[StoredPrincipal], expiry: bool) -> None:
    for p in principals:
        line = f"{p.name}\t{p.role or '-'}\tcreated {_when(p.created_at)}"
        if expiry:
            expired = p.expires_at is not None and p.expires_at <= now_ms()
            line += f"\texpires {_when(p.expires_at)}" + (" (expired)" if expired else "")
        click.echo(line)


def _read_password() -> str:
    if sys.stdin.isatty():
        password: str = click.prompt("password", hide_input=True, confirmation_prompt=True)
    else:
        # Piped: the first line is the password (printf '%s\n' "$PASSWORD" | streamcat users add ...).
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < MIN_PASSWORD:
        raise click.ClickException(f"the password must have at least {MIN_PASSWORD} characters")
    return password


# -- users ----------------------------------------------------------------------------------------


@click.group()
def users() -> None:
    """Users who sign in with HTTP Basic (STREAMCAT_AUTH=basic)."""


@users.command("add")
@click.argument("name")
@_role
@click.option("--if-missing", is_flag=True, help="do nothing (and succeed) if the user exists already")
def users_add(name: str, role: str | None, if_missing: bool) -> None:
    """Add user NAME; the password is read from standard input (prompted for on a terminal)."""
    if if_missing and any(p.name == name for p in _run(lambda s: s.principals("user"))):
        click.echo(f"user {name} exists already; left as it is", err=True)
        return
    password = _read_password()
    _run(lambda s: s.add_user(name, hash_password(password), parse_role(role)))
    click.echo(f"added user {name}" + (f" with role {role}" if role else " (no role: only what grants give)"))


@users.command("list")
def users_list() -> None:
    """List users: name, role, when added."""
    _print(_run(lambda s: s.principals("user")), expiry=False)


@users.command("remove")
@click.argument("name")
def users_remove(name: str) -> None:
    """Remove user NAME and every grant naming it."""
    _run(lambda s: s.remove(name, "user"))
    click.echo(f"removed user {name}")


# -- tokens ---------------------------------------------------------------------------------------


@click.group()
def tokens() -> None:
    """API tokens: bearer credentials for programs (STREAMCAT_AUTH=basic)."""


@tokens.command("create")
@click.argument("name")
@_role
@click.option(
    "--expires-in", type=click.IntRange(min=1), metavar="SECONDS", help="valid this long (default: until revoked)"
)
def tokens_create(name: str, role: str | None, expires_in: int | None) -> None:
    """Create token NAME and print it, once: only its SHA-256 is kept. Send it as
    ``Authorization: Bearer <token>``."""
    token = new_token()
    expires_at = now_ms() + expires_in * 1000 if expires_in else None
    _run(lambda s: s.add_token(name, token_hash(token), parse_role(role), expires_at))
    click.echo(token)
    what = f"role {role}" if role else "no role: only what grants give"
    click.echo(f"created token {name} ({what}; expires {_when(expires_at)}); it is shown only now", err=True)


@tokens.command("list")
def tokens_list() -> None:
    """List tokens: name, role, when created, when they expire (never their value)."""
    _print(_run(lambda s: s.principals("token")), expiry=True)


@tokens.command("revoke")
@click.argument("name")
def tokens_revoke(name: str) -> None:
    """Revoke token NAME (at once, on every server) and remove every grant naming it."""
    _run(lambda s: s.remove(name, "token"))
    click.echo(f"revoked token {name}")


# -- grants ---------------------------------------------------------------------------------------


@click.group()
def grants() -> None:
    """Permissions of one principal on one resource, beside its role.

    \b
    PERMISSION: read, write or admin (each includes the ones before it)
    RESOURCE:   *, namespace:NS, group:NS/GROUP, scope:S (= namespace:S), table:S.T (= group:S/T)
    PRINCIPAL:  a user or token name, or oidc:<sub> for an OIDC subject
    """


def _grant_args(permission: str, resource: str) -> tuple[Permission, Resource]:
    try:
        return Permission.parse(permission), Resource.parse(resource)
    except StreamcatError as e:
        raise click.ClickException(e.message) from None


@grants.command("add")
@click.argument("principal")
@click.argument("permission")
@click.argument("resource")
def grants_add(principal: str, permission: str, resource: str) -> None:
    """Give PRINCIPAL PERMISSION on RESOURCE."""
    level, target = _grant_args(permission, resource)
    grant = _run(lambda s: s.add_grant(principal, level, target))
    click.echo(f"granted {grant.permission} on {grant.resource} to {grant.principal}")


@grants.command("list")
@click.option("--principal", help="only the grants naming this principal")
def grants_list(principal: str | None) -> None:
    """List grants: principal, permission, resource."""
    for grant in _run(lambda s: s.grants(principal)):
        click.echo(f"{grant.principal}\t{grant.permission}\t{grant.resource}")


@grants.command("remove")
@click.argument("principal")
@click.argument("permission")
@click.argument("resource")
def grants_remove(principal: str, permission: str, resource: str) -> None:
    """Take back PRINCIPAL's PERMISSION on RESOURCE."""
    level, target = _grant_args(permission, resource)
    _run(lambda s: s.remove_grant(principal, level, target))
    click.echo(f"removed {principal}'s {level} on {target}")
