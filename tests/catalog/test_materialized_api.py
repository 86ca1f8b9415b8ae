"""Materialized tables over REST on every backend (SQLite, PostgreSQL): definition, lifecycle, the
refresher's lease and its reports, and the refusal of commits that are not a refresh's
(docs/materialized-tables.md). Spark's side is tests/spark/test_materialized.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.materialized import model as domain
from catalog_api.materialized.model import backoff_ms, effective_mode, parse_freshness
from catalog_api.materialized.refresher import is_due, next_refresh, pass_interval, plan_line
from catalog_api.materialized.wire import MaterializedTable, MaterializedTableList
from catalog_api.server.config import Settings
from registry.errors import Conflict
from tests.support.auth import auth_server
from tests.support.net import free_port

ORDERS = {
    "type": "struct",
    "fields": [
        {"name": "item", "type": "string", "nullable": True, "metadata": {}},
        {"name": "qty", "type": "integer", "nullable": True, "metadata": {}},
    ],
}
REVENUE = {
    "type": "struct",
    "fields": [
        {"name": "item", "type": "string", "nullable": True, "metadata": {}},
        {"name": "qty", "type": "long", "nullable": True, "metadata": {}},
    ],
}


class Api:
    """The materialized tables of one scope over plain HTTP."""

    def __init__(self, base: str, scope: str) -> None:
        self.base, self.scope = base, scope

    def url(self, table: str = "", tail: str = "") -> str:
        return f"{self.base}/v1/scopes/{self.scope}/materializedTables" + (f"/{table}" if table else "") + tail

    def create(self, name: str, freshness: str = "1 hour", mode: str = "auto", **extra: Any) -> requests.Response:
        body = {
            "tableName": name,
            "queryText": f"SELECT item, sum(qty) AS qty FROM streamcat.{self.scope}.orders GROUP BY item",
            "currentCatalog": "streamcat", "currentNamespace": [self.scope],
            "sources": [{"scopeName": self.scope, "tableName": "orders"}], "schema": REVENUE,
            "freshness": freshness, "refreshMode": mode, "primaryKey": ["item"], **extra,
        }
        return requests.post(self.url(), json=body, timeout=30)

    def get(self, name: str) -> dict[str, Any]:
        answer = requests.get(self.url(name), timeout=30)
        assert answer.status_code == 200, answer.text
        MaterializedTable.model_validate(answer.json(), by_alias=True, by_name=False)
        found: dict[str, Any] = answer.json()
        return found

    def patch(self, name: str, body: dict[str, Any]) -> requests.Response:
        return requests.patch(self.url(name), json=body, timeout=30)

    def lease(self, name: str, holder: str, ttl_ms: int = 60_000) -> requests.Response:
        return requests.post(self.url(name, "/lease"), json={"holder": holder, "ttlMs": ttl_ms}, timeout=30)

    def report(self, name: str, body: dict[str, Any]) -> requests.Response:
        return requests.post(self.url(name, "/refreshes"), json=body, timeout=30)


@pytest.fixture
def api(catalog: CatalogClient, server_url: str, scope: str) -> Api:
    """The scope's materialized tables, with a source table ``orders`` of one commit."""
    catalog.create_table(scope, "orders", ORDERS)
    catalog.commit(scope, "orders", [], overwrite=True)
    return Api(server_url, scope)


def test_rules_without_a_database() -> None:
    assert parse_freshness("10 seconds") == 10_000
    assert parse_freshness("INTERVAL '5' MINUTE") == 300_000
    assert parse_freshness("1 hour") == 3_600_000
    assert parse_freshness("30s") == 30_000
    for bad in ("soon", "0 seconds", "-1 hour", "5 fortnights"):
        with pytest.raises(ValueError, match="freshness"):
            parse_freshness(bad)
    threshold = 30 * 60_000
    assert effective_mode("auto", 10_000, threshold) == "continuous"
    assert effective_mode("auto", threshold, threshold) == "full"
    assert effective_mode("full", 10_000, threshold) == "full"
    assert effective_mode("continuous", 3_600_000, threshold) == "continuous"
    assert [backoff_ms(n) for n in (1, 2, 3)] == [5_000, 10_000, 20_000]
    assert backoff_ms(30) == 10 * 60_000


def test_refresher_schedule() -> None:
    table = {"status": "activated", "behind": True, "refreshCommit": 3, "lagMs": 1_000, "freshnessMs": 10_000,
             "effectiveRefreshMode": "full", "nextRefreshAt": 10_000}
    # The server says when (nextRefreshAt); the refresher refreshes once that has come.
    assert not is_due(table, 0, "r")
    assert is_due(table, 10_000, "r")
    assert is_due({**table, "effectiveRefreshMode": "continuous", "nextRefreshAt": 0}, 0, "r")
    assert not is_due({**table, "effectiveRefreshMode": "continuous", "nextRefreshAt": None}, 0, "r")
    assert not is_due({**table, "effectiveRefreshMode": "continuous", "nextAttemptAt": 10}, 0, "r")
    # Passes come every tenth of the smallest continuous freshness (never below 0.2 s), else every poll.
    assert pass_interval([table], 5.0) == 5.0
    assert pass_interval([table, {**table, "effectiveRefreshMode": "continuous"}], 5.0) == 1.0
    assert pass_interval([{**table, "effectiveRefreshMode": "continuous", "freshnessMs": 500}], 5.0) == 0.2
    assert pass_interval([{**table, "effectiveRefreshMode": "continuous", "status": "suspended"}], 5.0) == 5.0


NOW = 1_795_000_000_000  # 2026-11-18T11:06:40Z
HOUR = 3_600_000
ON_THE_HOUR = NOW - NOW % HOUR  # 11:00


def materialized(mode: domain.EffectiveMode = "full", *, pending_since: int | None = None,
                 options: dict[str, str] | None = None, **state: Any) -> domain.MaterializedTable:
    """A table with freshness 1 hour refreshed at 10:30, whose source has a commit from ``pending_since``."""
    source = domain.SourceTable("shop", "orders")
    definition = domain.Definition("SELECT 1", (source,), HOUR, mode, options=options or {})
    refreshed = replace(domain.RefreshState("activated", refresh_commit=3, last_refresh_at=ON_THE_HOUR - HOUR // 2),
                        **state)
    lag = 0 if pending_since is None else NOW - pending_since
    return domain.MaterializedTable(
        "shop", "revenue", definition, refreshed, mode, 1, 0, 0,
        (domain.SourceState(source, 1, 2 if pending_since else 1, pending_since),), lag)


def test_full_mode_is_due_at_every_multiple_of_its_freshness_from_the_epoch() -> None:
    assert domain.tick(HOUR, NOW) == ON_THE_HOUR
    assert domain.tick(86_400_000, NOW) % 86_400_000 == 0  # freshness 1 day: at midnight UTC
    due = domain.next_refresh_at
    # A source moved at 10:45, before 11:00, and no refresh has run for 11:00: due at 11:00.
    assert due(materialized(pending_since=ON_THE_HOUR - 900_000), NOW) == ON_THE_HOUR
    # It moved at 11:05, after 11:00: the next time is 12:00 (not half the freshness after the last refresh).
    assert due(materialized(pending_since=ON_THE_HOUR + 300_000), NOW) == ON_THE_HOUR + HOUR
    # The refresh for 11:00 ran (the time it ran for is recorded): 12:00.
    assert due(materialized(pending_since=ON_THE_HOUR - 900_000, scheduled_at=ON_THE_HOUR), NOW) == ON_THE_HOUR + HOUR
    # Nothing moved: none scheduled (the first time after a source moves will be) ...
    assert due(materialized(), NOW) is None
    # ... unless each time names a partition of its own (a date formatter): due at 11:00 regardless.
    formatted = {"partition.fields.ds.date-formatter": "yyyy-MM-dd"}
    assert due(materialized(options=formatted), NOW) == ON_THE_HOUR
    assert due(materialized(options=formatted, scheduled_at=ON_THE_HOUR), NOW) == ON_THE_HOUR + HOUR
    # Never refreshed: at once; a backoff or a request: its time; suspended: never.
    assert due(materialized(refresh_commit=0), NOW) == 0
    assert due(materialized(next_attempt_at=NOW + 5_000), NOW) == NOW + 5_000
    assert due(materialized(status="suspended"), NOW) is None
    # Continuous tables keep their rule: as soon as a source moved.
    assert due(materialized("continuous", pending_since=NOW - 10), NOW) == NOW
    assert due(materialized("continuous"), NOW) is None


def test_with_options_are_a_partition_formatter_or_table_properties() -> None:
    own, table = domain.split_options({"partition.fields.ds.date-formatter": "yyyy-MM-dd", "merge-engine": "first-row",
                                       "fields.qty.aggregate-function": "sum"}, ["ds"])
    assert own == {"partition.fields.ds.date-formatter": "yyyy-MM-dd"}
    assert table == {"merge-engine": "first-row", "fields.qty.aggregate-function": "sum"}
    with pytest.raises(ValueError, match=r"unknown option 'partition\.fields\.ds\.date-format'"):
        domain.split_options({"partition.fields.ds.date-format": "yyyy"}, ["ds"])
    with pytest.raises(ValueError, match="names column 'item', which is not a partition column"):
        domain.split_options({"partition.fields.item.date-formatter": "yyyy"}, ["ds"])


def test_refresher_says_when_each_table_is_refreshed_and_why() -> None:
    now = NOW
    table = {"scopeName": "shop", "tableName": "revenue", "status": "activated", "behind": True, "refreshCommit": 3,
             "lagMs": 1_000, "freshnessMs": HOUR, "refreshMode": "auto", "effectiveRefreshMode": "full",
             "nextRefreshAt": ON_THE_HOUR + HOUR}
    # Full mode: at the next multiple of the freshness, as the server computed it.
    why = "scheduled every 3600 s from the epoch; if a source moved before it"
    assert next_refresh(table, now, "r") == (ON_THE_HOUR + HOUR, why)
    assert plan_line(table, now, "r") == (
        f"shop.revenue: full (auto), freshness 3600 s, next refresh 2026-11-18T12:00:00Z ({why})")
    formatted = {"partition.fields.ds.date-formatter": "yyyy-MM-dd"}
    partitioned = {**table, "options": formatted, "nextRefreshAt": ON_THE_HOUR}
    assert plan_line(partitioned, now, "r") == (
        "shop.revenue: full (auto), freshness 3600 s, next refresh now (scheduled at 2026-11-18T11:00:00Z, every "
        "3600 s from the epoch; recomputes the partition of its time)")
    assert is_due(partitioned, now, "r")
    failed = {**table, "status": "failed", "nextAttemptAt": now - 1, "nextRefreshAt": now - 1}
    assert next_refresh(failed, now, "r") == (now - 1, "its last refresh failed")
    assert next_refresh({**table, "nextRefreshAt": None}, now, "r") == (
        None, "up to date: refreshed when a source changes")
    assert next_refresh({**table, "status": "suspended"}, now, "r")[0] is None
    backoff = {**table, "status": "failed", "failures": 2, "nextAttemptAt": now + 10_000}
    assert next_refresh(backoff, now, "r") == (now + 10_000, "waiting out the backoff after 2 failed refresh(es)")
    leased = {**table, "leaseHolder": "other", "leaseExpiresAt": now + 60_000}
    assert next_refresh(leased, now, "r") == (now + 60_000, "refresher other holds its lease")
    assert next_refresh(leased, now, "other")[0] == ON_THE_HOUR + HOUR
    continuous = {**table, "refreshMode": "continuous", "effectiveRefreshMode": "continuous", "nextRefreshAt": now}
    assert plan_line(continuous, now, "r") == (
        "shop.revenue: continuous, freshness 3600 s, next refresh now (a source changed)")


def refresher(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """``streamcat refresher ...`` in a process of its own, its output unbuffered."""
    return subprocess.Popen([sys.executable, "-m", "catalog_api.server.cli", "refresher", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_refresher_refuses_in_one_line_before_spark_starts(spark_settings: Settings, tmp_path: Path) -> None:
    """No server, or credentials the server refuses: one line and status 1, before any Spark start-up (which
    takes many seconds and prints Spark's own lines)."""
    nobody = f"http://127.0.0.1:{free_port()}"
    with auth_server(spark_settings, auth=("basic",)) as guarded:
        for uri, token, expected in ((nobody, "t", f"Error: cannot reach the Streamcat server at {nobody}: "),
                                     (guarded, "wrong", f"Error: the Streamcat server at {guarded} refused the "
                                                        "refresher's credentials: ")):
            started = time.monotonic()
            out, err = refresher("--once", "--uri", uri, "--token", token, cwd=tmp_path).communicate(timeout=60)
            assert time.monotonic() - started < 15
            assert out == ""
            assert len(err.splitlines()) == 1, err
            assert err.startswith(expected), err
    assert list(tmp_path.iterdir()) == []


def test_refresher_starts_with_a_line_per_table(api: Api, server_url: str, tmp_path: Path) -> None:
    api.create("revenue", freshness="1 hour", mode="full")
    api.create("hourly", freshness="10 seconds")
    api.patch("hourly", {"action": "suspend"})
    process = refresher("--uri", server_url, "--scope", api.scope, "--holder", "first", cwd=tmp_path)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(3)]
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    assert lines == [f"refresher first: 2 materialized table(s) on {server_url}",
                     f"{api.scope}.revenue: full, freshness 3600 s, next refresh now (never refreshed)",
                     f"{api.scope}.hourly: continuous (auto), freshness 10 s, next refresh not scheduled "
                     "(suspended until resume_materialized_table)"]


def test_create_get_list(api: Api, catalog: CatalogClient) -> None:
    created = api.create("revenue")
    assert created.status_code == 201, created.text
    table = api.get("revenue")
    assert table["status"] == "initializing"
    assert (table["refreshMode"], table["effectiveRefreshMode"], table["freshnessMs"]) == ("auto", "full", 3_600_000)
    assert table["sources"] == [
        {"scopeName": api.scope, "tableName": "orders", "consumedCut": None, "latestCut": 1,
         "pendingSince": table["sources"][0]["pendingSince"]}
    ]
    assert table["refreshCommit"] == 0
    assert table["lagMs"] >= 0
    # The table is a catalog table with the query's schema and its key.
    plain = catalog.get_table(api.scope, "revenue")
    assert [f["name"] for f in plain["schema"]["fields"]] == ["item", "qty"]
    assert plain["properties"]["streamcat.materialized"] == "true"
    listed = requests.get(api.url(), timeout=30).json()
    MaterializedTableList.model_validate(listed, by_alias=True, by_name=False)
    assert [t["tableName"] for t in listed["materializedTables"]] == ["revenue"]
    assert api.create("revenue").status_code == 409
    assert api.create("fast", freshness="10 seconds").json()["effectiveRefreshMode"] == "continuous"
    assert api.create("bad", freshness="whenever").status_code == 400
    assert api.create("self", sources=[{"scopeName": api.scope, "tableName": "self"}]).status_code == 400
    missing = api.create("orphan", sources=[{"scopeName": api.scope, "tableName": "nope"}])
    assert missing.status_code == 404
    # A refused definition leaves no table behind.
    assert requests.get(f"{api.base}/v1/scopes/{api.scope}/tables/orphan", timeout=30).status_code == 404
    assert requests.get(api.url("orders"), timeout=30).json()["error"]["code"] == "MaterializedTableNotFound"


def test_partitioned_with_options_and_the_next_scheduled_refresh(api: Api, catalog: CatalogClient) -> None:
    formatter = {"partition.fields.item.date-formatter": "yyyy-MM-dd"}
    unknown = api.create("typo", partitionedBy=["item"], options={"partition.fields.item.date-format": "yyyy"})
    assert unknown.status_code == 400
    assert "unknown option 'partition.fields.item.date-format'" in unknown.json()["error"]["message"]
    assert api.create("elsewhere", options=formatter).status_code == 400  # item is no partition column
    assert requests.get(f"{api.base}/v1/scopes/{api.scope}/tables/typo", timeout=30).status_code == 404
    created = api.create("daily", mode="full", partitionedBy=["item"],
                         options={**formatter, "merge-engine": "first-row"})
    assert created.status_code == 201, created.text
    table = api.get("daily")
    assert table["options"] == formatter
    assert table["nextRefreshAt"] == table["createdAt"], "never refreshed: due at once"
    plain = catalog.get_table(api.scope, "daily")
    assert (plain["partitionSpec"]["text"], plain["properties"]["merge-engine"]) == ("item", "first-row")
    # A scheduled refresh records the time it ran for: the next is one freshness later (a multiple of it).
    assert api.lease("daily", "r").status_code == 200
    tick = int(time.time() * 1000) // 3_600_000 * 3_600_000
    reported = api.report("daily", {"holder": "r", "outcome": "succeeded", "commit": 1,
                                    "cuts": {f"{api.scope}.orders": 1}, "scheduledAt": tick})
    assert reported.status_code == 200, reported.text
    assert api.get("daily")["nextRefreshAt"] == tick + 3_600_000


def test_lease_report_and_adoption(api: Api, catalog: CatalogClient) -> None:
    api.create("revenue")
    assert api.lease("revenue", "a", ttl_ms=60_000).status_code == 200
    held = api.lease("revenue", "b")
    assert held.status_code == 409
    assert held.json()["error"]["code"] == "RefreshLeaseHeld"
    assert api.lease("revenue", "a").status_code == 200  # renewal by the holder
    # Only the holder commits: others (users, producers, a refresher that lost its lease) are refused.
    with pytest.raises(Conflict, match="materialized table"):
        catalog.commit(api.scope, "revenue", [], overwrite=True)
    with pytest.raises(Conflict, match="no longer holds"):
        catalog.commit(api.scope, "revenue", [], overwrite=True, properties={"streamcat.materialized.holder": "b"})
    cuts = {f"{api.scope}.orders": 1}
    made = catalog.commit(api.scope, "revenue", [], overwrite=True, properties={
        "streamcat.materialized.holder": "a", "streamcat.materialized.cuts": json.dumps(cuts)})
    assert api.report("revenue", {"holder": "b", "outcome": "succeeded", "commit": made["number"],
                                  "cuts": cuts}).status_code == 409
    done = api.report("revenue", {"holder": "a", "outcome": "succeeded", "commit": made["number"], "cuts": cuts,
                                  "durationMs": 1234})
    assert done.status_code == 200, done.text
    table = done.json()
    assert (table["status"], table["refreshCommit"], table["leaseHolder"]) == ("activated", made["number"], None)
    assert table["sources"][0]["consumedCut"] == 1
    assert table["sources"][0]["pendingSince"] is None
    assert (table["lagMs"], table["stale"], table["lastRefreshDurationMs"]) == (0, False, 1234)
    # A source commit makes the table behind; its lag grows from that commit's time.
    catalog.commit(api.scope, "orders", [], overwrite=True)
    time.sleep(0.05)
    behind = api.get("revenue")
    assert behind["sources"][0]["pendingSince"] is not None
    assert behind["lagMs"] >= 50
    # A refresher that committed and died before reporting: the next lease adopts its commit.
    api.lease("revenue", "c")
    newer = {f"{api.scope}.orders": 2}
    later = catalog.commit(api.scope, "revenue", [], overwrite=True, properties={
        "streamcat.materialized.holder": "c", "streamcat.materialized.cuts": json.dumps(newer)})
    requests.post(api.url("revenue", "/refreshes"), json={"holder": "c", "outcome": "unchanged"}, timeout=30)
    adopted = api.lease("revenue", "d").json()
    assert adopted["refreshCommit"] == later["number"]
    assert adopted["sources"][0]["consumedCut"] == 2


def test_how_it_is_refreshed_comes_from_the_refresh_commit(api: Api, catalog: CatalogClient) -> None:
    created = api.create("revenue", freshness="5 seconds")
    assert (created.json()["incrementalPlan"], created.json()["lastRefreshMethod"]) == (None, None)
    cuts = {f"{api.scope}.orders": 1}
    for plan, method in (("incremental: grouped aggregate", "full: first refresh of this query"),
                         ("incremental: grouped aggregate", "incremental: grouped aggregate")):
        api.lease("revenue", "a")
        made = catalog.commit(api.scope, "revenue", [], overwrite=True, properties={
            "streamcat.materialized.holder": "a", "streamcat.materialized.cuts": json.dumps(cuts),
            "streamcat.materialized.plan": plan, "streamcat.materialized.method": method})
        api.report("revenue", {"holder": "a", "outcome": "succeeded", "commit": made["number"], "cuts": cuts})
        table = api.get("revenue")
        assert (table["effectiveRefreshMode"], table["incrementalPlan"], table["lastRefreshMethod"]) == (
            "continuous", plan, method)
    listed = requests.get(api.url(), timeout=30).json()["materializedTables"]
    assert [t["lastRefreshMethod"] for t in listed] == ["incremental: grouped aggregate"]


def test_failures_back_off_and_expired_leases_are_taken_over(api: Api) -> None:
    api.create("revenue")
    api.lease("revenue", "a", ttl_ms=300)
    failed = api.report("revenue", {"holder": "a", "outcome": "failed", "error": "boom", "release": False}).json()
    assert (failed["status"], failed["lastError"], failed["failures"]) == ("failed", "boom", 1)
    assert failed["nextAttemptAt"] - failed["lastErrorAt"] == 5_000
    time.sleep(0.4)
    taken = api.lease("revenue", "b")  # a's lease expired: b takes over
    assert taken.status_code == 200
    assert taken.json()["leaseHolder"] == "b"
    again = api.report("revenue", {"holder": "b", "outcome": "failed", "error": "boom again"}).json()
    assert again["failures"] == 2
    assert again["nextAttemptAt"] - again["lastErrorAt"] == 10_000


def test_concurrent_lease_requests_get_one_holder(api: Api) -> None:
    api.create("revenue")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: api.lease("revenue", f"r{i}").status_code, range(8)))
    assert sorted(answers) == [200] + [409] * 7


def test_lifecycle(api: Api, catalog: CatalogClient) -> None:
    api.create("revenue")
    suspended = api.patch("revenue", {"action": "suspend"}).json()
    assert suspended["status"] == "suspended"
    assert api.lease("revenue", "a").status_code == 409
    assert api.patch("revenue", {"action": "resume"}).json()["status"] == "initializing"
    fast = api.patch("revenue", {"freshness": "5 seconds"}).json()
    assert (fast["freshnessMs"], fast["effectiveRefreshMode"]) == (5_000, "continuous")
    assert api.patch("revenue", {"refreshMode": "full"}).json()["effectiveRefreshMode"] == "full"
    slow = api.patch("revenue", {"freshness": "2 hours", "refreshMode": "auto"}).json()
    assert slow["effectiveRefreshMode"] == "full"
    query = {"queryText": "SELECT item, sum(qty) AS qty, count(*) AS n FROM orders GROUP BY item",
             "currentCatalog": "streamcat", "currentNamespace": [api.scope],
             "sources": [{"scopeName": api.scope, "tableName": "orders"}],
             "schema": {"type": "struct", "fields": [*REVENUE["fields"],
                                                      {"name": "n", "type": "long", "nullable": True, "metadata": {}}]}}
    altered = api.patch("revenue", {"query": query})
    assert altered.status_code == 200, altered.text
    assert altered.json()["queryText"].startswith("SELECT item, sum(qty) AS qty, count(*)")
    assert [f["name"] for f in catalog.get_table(api.scope, "revenue")["schema"]["fields"]] == ["item", "qty", "n"]
    incompatible = dict(query, schema={"type": "struct", "fields": [
        REVENUE["fields"][0], {"name": "qty", "type": "string", "nullable": True, "metadata": {}}]})
    refused = api.patch("revenue", {"query": incompatible})
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "IncompatibleSchema"
    assert api.get("revenue")["queryText"] == query["queryText"]
    # Dropping the table drops its definition: nothing is left to refresh.
    catalog.drop_table(api.scope, "revenue")
    assert requests.get(api.url("revenue"), timeout=30).status_code == 404
    assert requests.get(api.url(), timeout=30).json()["materializedTables"] == []


def test_metrics(api: Api, server_url: str) -> None:
    api.create("revenue")
    time.sleep(5.1)  # past the metrics' cache
    text = requests.get(f"{server_url}/metrics", timeout=30).text
    labels = f'{{scope="{api.scope}",table="revenue"}}'
    assert f"streamcat_materialized_lag_seconds{labels}" in text
    assert f"streamcat_materialized_freshness_seconds{labels} 3600.0" in text
    assert f"streamcat_materialized_stale{labels}" in text


def test_plain_tables_commit_as_before(catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "plain", ORDERS)
    assert catalog.commit(scope, "plain", [], overwrite=True)["number"] == 1
