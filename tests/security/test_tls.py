"""HTTPS and mutual TLS from ``streamcat serve``, and credentials carried by every Python client.

Real certificates (a CA, a server certificate for 127.0.0.1, a client certificate) made by the
test; real gunicorn servers started as child processes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.server.cli import main
from catalog_api.server.config import ConfigError, Settings
from catalog_api.streams import StreamReader, StreamWriter
from registry import errors
from registry.client import RegistryClient, schema_info
from registry.credentials import Credentials
from tests.registry.helpers import avro_record, field, group
from tests.support.cli import streamcat
from tests.support.net import serve_with_gunicorn
from tests.support.tls import Pki, make_ca, make_pki, server_env

PASSWORD = "correct horse battery"
EVENT = schema_info("Avro", json.dumps({
    "type": "record", "name": "Event", "fields": [{"name": "key", "type": "string"}, {"name": "n", "type": "long"}],
}))


@dataclass(frozen=True)
class Server:
    """A running HTTPS server, the CA that signed its certificate, and its principals' credentials."""

    url: str
    pki: Pki
    writer_token: str = ""
    reader_token: str = ""

    @property
    def ca(self) -> str:
        return str(self.pki.ca)

    @property
    def client_cert(self) -> tuple[str, str]:
        return str(self.pki.client_cert), str(self.pki.client_key)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA with a server certificate for 127.0.0.1 and a client certificate."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def https(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """HTTPS with HTTP Basic and API tokens: user ``alice`` and a token that may write, a token that may read."""
    env = server_env(tmp_path_factory.mktemp("https"), pki, STREAMCAT_AUTH="basic")
    streamcat(env, "users", "add", "alice", "--role", "writer", input=f"{PASSWORD}\n")
    writer = streamcat(env, "tokens", "create", "robot", "--role", "writer").strip()
    reader = streamcat(env, "tokens", "create", "auditor", "--role", "reader").strip()
    with serve_with_gunicorn(env, workers=1, verify=str(pki.ca)) as url:
        yield Server(url, pki, writer, reader)


@pytest.fixture(scope="module")
def mutual(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """HTTPS that wants a client certificate signed by the CA (no other authentication)."""
    env = server_env(tmp_path_factory.mktemp("mtls"), pki, mutual=True)
    cert = (str(pki.client_cert), str(pki.client_key))
    with serve_with_gunicorn(env, workers=1, verify=str(pki.ca), cert=cert) as url:
        yield Server(url, pki)


def _ns() -> str:
    return f"ns{uuid.uuid4().hex[:12]}"


# -- HTTPS ----------------------------------------------------------------------------------------


def test_clients_verify_the_server_with_the_ca_bundle(https: Server) -> None:
    assert https.url.startswith("https://127.0.0.1:")
    registry = RegistryClient(https.url, _ns(), token=https.writer_token, verify=https.ca)
    registry.create_group("users", group())
    version = registry.add_schema("users", avro_record("User", field("name", "string")))
    assert registry.versions("users")[0].version == version

    catalog = CatalogClient(https.url, token=https.writer_token, verify=https.ca)
    scope = _ns()
    catalog.create_scope(scope)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
    catalog.create_table(scope, "t", schema)
    assert catalog.get_table(scope, "t")["tableName"] == "t"


def test_a_client_without_the_ca_bundle_fails_verification(https: Server) -> None:
    with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        next(RegistryClient(https.url, _ns(), token=https.writer_token).list_groups())
    with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        CatalogClient(https.url, token=https.writer_token).list_scopes()


def test_a_ca_bundle_given_to_the_client_wins_over_requests_ca_bundle(
    https: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Plain requests lets $REQUESTS_CA_BUNDLE replace a session's bundle; the clients do not.
    make_ca(tmp_path / "other", "Some other CA")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "other" / "ca.pem"))
    assert CatalogClient(https.url, token=https.writer_token, verify=https.ca).list_scopes() is not None
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{https.url}/ping")  # the environment's CA alone does not vouch for the server


# -- credentials ----------------------------------------------------------------------------------


def test_a_token_or_a_user_and_password_authenticate_every_client(https: Server) -> None:
    ns = _ns()
    by_token = RegistryClient(https.url, ns, token=https.writer_token, verify=https.ca)
    by_token.create_group("g", group())
    by_password = RegistryClient(https.url, ns, auth=("alice", PASSWORD), verify=https.ca)
    assert by_password.get_group("g").compatibility == group().compatibility
    catalog = CatalogClient(https.url, auth=("alice", PASSWORD), verify=https.ca)
    scope = _ns()
    catalog.create_scope(scope)
    assert catalog.get_scope(scope)["scopeName"] == scope


def test_missing_or_wrong_credentials_raise_unauthorized_and_missing_rights_forbidden(https: Server) -> None:
    ns = _ns()
    RegistryClient(https.url, ns, token=https.writer_token, verify=https.ca).create_group("g", group())

    with pytest.raises(errors.Unauthorized) as missing:
        RegistryClient(https.url, ns, verify=https.ca).get_group("g")
    assert missing.value.status == 401
    with pytest.raises(errors.Unauthorized, match="password"):
        RegistryClient(https.url, ns, auth=("alice", "not her password"), verify=https.ca).get_group("g")
    with pytest.raises(errors.Unauthorized):
        CatalogClient(https.url, token="sct_not-a-token", verify=https.ca).list_scopes()

    reader = RegistryClient(https.url, ns, token=https.reader_token, verify=https.ca)
    assert reader.get_group("g") is not None
    with pytest.raises(errors.Forbidden) as refused:
        reader.create_group("other", group())
    assert refused.value.status == 403
    with pytest.raises(errors.Forbidden):
        CatalogClient(https.url, token=https.reader_token, verify=https.ca).create_scope(_ns())


def test_the_stream_writer_and_reader_carry_their_clients_credentials(https: Server) -> None:
    catalog = CatalogClient(https.url, token=https.writer_token, verify=https.ca)
    # A registry client of another namespace: the writer and reader re-scope it to the stream's.
    registry = RegistryClient(https.url, "elsewhere", token=https.writer_token, verify=https.ca)
    scope = _ns()
    catalog.create_scope(scope)
    catalog.create_stream(scope, "events")
    RegistryClient(https.url, scope, token=https.writer_token, verify=https.ca).create_group("events", group())

    with StreamWriter(catalog, registry, scope, "events", schema=EVENT) as writer:
        for n in range(10):
            writer.write({"key": f"k{n % 3}", "n": n}, routing_key=f"k{n % 3}")
        writer.flush()
    records = list(StreamReader(catalog, registry, scope, "events").read())
    assert sorted(r["n"] for r in records) == list(range(10))

    anonymous = CatalogClient(https.url, verify=https.ca)
    with pytest.raises(errors.Unauthorized):
        list(StreamReader(anonymous, registry, scope, "events").read())


def test_secrets_never_show_in_a_repr(https: Server) -> None:
    client = CatalogClient(https.url, token=https.writer_token, verify=https.ca)
    by_password = RegistryClient(https.url, auth=("alice", PASSWORD), verify=https.ca)
    shown = " ".join(map(repr, [client.http.auth, by_password.http.auth, Credentials(token=https.writer_token),
                                Credentials(user="alice", password=PASSWORD)]))
    assert https.writer_token not in shown
    assert PASSWORD not in shown
    assert "alice" in shown


# -- mutual TLS -------------------------------------------------------------------------------------


def test_mutual_tls_refuses_a_client_without_a_certificate_and_serves_one_with_it(mutual: Server) -> None:
    with pytest.raises(requests.exceptions.ConnectionError):
        CatalogClient(mutual.url, verify=mutual.ca).list_scopes()
    scope = _ns()
    catalog = CatalogClient(mutual.url, verify=mutual.ca, cert=mutual.client_cert)
    catalog.create_scope(scope)
    registry = RegistryClient(mutual.url, scope, verify=mutual.ca, cert=mutual.client_cert)
    registry.create_group("g", group())
    assert scope in [s["scopeName"] for s in catalog.list_scopes()]
    assert registry.get_group("g") is not None


# -- settings -------------------------------------------------------------------------------------


def test_tls_settings_go_together_and_must_load(pki: Pki, tmp_path: Path) -> None:
    base = {"STREAMCAT_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "STREAMCAT_WAREHOUSE": str(tmp_path)}
    cert, key, ca = str(pki.server_cert), str(pki.server_key), str(pki.ca)
    ok = Settings.from_env({**base, "STREAMCAT_TLS_CERT": cert, "STREAMCAT_TLS_KEY": key,
                            "STREAMCAT_TLS_CLIENT_CA": ca})
    assert (ok.tls, ok.tls_client_ca) == (True, ca)
    assert not Settings.from_env(base).tls

    refused = {
        "go together": {"STREAMCAT_TLS_CERT": cert},
        "needs STREAMCAT_TLS_CERT": {"STREAMCAT_TLS_CLIENT_CA": ca},
        "not a file": {"STREAMCAT_TLS_CERT": cert, "STREAMCAT_TLS_KEY": str(tmp_path / "missing.pem")},
        "do not load": {"STREAMCAT_TLS_CERT": str(pki.client_cert), "STREAMCAT_TLS_KEY": key},  # not its key
    }
    for message, env in refused.items():
        with pytest.raises(ConfigError, match=message):
            Settings.from_env({**base, **env})


def test_serve_refuses_half_a_tls_configuration_with_a_clear_message(pki: Pki, tmp_path: Path) -> None:
    env = {"STREAMCAT_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "STREAMCAT_WAREHOUSE": str(tmp_path)}
    result = CliRunner().invoke(main, ["serve", "--tls-cert", str(pki.server_cert)], env=env)
    assert result.exit_code != 0
    assert "STREAMCAT_TLS_CERT and STREAMCAT_TLS_KEY go together" in result.output
