"""Dead-letter tables (docs/data-contracts.md): a CEL rule with ``onFailure`` DLQ and ``dlq.table`` sends the rows
it refuses from ``StreamWriter`` and ``streamcat ingest`` to that table, created when missing, while the rest
commits, in one commit of both tables (``POST /v1/commits``); a writer killed before that commit leaves neither
visible, and its re-run commits both once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from click.testing import CliRunner

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk, CommitOptions, TableCommit
from catalog_api.server.cli_ingest import ingest_command
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.contracts import ConstraintViolation
from registry.client import RegistryClient
from registry.errors import BadRequest, NotFound, StreamcatError
from tests.changelog.helpers import event, line, make_table, row
from tests.support.proxy import DROP, HOLD, Faults, faulty_proxy

ROOT = Path(__file__).resolve().parents[2]


def _col(name: str, type_: str, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


SCHEMA = {"type": "struct", "fields": [_col("id", "long", False), _col("qty", "integer"), _col("sku", "string")]}


def _add_rule(server_url: str, scope: str, table: str, rule: dict[str, Any]) -> None:
    """A CEL condition rule on the table's subject, added as a Kafka user adds one (Confluent API)."""
    subject = urllib.parse.quote(f":.{scope}:{table}", safe="")
    latest = requests.get(f"{server_url}/subjects/{subject}/versions/latest", timeout=10).json()
    rules = [*(latest.get("ruleSet") or {}).get("domainRules", []), rule]
    answer = requests.post(f"{server_url}/subjects/{subject}/versions", timeout=10,
                           data=json.dumps({"schema": latest["schema"], "ruleSet": {"domainRules": rules}}),
                           headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    assert answer.status_code == 200, answer.text


def _dlq_rule(name: str, expr: str, dlq: str) -> dict[str, Any]:
    return {"name": name, "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": expr, "onFailure": "DLQ",
            "params": {"dlq.table": dlq}}


def _rows(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str) -> list[dict[str, Any]]:
    reader = StreamReader(catalog, RegistryClient(registry.url, scope), scope, table)
    return [r for batch in reader.read_batches() for r in batch.to_pylist()]


def test_the_writer_commits_good_rows_and_dead_letters_together(
        catalog: CatalogClient, client: RegistryClient, scope: str, server_url: str) -> None:
    table, dlq = f"t{uuid.uuid4().hex[:10]}", f"dlq{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, table, SCHEMA, properties={"constraint.check.qty_small": "qty < 100"})
    _add_rule(server_url, scope, table, _dlq_rule("qty_positive", "message.qty > 0", f"{scope}.{dlq}"))
    # onFailure NONE: the stock client lets a failing record through, and so do the writers (no constraint)
    _add_rule(server_url, scope, table, {"name": "never", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
                                         "expr": "false", "onFailure": "NONE"})
    checks = {c["name"]: c for c in catalog.get_table(scope, table)["checks"]}
    assert (checks["qty_positive"]["onFailure"], checks["qty_positive"]["dlqTable"]) == ("DLQ", f"{scope}.{dlq}")
    assert "never" not in checks

    writer = StreamWriter(catalog, client, scope, table, schema=client.latest_schemas(table)[0].schema,
                          writer_id="shop-app")
    writer.write({"id": 1, "qty": 5, "sku": "a"})
    writer.write({"id": 2, "qty": -1, "sku": "b"})  # the DLQ rule's: a dead letter, the call succeeds
    writer.write_table(pa.table({"id": [3, 4, 5], "qty": [0, 7, None], "sku": ["c", "d", "e"]}))
    with pytest.raises(ConstraintViolation, match="qty_small"):  # an ERROR rule still refuses the call
        writer.write({"id": 6, "qty": 500, "sku": "f"})
    made = writer.flush()
    assert made is not None

    assert sorted(r["id"] for r in _rows(catalog, client, scope, table)) == [1, 4]
    dead = sorted(_rows(catalog, client, scope, dlq), key=lambda r: json.loads(r["row"])["id"])
    assert [json.loads(r["row"]) for r in dead] == [
        {"id": 2, "qty": -1, "sku": "b"}, {"id": 3, "qty": 0, "sku": "c"}, {"id": 5, "qty": None, "sku": "e"}]
    assert {r["rule"] for r in dead} == {"qty_positive"}
    assert {r["writer"] for r in dead} == {"shop-app"}
    assert dead[0]["error"] == "Rule expr failed: message.qty > 0"
    assert "message.qty > 0 (" in dead[2]["error"]  # a null in a comparison: an evaluation error, refused
    assert all(r["at"] is not None for r in dead)
    # one commit each, one time, one writer sequence
    (mine,), (theirs,) = catalog.commits(scope, table), catalog.commits(scope, dlq)
    assert mine["createdAt"] == theirs["createdAt"] == made["createdAt"]
    assert (mine["writerId"], mine["writerSequence"]) == (theirs["writerId"], theirs["writerSequence"])

    writer.write({"id": 7, "qty": -7, "sku": "g"})  # only dead letters: the table gets no commit
    assert writer.flush() is None
    assert len(catalog.commits(scope, table)) == 1
    assert len(catalog.commits(scope, dlq)) == 2
    writer.close()
    # a restarted writer of that id resumes after its commit of dead letters only
    again = StreamWriter(catalog, client, scope, table, schema=client.latest_schemas(table)[0].schema,
                         writer_id="shop-app")
    again.write_table(pa.table({"id": [8], "qty": [8], "sku": ["h"]}))
    assert again.flush() is not None
    assert catalog.commits(scope, table)[-1]["writerSequence"] == 3


def test_a_lost_answer_to_the_commit_of_both_tables_is_resolved_once(
        catalog: CatalogClient, client: RegistryClient, scope: str, server_url: str) -> None:
    table, dlq = f"t{uuid.uuid4().hex[:10]}", f"dlq{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, table, SCHEMA)
    _add_rule(server_url, scope, table, _dlq_rule("qty_positive", "message.qty > 0", f"{scope}.{dlq}"))
    with faulty_proxy(server_url) as (url, faults):
        writer = StreamWriter(CatalogClient(url), client, scope, table,
                              schema=client.latest_schemas(table)[0].schema, backoff=0.01)
        writer.write_table(pa.table({"id": [1, 2], "qty": [1, -2], "sku": ["a", "b"]}))
        faults.arm(1, mode=DROP)
        made = writer.flush()
        assert faults.lost == [1]
    assert made is not None
    assert not made["duplicate"]
    assert len(catalog.commits(scope, table)) == len(catalog.commits(scope, dlq)) == 1


def test_the_commit_of_several_tables_is_all_or_nothing(
        catalog: CatalogClient, scope: str, server_url: str) -> None:
    first, second = f"t{uuid.uuid4().hex[:10]}", f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, first, SCHEMA)
    catalog.create_table(scope, second, SCHEMA)
    good = [Chunk(path="segment-0/a.parquet", kind="columnar", segment=0, event_count=1, bytes=10)]
    bad = [Chunk(path="segment-0/b.parquet", kind="columnar", segment=7, event_count=1, bytes=10)]
    options = CommitOptions(writer_id="w", writer_sequence=1)
    with pytest.raises(BadRequest, match="segment 7"):  # the second part is refused: the first is not made
        catalog.commit_tables([TableCommit(scope, first, good, options), TableCommit(scope, second, bad, options)])
    assert catalog.commits(scope, first) == []
    with pytest.raises(BadRequest, match="two commits"):
        catalog.commit_tables([TableCommit(scope, first, good, options), TableCommit(scope, first, good, options)])
    for body in ({"commits": []}, {"commits": [{"scope": scope, "stream": "../x", "chunks": []}]}, {"commits": 1}):
        answer = requests.post(f"{server_url}/v1/commits", json=body, timeout=10)
        assert answer.status_code == 400, answer.text
    with pytest.raises(StreamcatError) as missing:
        catalog.commit_tables([TableCommit(scope, "nosuchtable", good, options)])
    assert missing.value.status == 404
    # a dead-letter table is scope.table: anything else is refused when the rule is registered (42210)
    subject = urllib.parse.quote(f":.{scope}:{first}", safe="")
    latest = requests.get(f"{server_url}/subjects/{subject}/versions/latest", timeout=10).json()
    refused = requests.post(f"{server_url}/subjects/{subject}/versions", timeout=10, data=json.dumps(
        {"schema": latest["schema"], "ruleSet": {"domainRules": [_dlq_rule("r", "message.qty > 0", "nodot")]}}),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    assert refused.status_code == 422
    assert refused.json()["error_code"] == 42210
    assert "dlq.table 'nodot' is not scope.table" in refused.json()["message"]


# -- streamcat ingest ------------------------------------------------------------------------------------


def _ingest_table(catalog: CatalogClient, scope: str, server_url: str) -> tuple[str, str]:
    table, dlq = make_table(catalog, scope), f"dlq{uuid.uuid4().hex[:8]}"
    _add_rule(server_url, scope, table, _dlq_rule("qty_known", "type(message.qty) != null_type", f"{scope}.{dlq}"))
    return table, dlq


def _changes(tmp_path: Path) -> Path:
    """Six creates at LSNs 1000..1050; keys 2 and 5 have no qty (the DLQ rule refuses them)."""
    source = tmp_path / "changes.jsonl"
    source.write_bytes(b"\n".join(
        line(event("c", None, row(k, qty=None if k in (2, 5) else k), 1000 + 10 * k)) for k in range(6)) + b"\n")
    return source


def _ids(catalog: CatalogClient, scope: str, table: str, server_url: str) -> list[int]:
    return sorted(r["id"] for r in _rows(catalog, RegistryClient(server_url, scope), scope, table))


def _dead_ids(catalog: CatalogClient, scope: str, dlq: str, server_url: str) -> list[int]:
    return sorted(json.loads(r["row"])["id"] for r in _rows(catalog, RegistryClient(server_url, scope), scope, dlq))


def test_ingest_sends_rows_a_dlq_rule_refuses_to_the_dead_letter_table(
        catalog: CatalogClient, scope: str, server_url: str, tmp_path: Path) -> None:
    table, dlq = _ingest_table(catalog, scope, server_url)
    done = CliRunner().invoke(ingest_command, ["--table", f"{scope}.{table}", "--format", "debezium-json",
                                               "--uri", server_url, "--quiet", str(_changes(tmp_path))])
    assert done.exit_code == 0, done.output
    assert _ids(catalog, scope, table, server_url) == [0, 1, 3, 4]
    assert _dead_ids(catalog, scope, dlq, server_url) == [2, 5]
    dead = _rows(catalog, RegistryClient(server_url, scope), scope, dlq)
    assert {(r["rule"], r["writer"]) for r in dead} == {("qty_known", "streamcat ingest")}
    (mine,), (theirs,) = catalog.commits(scope, table), catalog.commits(scope, dlq)
    assert mine["createdAt"] == theirs["createdAt"]


@pytest.fixture
def held(server_url: str) -> Iterator[tuple[str, Faults]]:
    with faulty_proxy(server_url) as found:
        yield found


def _commits(catalog: CatalogClient, scope: str, table: str) -> list[dict[str, Any]]:
    try:
        return catalog.commits(scope, table)
    except NotFound:
        return []


def _files(catalog: CatalogClient, scope: str, table: str) -> list[Any]:
    try:
        return storage.list_files(catalog.get_stream(scope, table)["location"])
    except NotFound:
        return []


# where the writer dies: between the table's chunk files and its dead letters' (the dead-letter table's creation,
# a POST to .../tables, is held), or after both, while their commit is on its way (the POST to /v1/commits)
@pytest.mark.parametrize("held_post", ["/tables", "/commits"], ids=["between-the-files", "before-the-commit"])
def test_an_ingest_killed_before_its_commit_leaves_neither_table_changed_and_its_rerun_commits_both_once(
        catalog: CatalogClient, scope: str, server_url: str, tmp_path: Path, held: tuple[str, Faults],
        held_post: str) -> None:
    url, faults = held
    table, dlq = _ingest_table(catalog, scope, server_url)
    source = _changes(tmp_path)
    arguments = ["--table", f"{scope}.{table}", "--format", "debezium-json", "--writer-id", "cdc", "--quiet",
                 str(source)]
    faults.arm(1, mode=HOLD, suffix=held_post)  # the request never reaches the server
    process = subprocess.Popen([sys.executable, "-m", "catalog_api.server.cli_ingest", *arguments, "--uri", url],
                               cwd=ROOT, env={**os.environ, "STREAMCAT_INGEST_WORKERS": "1"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert faults.held.wait(60), process.stderr.read().decode() if process.poll() is not None else "no commit"
        process.send_signal(signal.SIGKILL)
        assert process.wait(30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _commits(catalog, scope, table) == []
    assert _commits(catalog, scope, dlq) == []
    # the files it wrote are there (the dead letters' only when it died after writing them); no reader sees them
    assert _files(catalog, scope, table)
    assert bool(_files(catalog, scope, dlq)) == (held_post == "/commits")
    assert _ids(catalog, scope, table, server_url) == []

    for _run in range(2):  # the restarted writer commits both once; running it again commits nothing new
        done = CliRunner().invoke(ingest_command, [*arguments, "--uri", server_url])
        assert done.exit_code == 0, done.output
    assert _ids(catalog, scope, table, server_url) == [0, 1, 3, 4]
    assert _dead_ids(catalog, scope, dlq, server_url) == [2, 5]
    assert len(catalog.commits(scope, table)) == len(catalog.commits(scope, dlq)) == 1
