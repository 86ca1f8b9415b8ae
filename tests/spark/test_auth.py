"""Spark against a server that wants credentials and speaks (mutual) TLS.

The shared session keeps its own catalog; each test registers catalogs of its own on the
secure server with ``spark.conf.set`` (Spark loads a catalog by name on first use), so that
one session holds catalogs with different credentials.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from pyspark_streamcat.options import SourceOptions

import spark_plugin
from catalog_api.server.cli_spark import spark_conf
from spark_plugin.build import pyspark_home
from tests.spark.helpers import rows
from tests.support.cli import streamcat
from tests.support.net import serve_with_gunicorn
from tests.support.tls import Pki, make_pki, server_env

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


@dataclass(frozen=True)
class Secure:
    """The server (HTTPS, client certificates required, HTTP Basic and API tokens) and what it knows."""

    url: str
    pki: Pki
    admin_token: str
    scoped_token: str
    #: the scope the scoped token may write, and one it may not touch
    mine: str
    theirs: str

    def tls(self) -> dict[str, Any]:
        """What every catalog needs to reach the server: its CA and our client certificate."""
        return {"ca_bundle": self.pki.ca, "client_cert": self.pki.client_cert, "client_key": self.pki.client_key}

    def refusal(self, path: str, token: str | None = None) -> str:
        """The message the server answers ``GET path`` with (it must be a refusal)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        answer = requests.get(f"{self.url}{path}", headers=headers, verify=str(self.pki.ca),
                              cert=(str(self.pki.client_cert), str(self.pki.client_key)), timeout=30)
        assert answer.status_code in (401, 403), answer.text
        return str(answer.json()["error"]["message"])


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    """One secure server for the module: an admin token, and a token that may write one scope only."""
    root = tmp_path_factory.mktemp("secure")
    pki = make_pki(root / "pki")
    env = server_env(root, pki, mutual=True, STREAMCAT_AUTH="basic")
    mine, theirs = f"mine{uuid.uuid4().hex[:8]}", f"theirs{uuid.uuid4().hex[:8]}"
    admin = streamcat(env, "tokens", "create", "admin", "--role", "admin").strip()
    scoped = streamcat(env, "tokens", "create", "etl").strip()
    streamcat(env, "grants", "add", "etl", "write", f"scope:{mine}")
    cert = (str(pki.client_cert), str(pki.client_key))
    with serve_with_gunicorn(env, workers=1, verify=str(pki.ca), cert=cert) as url:
        yield Secure(url, pki, admin, scoped, mine, theirs)


def catalog(spark: Any, secure: Secure, **credentials: Any) -> str:
    """A new catalog on the secure server in the running session; its name."""
    name = f"sc{uuid.uuid4().hex[:10]}"
    for key, value in spark_plugin.catalog_conf(secure.url, name, **credentials).items():
        spark.conf.set(key, value)
    return name


def refused(spark: Any, statement: str) -> str:
    """The message of the error ``statement`` fails with (PySpark's own, for a failure of the catalog)."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as caught:
        spark.sql(statement).collect()
    message = str(caught.value)
    assert "\tat " not in message, message  # the server's words, not Java frames
    return message


def test_spark_reads_and_writes_over_https_with_a_token(spark: Any, secure: Secure) -> None:
    cat = catalog(spark, secure, token=secure.admin_token, **secure.tls())
    scope = f"ns{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE {cat}.{scope}")
    spark.sql(f"CREATE TABLE {cat}.{scope}.t (id INT, name STRING)")
    spark.sql(f"INSERT INTO {cat}.{scope}.t VALUES (1, 'one'), (2, 'two')")
    spark.createDataFrame([(3, "three")], "id INT, name STRING").writeTo(f"{cat}.{scope}.t").append()
    assert rows(spark, f"SELECT * FROM {cat}.{scope}.t ORDER BY id") == [(1, "one"), (2, "two"), (3, "three")]

    # The data source used directly takes the same credentials as options.
    direct = (spark.read.format("streamcat").option("uri", secure.url).option("scope", scope).option("table", "t")
              .option("token", secure.admin_token).option("ca-bundle", str(secure.pki.ca))
              .option("client-cert", str(secure.pki.client_cert)).option("client-key", str(secure.pki.client_key)))
    assert sorted(tuple(r) for r in direct.load().collect()) == [(1, "one"), (2, "two"), (3, "three")]

    shown = [str(r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {cat}.{scope}.t").collect()]
    shown += [str(r) for r in spark.sql(f"EXPLAIN EXTENDED SELECT * FROM {cat}.{scope}.t WHERE id > 1").collect()]
    assert not [line for line in shown if secure.admin_token in line]


def test_a_token_for_one_scope_works_there_and_is_refused_elsewhere(spark: Any, secure: Secure) -> None:
    admin = catalog(spark, secure, token=secure.admin_token, **secure.tls())
    for scope in (secure.mine, secure.theirs):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {admin}.{scope}")
    spark.sql(f"CREATE TABLE {admin}.{secure.theirs}.secret (id INT)")
    spark.sql(f"INSERT INTO {admin}.{secure.theirs}.secret VALUES (42)")

    etl = catalog(spark, secure, token=secure.scoped_token, **secure.tls())
    spark.sql(f"CREATE TABLE {etl}.{secure.mine}.t (id INT, name STRING)")
    spark.sql(f"INSERT INTO {etl}.{secure.mine}.t VALUES (1, 'one')")
    spark.createDataFrame([(2, "two")], "id INT, name STRING").writeTo(f"{etl}.{secure.mine}.t").append()
    assert rows(spark, f"SELECT * FROM {etl}.{secure.mine}.t ORDER BY id") == [(1, "one"), (2, "two")]
    spark.sql(f"ALTER TABLE {etl}.{secure.mine}.t ADD COLUMN extra STRING")

    for statement, table in ((f"SELECT * FROM {etl}.{secure.theirs}.secret", "secret"),
                             (f"INSERT INTO {etl}.{secure.theirs}.secret VALUES (1)", "secret"),
                             (f"CREATE TABLE {etl}.{secure.theirs}.mine_now (id INT)", "mine_now")):
        message = refused(spark, statement)
        assert "403 Forbidden" in message, message
        assert secure.refusal(f"/v1/scopes/{secure.theirs}/tables/{table}", secure.scoped_token) in message
    assert rows(spark, f"SELECT * FROM {admin}.{secure.theirs}.secret") == [(42,)]


def test_a_session_without_credentials_gets_the_servers_401_message(spark: Any, secure: Secure) -> None:
    anonymous = catalog(spark, secure, **secure.tls())
    message = refused(spark, f"SHOW NAMESPACES IN {anonymous}")
    assert "401" in message
    assert secure.refusal("/v1/scopes") in message


def test_a_catalog_that_does_not_trust_the_servers_ca_says_so(spark: Any, secure: Secure) -> None:
    untrusting = catalog(spark, secure, token=secure.admin_token)
    message = refused(spark, f"SHOW NAMESPACES IN {untrusting}")
    assert f"TLS with the streamcat catalog at {secure.url} failed" in message
    assert "ca-bundle" in message


def test_spark_sql_prints_the_refusals_without_java_frames(secure: Secure, tmp_path: Path) -> None:
    def flags(*args: str) -> list[str]:
        printed = CliRunner().invoke(spark_conf, ["--uri", secure.url, "--ca-bundle", str(secure.pki.ca),
                                                  "--client-cert", str(secure.pki.client_cert),
                                                  "--client-key", str(secure.pki.client_key), *args])
        assert printed.exit_code == 0, printed.output
        return shlex.split(printed.output)

    statements = f"SHOW NAMESPACES IN anonymous; SELECT * FROM etl.{secure.theirs}.secret;"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_HOME"] = str(pyspark_home())
    command = [str(pyspark_home() / "bin" / "spark-sql"), *flags("--catalog", "anonymous"),
               *flags("--catalog", "etl", "--token", secure.scoped_token),
               "--hiveconf", "hive.cli.errors.ignore=true", "-e", statements]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert secure.refusal("/v1/scopes") in done.stderr, done.stderr[-4000:]
    assert "403 Forbidden" in done.stderr, done.stderr[-4000:]
    assert "\tat streamcat." not in done.stderr, done.stderr[-4000:]
    assert secure.scoped_token not in done.stdout + done.stderr


def test_spark_conf_prints_credentials_and_reads_a_password_from_stdin(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    by_token = CliRunner().invoke(spark_conf, ["--uri", "https://cat:9092", "--token", "t0k", "--ca-bundle",
                                               str(ca), "--properties"])
    assert by_token.exit_code == 0, by_token.output
    assert "spark.sql.catalog.streamcat.token t0k" in by_token.output.splitlines()
    assert f"spark.sql.catalog.streamcat.ca-bundle {ca}" in by_token.output.splitlines()

    by_password = CliRunner().invoke(spark_conf, ["--user", "alice", "--password-stdin", "--properties"],
                                     input="s3cret pass\n")
    assert by_password.exit_code == 0, by_password.output
    assert {"spark.sql.catalog.streamcat.user alice", "spark.sql.catalog.streamcat.password s3cret pass"} <= set(
        by_password.output.splitlines())

    no_password = CliRunner().invoke(spark_conf, ["--user", "alice"])
    assert no_password.exit_code != 0
    assert "--password-stdin" in no_password.output
    both = CliRunner().invoke(spark_conf, ["--user", "alice", "--password-stdin", "--token", "t"], input="pw\n")
    assert both.exit_code != 0
    assert "not both" in both.output


def test_the_data_source_keeps_credentials_out_of_its_repr() -> None:
    options = SourceOptions.parse({"uri": "https://cat", "scope": "s", "table": "t", "token": "s3cret-token"})
    assert "s3cret-token" not in repr(options)
    assert options.credentials.token == "s3cret-token"
    with_password = SourceOptions.parse({"uri": "https://cat", "scope": "s", "table": "t", "user": "alice",
                                         "password": "s3cret-pass"})
    assert "s3cret-pass" not in repr(with_password) + repr(with_password.credentials.auth)
