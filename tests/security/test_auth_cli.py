"""``streamcat users|tokens|grants`` against real databases, the server taking what they made, the
image's bootstrap of the first admin, and the refusal to serve the network anonymously."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from catalog_api.server.config import ConfigError, Settings
from tests.conftest import new_database
from tests.support.auth import Api, auth_server
from tests.support.net import free_port

ENTRYPOINT = Path(__file__).resolve().parents[2] / "docker" / "entrypoint.sh"


def streamcat(url: str, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """``streamcat ARGS`` on the database at ``url``."""
    command = [sys.executable, "-m", "catalog_api.server.cli", *args]
    environ = {**os.environ, "STREAMCAT_DATABASE_URL": url, **env}
    return subprocess.run(command, env=environ, input=stdin, capture_output=True, text=True, timeout=120)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_users_tokens_and_grants_made_on_the_command_line_are_what_the_server_checks(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # PostgreSQL, as in production (each command is a process of its own, a few seconds each; the
    # bootstrap test below runs `users add` on SQLite).
    url = new_database("postgresql", tmp_path, request)
    behind = streamcat(url, "users", "list")
    assert behind.returncode != 0
    assert "streamcat db upgrade" in behind.stderr
    ok(streamcat(url, "db", "upgrade"))

    ok(streamcat(url, "users", "add", "root", "--role", "admin", stdin="root-password\n"))
    ok(streamcat(url, "users", "add", "alice", "--role", "reader", stdin="alice-password\n"))
    ok(streamcat(url, "users", "add", "bob", stdin="bob-password\n"))
    taken = streamcat(url, "users", "add", "alice", stdin="another-password\n")
    assert taken.returncode != 0
    assert "exists already" in taken.stderr
    short = streamcat(url, "users", "add", "carol", stdin="short\n")
    assert short.returncode != 0
    assert "at least 8" in short.stderr
    again = streamcat(url, "users", "add", "alice", "--if-missing")
    assert again.returncode == 0
    assert "exists already" in again.stderr
    users = ok(streamcat(url, "users", "list")).splitlines()
    assert [line.split("\t")[:2] for line in users] == [["alice", "reader"], ["bob", "-"], ["root", "admin"]]

    loader = ok(streamcat(url, "tokens", "create", "loader", "--role", "writer")).strip()
    assert loader.startswith("sct_")
    assert len(loader) > 40
    brief = ok(streamcat(url, "tokens", "create", "brief", "--role", "reader", "--expires-in", "1")).strip()
    tokens = ok(streamcat(url, "tokens", "list"))
    assert "loader\twriter" in tokens
    assert loader not in tokens, "a token is printed once, never listed"

    assert ok(streamcat(url, "grants", "add", "bob", "write", "scope:shop")).strip() == (
        "granted write on namespace:shop to bob"
    )
    ok(streamcat(url, "grants", "add", "oidc:0a1b2c", "read", "table:shop.orders"))
    for bad in (("ghost", "read", "*"), ("bob", "read", "shop")):
        refused = streamcat(url, "grants", "add", *bad)
        assert refused.returncode != 0, bad
        assert refused.stderr.startswith("Error:"), refused.stderr
    assert ok(streamcat(url, "grants", "list")).splitlines() == [
        "bob\twrite\tnamespace:shop",
        "oidc:0a1b2c\tread\tgroup:shop/orders",
    ]

    settings = Settings(database_url=url, warehouse=str(tmp_path / "warehouse"), auth=("basic",))
    with auth_server(settings) as base:
        root, alice, bob = (Api(base, auth=(n, f"{n}-password")) for n in ("root", "alice", "bob"))
        root.ok("POST", "/v1/scopes", json={"scopeName": "shop"})
        root.ok("POST", "/v1/scopes", json={"scopeName": "other"})
        assert alice.call("GET", "/v1/scopes/shop").status_code == 200
        assert alice.call("POST", "/v1/scopes/shop/streams", json={"streamName": "a"}).status_code == 403
        assert bob.call("POST", "/v1/scopes/shop/streams", json={"streamName": "b"}).status_code == 201
        assert bob.call("POST", "/v1/scopes/other/streams", json={"streamName": "b"}).status_code == 403
        assert Api(base, token=loader).call("POST", "/v1/scopes/other/streams", json={"streamName": "l"}).ok
        time.sleep(1.1)
        assert Api(base, token=brief).call("GET", "/v1/scopes").status_code == 401, "expired"

        ok(streamcat(url, "tokens", "revoke", "loader"))
        assert Api(base, token=loader).call("GET", "/v1/scopes").status_code == 401, "revoked at once"
        ok(streamcat(url, "grants", "remove", "bob", "write", "scope:shop"))
        assert bob.call("POST", "/v1/scopes/shop/streams", json={"streamName": "c"}).status_code == 403
        ok(streamcat(url, "users", "remove", "alice"))
        assert alice.call("GET", "/v1/scopes/shop").status_code == 401

    assert streamcat(url, "tokens", "revoke", "bob").returncode != 0, "bob is a user, not a token"


def test_the_image_bootstraps_its_first_admin_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boot.db'}"
    ok(streamcat(url, "db", "upgrade"))
    env = {
        **os.environ,
        "STREAMCAT_DATABASE_URL": url,
        "STREAMCAT_BIN": str(Path(sys.executable).parent / "streamcat"),
        "STREAMCAT_ADMIN_PASSWORD": "first-admin-password",
    }
    run = ["sh", str(ENTRYPOINT), "bootstrap"]
    first = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(run, env={**env, "STREAMCAT_ADMIN_PASSWORD": ""}, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert "exists already" in again.stderr
    assert ok(streamcat(url, "users", "list")).split("\t")[:2] == ["admin", "admin"]
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    ok(streamcat(fresh, "db", "upgrade"))
    missing = subprocess.run(run, env={**env, "STREAMCAT_DATABASE_URL": fresh, "STREAMCAT_ADMIN_PASSWORD": ""},
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0
    assert "STREAMCAT_ADMIN_PASSWORD" in missing.stderr


def test_serve_refuses_the_network_without_authentication(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'open.db'}"
    port = str(free_port())
    refused = streamcat(url, "serve", "--migrate", "--host", "0.0.0.0", "--port", port)
    assert refused.returncode != 0
    assert "refusing to serve on 0.0.0.0 without authentication" in refused.stderr
    assert "STREAMCAT_AUTH=basic" in refused.stderr
    assert "STREAMCAT_ALLOW_ANONYMOUS=true" in refused.stderr


def test_which_binds_need_authentication() -> None:
    for host in ("127.0.0.1", "127.0.0.53", "localhost", "::1", "[::1]"):
        Settings(host=host).validate_serving()
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(ConfigError, match="refusing"):
            Settings(host=host).validate_serving()
        Settings(host=host, auth=("basic",)).validate_serving()
        Settings(host=host, allow_anonymous=True).validate_serving()


def test_auth_settings_are_read_and_checked() -> None:
    assert Settings.from_env({}).auth == ("none",)
    assert Settings.from_env({"STREAMCAT_AUTH": "Basic, oidc", "STREAMCAT_OIDC_ISSUER": "https://i",
                              "STREAMCAT_OIDC_AUDIENCE": "a", "STREAMCAT_OIDC_JWKS": "https://i/jwks"}).auth == (
        "basic",
        "oidc",
    )
    assert Settings.from_env({"STREAMCAT_PUBLIC_ENDPOINTS": "none"}).public_endpoints == ()
    assert Settings.from_env({"STREAMCAT_PUBLIC_ENDPOINTS": "health"}).public_endpoints == ("health",)
    assert Settings.from_env({"STREAMCAT_ALLOW_ANONYMOUS": "true"}).allow_anonymous
    for env, says in (
        ({"STREAMCAT_AUTH": "none,basic"}, "cannot be combined"),
        ({"STREAMCAT_AUTH": "kerberos"}, "STREAMCAT_AUTH must be"),
        ({"STREAMCAT_AUTH": "oidc"}, "STREAMCAT_OIDC_ISSUER"),
        ({"STREAMCAT_PUBLIC_ENDPOINTS": "admin"}, "STREAMCAT_PUBLIC_ENDPOINTS"),
    ):
        with pytest.raises(ConfigError, match=says):
            Settings.from_env(env)


def test_backups_carry_principals_and_grants(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # On PostgreSQL, where a restore must also move the sequences past the restored ids.
    kind = "postgresql"
    source = new_database(kind, tmp_path, request)
    ok(streamcat(source, "db", "upgrade"))
    ok(streamcat(source, "users", "add", "dora", stdin="dora-password\n"))
    ok(streamcat(source, "grants", "add", "dora", "write", "scope:shop"))
    token = ok(streamcat(source, "tokens", "create", "feeder", "--role", "writer")).strip()
    dump = tmp_path / "backup.jsonl"
    ok(streamcat(source, "backup", "--out", str(dump)))
    assert "dora-password" not in dump.read_text()
    assert token not in dump.read_text()

    target = new_database(kind, tmp_path, request)
    ok(streamcat(target, "db", "upgrade"))
    ok(streamcat(target, "restore", str(dump)))
    # New rows after a restore get fresh ids (PostgreSQL sequences moved past the restored ones).
    ok(streamcat(target, "users", "add", "ed", stdin="ed-password\n"))
    ok(streamcat(target, "grants", "add", "ed", "read", "*"))
    settings = Settings(database_url=target, warehouse=str(tmp_path / "warehouse"), auth=("basic",))
    with auth_server(settings) as base:
        Api(base, token=token).ok("POST", "/v1/scopes", json={"scopeName": "shop"})
        dora = Api(base, auth=("dora", "dora-password"))
        assert dora.call("POST", "/v1/scopes/shop/streams", json={"streamName": "d"}).status_code == 201
        assert Api(base, auth=("ed", "ed-password")).call("GET", "/v1/scopes/shop").status_code == 200
