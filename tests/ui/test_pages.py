"""The UI's pages over plain HTTP (no browser): security headers, CSRF refusals, sign-in and
sessions, permissions of actions, the group search's pages, and what a bad request answers."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests

from catalog_api.materialized.refresher import is_due, next_refresh
from catalog_api.ui import registry_pages
from catalog_api.ui.registry_pages import PAGE_SIZE
from registry.client import RegistryClient, schema_info
from registry.model import Compatibility, GroupProperties, SerializationFormat
from tests.support.auth import Api, SigningKeys, add_user
from tests.ui.conftest import ROOT_PASSWORD, WENDY_PASSWORD, Secured, ui_server
from tests.ui.world import COMMITS, World, append, populate, refresh, rows_of

#: On the browser tests' worker: the servers (session fixtures) are made once for both.
pytestmark = [pytest.mark.xdist_group("browser")]

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def _get(session: requests.Session, base: str, path: str, **query: str) -> requests.Response:
    return session.get(f"{base}/ui/{path}" + ("?" + urlencode(query) if query else ""), timeout=30)


def _csrf(session: requests.Session, base: str, path: str = "signin") -> str:
    found = _CSRF.search(_get(session, base, path).text)
    assert found is not None
    return found.group(1)


def _status(base: str, auth: tuple[str, str] | None = None) -> str:
    answer = requests.get(f"{base}/v1/scopes/shop/materializedTables/big_orders", auth=auth, timeout=10).json()
    return str(answer["status"])


def test_every_page_forbids_inline_scripts_and_framing(world: World) -> None:
    for path in ("", "registry", "catalog", "materialized", "signin", "static/ui.js"):
        answer = _get(requests.Session(), world.url, path)
        assert answer.status_code == 200, path
        policy = answer.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "X-Request-Id" in answer.headers, "inside the server's request-id layer"
        # Nothing is loaded from another origin.
        assert not re.search(r'(src|href)="(https?:)?//', answer.text), path


def test_state_changes_without_the_csrf_token_are_refused_not_redirected(world: World) -> None:
    session = requests.Session()
    token = _csrf(session, world.url, "materialized/table?scope=shop&table=big_orders")
    before = _status(world.url)
    action = {"scope": "shop", "table": "big_orders", "action": "suspend"}
    for form in (action, {**action, "csrf_token": token + "x"}):
        answer = session.post(f"{world.url}/ui/materialized/table", data=form, allow_redirects=False, timeout=10)
        assert answer.status_code == 403, answer.text
        assert "CSRF" in answer.text
    # A token from another browser does not do either.
    other = requests.Session()
    other.cookies.set("streamcat_ui_csrf", "someone-elses")
    answer = other.post(f"{world.url}/ui/materialized/table", data={**action, "csrf_token": token}, timeout=10)
    assert answer.status_code == 403
    assert _status(world.url) == before
    check = session.post(f"{world.url}/ui/registry/group?namespace=shop&group=events", data={"schema": "{}"},
                         allow_redirects=False, timeout=10)
    assert check.status_code == 403


def test_what_users_typed_comes_back_escaped(world: World) -> None:
    answer = _get(requests.Session(), world.url, "registry", namespace="shop", q="<script>x</script>")
    assert "&lt;script&gt;x&lt;/script&gt;" in answer.text
    assert "<script>x" not in answer.text


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of its own for the tests that add to what it holds (the shared ones' counts stay put)."""
    with ui_server(tmp_path_factory.mktemp("ui-scratch")) as base:
        yield base


def test_the_group_search_pages_through_thousands_by_name(scratch: str) -> None:
    world = World(scratch)
    registry = RegistryClient(world.url, "many")
    names = [f"topic-{i:03d}" for i in range(PAGE_SIZE + 20)] + ["Other-TOPIC", "unrelated"]
    for name in names:
        registry.create_group(name, GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward")))
    session = requests.Session()
    first = _get(session, world.url, "registry", namespace="many", q="topic")
    listed = re.findall(r'group=([^"&]+)">', first.text)
    assert listed == sorted([n for n in names if "topic" in n.lower()])[:PAGE_SIZE]
    after = re.search(r'rel="next" href="([^"]+)"', first.text)
    assert after is not None
    second = session.get(world.url + after.group(1).replace("&amp;", "&"), timeout=10)
    rest = re.findall(r'group=([^"&]+)">', second.text)
    assert listed + rest == sorted(n for n in names if "topic" in n.lower())
    assert 'rel="next"' not in second.text
    assert f"{len(names)} groups" in _get(session, world.url, "registry", namespace="many").text


def test_bad_requests_answer_pages_with_their_status(world: World) -> None:
    session = requests.Session()
    assert _get(session, world.url, "registry/group", namespace="shop", group="nope").status_code == 404
    assert _get(session, world.url, "registry/group", namespace="shop").status_code == 400
    bad = _get(session, world.url, "catalog/table", scope="shop", table="orders", cut="x")
    assert bad.status_code == 400
    assert "cut must be a number" in bad.text
    assert _get(session, world.url, "catalog/table", scope="shop", table="orders", cut="99").status_code == 400
    assert _get(session, world.url, "nothing-here").status_code == 404
    assert _get(session, world.url, "catalog/scope", scope="a\x00b").status_code == 400


def _sign_in(base: str, **form: str) -> tuple[requests.Session, requests.Response]:
    session = requests.Session()
    token = _csrf(session, base)
    answer = session.post(f"{base}/ui/signin", data={"csrf_token": token, **form}, allow_redirects=False, timeout=10)
    return session, answer


def test_sign_in_sessions_and_where_they_lead(secured: Secured) -> None:
    anonymous = _get(requests.Session(), secured.url, "catalog")
    assert anonymous.url.endswith("/ui/signin?next=%2Fui%2Fcatalog")
    _session, wrong = _sign_in(secured.url, user="wendy", password="not-her-password")
    assert wrong.status_code == 401
    assert "wrong user name or password" in wrong.text
    session, right = _sign_in(secured.url, user="wendy", password=WENDY_PASSWORD, next="//evil.example/")
    assert (right.status_code, right.headers["Location"]) == (303, "/ui/"), "never off to another site"
    cookie = session.cookies["streamcat_ui_session"]
    assert WENDY_PASSWORD not in cookie
    assert _get(session, secured.url, "catalog").url.endswith("/ui/catalog")
    forged = requests.Session()
    forged.cookies.set("streamcat_ui_session", cookie[:-1] + ("0" if cookie[-1] != "0" else "1"))
    assert "/ui/signin" in _get(forged, secured.url, "catalog").url, "a forged session names nobody"


def test_actions_need_write_permission_on_the_table(secured: Secured, caplog: pytest.LogCaptureFixture) -> None:
    action = {"scope": "shop", "table": "big_orders", "action": "suspend"}
    reader, _ = _sign_in(secured.url, token=secured.token)
    token = _csrf(reader, secured.url, "materialized/table?scope=shop&table=big_orders")
    refused = reader.post(f"{secured.url}/ui/materialized/table", data={**action, "csrf_token": token}, timeout=10)
    assert refused.status_code == 403
    root = ("root", "root-password-1")
    assert _status(secured.url, root) != "suspended"
    writer, _ = _sign_in(secured.url, user="wendy", password=WENDY_PASSWORD)
    token = _csrf(writer, secured.url, "materialized/table?scope=shop&table=big_orders")
    done = writer.post(f"{secured.url}/ui/materialized/table", data={**action, "csrf_token": token}, timeout=10)
    assert done.status_code == 200
    assert "suspended" in done.text
    assert _status(secured.url, root) == "suspended"
    back = writer.post(f"{secured.url}/ui/materialized/table", data={**action, "action": "resume", "csrf_token": token},
                       timeout=10)
    assert back.status_code == 200
    assert _status(secured.url, root) != "suspended"
    audited = [r.getMessage() for r in caplog.records if r.name == "streamcat.audit" and "ui" in r.getMessage()]
    assert audited == [
        "shop-reader uiSuspendMaterializedTable group:shop/big_orders -> 403",
        "wendy uiSuspendMaterializedTable group:shop/big_orders -> 303",
        "wendy uiResumeMaterializedTable group:shop/big_orders -> 303",
    ]
    # Wendy may write one table: she sees that one, not the rest of the scope.
    listed = _get(writer, secured.url, "catalog/scope", scope="shop").text
    assert "big_orders" in listed
    assert "table=orders" not in listed


def test_a_viewer_of_single_groups_pages_through_the_names(secured: Secured, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = Api(secured.url, auth=("root", ROOT_PASSWORD))
    token = admin.ok("POST", "/v1/admin/principals/tokens", json={"name": "two-groups"})["token"]
    for group in ("shop.events", "shop.orders"):
        admin.ok("POST", "/v1/admin/grants", json={"principal": "two-groups", "permission": "read",
                                                  "resource": f"table:{group}"})
    # One name read at a time and one group a page: shop holds big_orders, events and orders.
    monkeypatch.setattr(registry_pages, "NAMES_BATCH", 1)
    monkeypatch.setattr(registry_pages, "PAGE_SIZE", 1)
    session, _ = _sign_in(secured.url, token=token)
    shown, after = [], ""
    for _ in range(4):
        page = _get(session, secured.url, "registry", namespace="shop", after=after).text
        shown += re.findall(r'group=([^"&]+)">', page)
        found = re.search(r'rel="next" href="[^"]*after=([^"&]+)', page)
        if found is None:
            break
        after = found.group(1)
    assert shown == ["events", "orders"]
    assert "Avro" in _get(session, secured.url, "registry", namespace="shop").text, "with each group's format"
    assert '<span class="n">2</span> <span class="label">groups</span>' in _get(session, secured.url, "").text


def test_an_identity_providers_jwt_signs_in_as_the_token(tmp_path: Path) -> None:
    keys = SigningKeys()
    jwks = keys.write_jwks(tmp_path / "jwks.json")
    with ui_server(tmp_path, auth=("basic", "oidc"), oidc_jwks=str(jwks)) as base:
        add_user(f"sqlite:///{tmp_path}/ui.db", "root", "root-password-1", "admin")
        for scope in ("shop", "vault"):
            Api(base, auth=("root", "root-password-1")).ok("POST", "/v1/scopes", json={"scopeName": scope})
        assert "identity provider's JWT" in _get(requests.Session(), base, "signin").text
        session, signed_in = _sign_in(base, token=keys.token("alice", streamcat=["read:scope:shop"]))
        assert (signed_in.status_code, signed_in.headers["Location"]) == (303, "/ui/")
        assert "oidc:alice" in _get(session, base, "").text
        catalog = _get(session, base, "catalog").text
        assert "scope=shop" in catalog
        assert "vault" not in catalog, "only the scope its claim grants"
        assert _get(session, base, "catalog/scope", scope="vault").status_code == 403
        # What the API refuses, the sign-in refuses, saying why; a session's JWT is checked on every page.
        for token, says in [(keys.token("alice", exp=int(time.time()) - 120), "the token has expired"),
                            (keys.token("alice", key="stranger"), "signature does not verify"),
                            (keys.token("alice", aud="another-api"), "another audience")]:
            _session, refused = _sign_in(base, token=token)
            assert (refused.status_code, says in refused.text) == (401, True), refused.text
            forged = requests.Session()
            forged.cookies.set("streamcat_ui_session", f"o.{token}")
            assert "/ui/signin" in _get(forged, base, "catalog").url


@pytest.mark.parametrize("path", ["", "registry", "catalog", "materialized"])
def test_a_reader_of_one_scope_sees_nothing_of_another(secured: Secured, path: str) -> None:
    reader, _ = _sign_in(secured.url, token=secured.token)
    page = _get(reader, secured.url, path).text
    assert "vault" not in page


def test_a_materialized_tables_refreshes_lag_and_lineage(scratch: str) -> None:
    world = populate(scratch, "refreshed")
    first = refresh(world.url, "refreshed")
    append(world.url, "refreshed")
    second = refresh(world.url, "refreshed", method="full: the source changed")
    page = _get(requests.Session(), world.url, "materialized/table", scope="refreshed", table="big_orders").text
    refreshes = re.findall(r"<tr><td>(\d+)</td><td><time[^>]*>[^<]*</time></td><td>(\d+)</td>.*?<td>([^<]*)</td></tr>",
                           page)
    assert [(int(n), method) for n, _rows, method in refreshes] == [
        (second, "full: the source changed"), (first, "full: first refresh")]
    assert int(refreshes[0][1]) == sum(rows_of(n).num_rows for n in range(1, COMMITS + 2))
    assert "activated" in page
    # The lag chart: before each refresh (how long what it took in had waited), after it, and now,
    # under the freshness line.
    assert page.count('<circle class="point"') == 5
    assert "freshness 60.0 s" in page
    assert re.search(r'<text x="[\d.]+" y="[\d.]+">refreshed\.orders</text>', page)
    # Its change feed, counted by change type: the second refresh overwrote the first's rows.
    table = _get(requests.Session(), world.url, "catalog/table", scope="refreshed", table="big_orders", feed="1").text
    counted = {int(n): (int(i), int(pre), int(post), int(d)) for n, i, pre, post, d in re.findall(
        r'<tr><td>(\d+)</td><td class="insert">(\d+)</td><td class="update_preimage">(\d+)</td>'
        r'<td class="update_postimage">(\d+)</td><td class="delete">(\d+)</td></tr>', table)}
    written = sum(rows_of(n).num_rows for n in range(1, COMMITS + 1))
    assert counted == {first: (written, 0, 0, 0), second: (written + rows_of(COMMITS + 1).num_rows, 0, 0, written)}


def test_the_registry_opens_on_the_first_namespace_the_viewer_may_read(secured: Secured) -> None:
    reader, _ = _sign_in(secured.url, token=secured.token)
    page = _get(reader, secured.url, "registry").text
    assert "<h2 id=\"groups\">Groups in shop</h2>" in page
    assert re.findall(r'group=([^"&]+)">', page) == ["big_orders", "events", "orders"]


def test_a_versions_data_contract_is_shown_escaped(scratch: str) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    rule_set = {"domainRules": [
        {"name": "qtyPositive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
         "expr": f"message.qty > 0 && '{hostile}' != ''", "onFailure": "DLQ"},
        {"name": "encryptPii", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": "ENCRYPT", "tags": ["PII"]},
    ], "migrationRules": [{"name": "renameUp", "kind": "TRANSFORM", "mode": "UPGRADE", "type": "JSONATA",
                           "expr": "$merge([$, {'qty': quantity}])"}]}
    metadata = {"properties": {"owner": hostile}, "tags": {"Order.customer": ["PII"]}}
    schema = json.dumps({"type": "record", "name": "Order", "fields": [
        {"name": "customer", "type": "string"}, {"name": "qty", "type": "int"}]})
    plain = requests.post(f"{scratch}/subjects/contracted/versions", json={"schema": schema}, timeout=10)
    assert plain.status_code == 200, plain.text
    added = requests.post(f"{scratch}/subjects/contracted/versions", timeout=10,
                          json={"schema": schema, "ruleSet": rule_set, "metadata": metadata})
    assert added.status_code == 200, added.text
    page = _get(requests.Session(), scratch, "registry/group", namespace="", group="contracted").text
    contracts = page[page.index('<h2 id="contracts">'):page.index('<h2 id="schema">')]
    assert contracts.count("<h3") == 1, "the first version has no contract"
    assert f"(id {added.json()['id']})" in contracts
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td>(\w+)</td><td>(\w+)</td><td>(\w+)</td>"
                      r"<td>(?:<code>(.*?)</code>)?</td><td>(\w*)</td>", contracts)
    assert [row[:5] + row[6:] for row in rows] == [
        ("migration", "renameUp", "TRANSFORM", "UPGRADE", "JSONATA", ""),
        ("domain", "qtyPositive", "CONDITION", "WRITE", "CEL", "DLQ"),
        ("domain", "encryptPii", "TRANSFORM", "WRITEREAD", "ENCRYPT", ""),
    ]
    assert "message.qty &gt; 0 &amp;&amp; &#39;&lt;img src=x onerror=alert(1)&gt;&#39;" in rows[1][5]
    assert "<dt>owner</dt><dd>&lt;img src=x onerror=alert(1)&gt;</dd>" in contracts
    assert re.search(r'tags of <code>Order\.customer</code></dt><dd><code class="tag">PII</code>', contracts)
    assert "<img" not in page
    # A client of the Pravega API may write those properties by hand: shown as they are, not a 500.
    handmade = RegistryClient(scratch, "handmade")
    handmade.create_group("g", GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward")))
    by_hand = {"streamcat.ruleSet": "{<not json", "streamcat.metadata": '{"properties": {"a": "b"}}'}
    handmade.add_schema("g", schema_info("Avro", schema, "Order", **by_hand))
    shown = _get(requests.Session(), scratch, "registry/group", namespace="handmade", group="g")
    assert shown.status_code == 200
    assert "streamcat.ruleSet holds no readable contract: <code>{&lt;not json</code>" in shown.text
    assert "<dt>a</dt><dd>b</dd>" in shown.text


def test_refresh_now_makes_the_table_due_at_the_refreshers_next_poll(scratch: str) -> None:
    world = populate(scratch, "asked")
    refresh(world.url, "asked")
    rest = f"{world.url}/v1/scopes/asked/materializedTables/big_orders"
    # Full mode, daily: refreshed at the next scheduled time (continuous mode steps at once anyway).
    requests.patch(rest, json={"refreshMode": "full", "freshness": "1 day"}, timeout=10).raise_for_status()
    session = requests.Session()
    page = _get(session, world.url, "materialized/table", scope="asked", table="big_orders").text
    assert "a refresh would change nothing" in page
    assert 'value="refresh"' not in page
    append(world.url, "asked")
    before = requests.get(rest, timeout=10).json()
    assert before["behind"]
    assert not is_due(before, int(time.time() * 1000), "r"), "not due before its next scheduled time"
    page = _get(session, world.url, "materialized/table", scope="asked", table="big_orders").text
    assert "Refresh now</button>" in page
    # The page says when the schedule makes it due (the next day boundary, UTC), as REST does.
    due = datetime.fromtimestamp(before["nextRefreshAt"] / 1000, UTC)
    assert (due.hour, due.minute, due.second) == (0, 0, 0)
    assert f'<dd id="next-refresh"><time datetime="{due:%Y-%m-%dT%H:%M:%SZ}"' in page
    assert "the refresh happens at the refresher's next poll" in page
    form = {"scope": "asked", "table": "big_orders", "action": "refresh", "csrf_token": _csrf(
        session, world.url, "materialized/table?scope=asked&table=big_orders")}
    done = session.post(f"{world.url}/ui/materialized/table", data=form, timeout=10)
    assert done.status_code == 200
    assert "A refresh was asked for" in done.text
    asked = requests.get(rest, timeout=10).json()
    now = int(time.time() * 1000)
    when, why = next_refresh(asked, now, "r")
    assert why == "a refresh was asked for"
    assert when is not None
    assert when <= now, "due at the refresher's next pass"
    assert (asked["status"], asked["version"], asked["lagMs"] > 0) == (before["status"], before["version"], True)
    refresh(world.url, "asked")
    after = requests.get(rest, timeout=10).json()
    assert after["nextAttemptAt"] is None, "the refresh answered the request"
    assert not is_due(after, int(time.time() * 1000), "r")
    # A refresh that comes to nothing ("unchanged": say its incremental step found no row to change)
    # answers the request as well: the table is not due again at every poll.
    append(world.url, "asked")
    assert session.post(f"{world.url}/ui/materialized/table", data=form, timeout=10).status_code == 200
    requests.post(f"{rest}/lease", json={"holder": "ui-test"}, timeout=10).raise_for_status()
    requests.post(f"{rest}/refreshes", json={"holder": "ui-test", "outcome": "unchanged"},
                  timeout=10).raise_for_status()
    unchanged = requests.get(rest, timeout=10).json()
    assert unchanged["nextAttemptAt"] is None, "the unchanged refresh answered the request"
    assert not is_due(unchanged, int(time.time() * 1000), "r")
    # A suspended table is refreshed by nobody: asking is refused, and changes nothing.
    requests.patch(rest, json={"action": "suspend"}, timeout=10).raise_for_status()
    refused = session.post(f"{world.url}/ui/materialized/table", data=form, timeout=10)
    assert refused.status_code == 409
    assert "resume it first" in refused.text
    assert requests.get(rest, timeout=10).json()["nextAttemptAt"] is None


def test_a_tables_check_constraints_are_shown_with_their_cel_form(world: World) -> None:
    from catalog_api.client import CatalogClient

    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}},
                                           {"name": "qty", "type": "integer", "nullable": True, "metadata": {}}]}
    CatalogClient(world.url).create_table("shop", "checked", schema,
                                          properties={"constraint.check.qty_positive": "qty > 0"})
    page = _get(requests.Session(), world.url, "catalog/table", scope="shop", table="checked").text
    section = page[page.index('id="checks"'):page.index('id="properties"')]
    assert "qty_positive" in section
    assert "<code>qty &gt; 0</code>" in section  # escaped, as Spark enforces it
    assert "qty &gt; 0" in section.split("</code>")[1]  # and the CEL rule it is mirrored as
    plain = _get(requests.Session(), world.url, "catalog/table", scope="shop", table="orders").text
    assert "<p>None.</p>" in plain[plain.index('id="checks"'):]
