"""The UI in a real headless Chromium against a real server: what people click through."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from registry.client import RegistryClient, schema_info
from tests.ui.conftest import Secured
from tests.ui.world import COMMITS, EVENT_BAD, EVENT_V2, HOSTILE_DOC, WRITER, World, rows_of

pytestmark = [pytest.mark.xdist_group("browser")]


def _open(page: webdriver.Chrome, url: str, path: str, **query: object) -> None:
    page.get(url + "/ui/" + path + ("?" + urlencode(query) if query else ""))


def _click(page: webdriver.Chrome, by: str, value: str) -> None:
    """Click what leads to another page, and wait until the browser shows that page."""
    old = page.find_element(By.TAG_NAME, "html")
    page.find_element(by, value).click()
    # While the old page goes, chromedriver may answer about its nodes with a generic error ("Node with given
    # id does not belong to the document") before it says they are stale: ask again.
    WebDriverWait(page, 15, ignored_exceptions=(WebDriverException,)).until(expected_conditions.staleness_of(old))


def _texts(page: webdriver.Chrome, selector: str) -> list[str]:
    return [e.text for e in page.find_elements(By.CSS_SELECTOR, selector)]


def test_from_the_overview_to_a_group_whose_doc_is_shown_as_text(page: webdriver.Chrome, world: World) -> None:
    _open(page, world.url, "")
    assert page.title == "Overview · Streamcat"
    counts = _texts(page, ".count")
    assert {"1 namespaces", "3 groups", "2 tables", "1 materialized tables", "0 stale"} <= set(counts), counts
    _click(page, By.LINK_TEXT, "Registry")
    _click(page, By.LINK_TEXT, world.scope)
    _click(page, By.LINK_TEXT, world.group)
    assert page.find_element(By.TAG_NAME, "h1").text == f"Group {world.group}"
    assert page.title == f"Group {world.group} · Streamcat"
    facts = page.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert "Avro" in facts
    assert "Backward" in facts
    # The doc's markup is text on the page: no script ran, no element was made from it.
    assert HOSTILE_DOC in page.find_element(By.CSS_SELECTOR, "pre.schema").text
    assert page.execute_script("return document.title") == f"Group {world.group} · Streamcat"
    assert page.find_elements(By.CSS_SELECTOR, "pre.schema b") == []
    assert len(page.find_elements(By.CSS_SELECTOR, "section[aria-labelledby=versions] tbody tr")) == 2


def test_diff_of_two_versions_marks_added_lines_and_names_the_field(page: webdriver.Chrome, world: World) -> None:
    _open(page, world.url, "registry/group", namespace=world.scope, group=world.group)
    left, right = Select(page.find_element(By.ID, "left")), Select(page.find_element(By.ID, "right"))
    left.select_by_index(0)
    right.select_by_index(1)
    _click(page, By.CSS_SELECTOR, "form.diff-pick button")
    inserted = " ".join(_texts(page, "table.diff ins"))
    assert '"name": "source"' in inserted
    assert "$.source" in _texts(page, "code.added")


def test_a_failing_compatibility_check_gives_the_reason_with_its_path(page: webdriver.Chrome, world: World) -> None:
    _open(page, world.url, "registry/group", namespace=world.scope, group=world.group)
    box = page.find_element(By.ID, "candidate")
    box.clear()
    box.send_keys(json.dumps(EVENT_BAD))
    _click(page, By.XPATH, "//button[text()='Check']")
    paths = _texts(page, ".reasons code.path")
    # The same decision, and the same paths, as the API's validate.
    reasons = RegistryClient(world.url, world.scope).validate(world.group, schema_info("Avro", json.dumps(EVENT_BAD)))
    assert paths == [r.path for r in reasons]
    assert any(p.startswith("$.source") for p in paths), paths
    box = page.find_element(By.ID, "candidate")
    box.clear()
    box.send_keys(json.dumps(EVENT_V2))
    _click(page, By.XPATH, "//button[text()='Check']")
    assert page.find_element(By.CSS_SELECTOR, ".verdict").text == "compatible"


def test_a_tables_timeline_and_its_rows_at_an_old_commit(page: webdriver.Chrome, world: World) -> None:
    _open(page, world.url, "catalog")
    _click(page, By.LINK_TEXT, world.scope)
    _click(page, By.LINK_TEXT, world.table)
    assert page.find_element(By.TAG_NAME, "h1").text == f"Table {world.scope}.{world.table}"
    assert len(page.find_elements(By.CSS_SELECTOR, "section[aria-labelledby=timeline] svg rect.bar")) == COMMITS
    rows = page.find_elements(By.CSS_SELECTOR, "tr.commit")
    assert len(rows) == COMMITS
    newest = rows[0]
    assert newest.find_element(By.CLASS_NAME, "number").text == str(COMMITS)
    assert newest.find_element(By.CLASS_NAME, "kind").text == "append"
    assert newest.find_element(By.CLASS_NAME, "rows").text == str(rows_of(COMMITS).num_rows)
    assert int(newest.find_element(By.CLASS_NAME, "bytes").text) > 0
    assert newest.find_element(By.CLASS_NAME, "writer").text == WRITER
    Select(page.find_element(By.ID, "cut")).select_by_value("2")
    _click(page, By.XPATH, "//button[text()='Show rows']")
    shown = page.find_elements(By.CSS_SELECTOR, "table.preview tbody tr")
    ids = {int(r.find_element(By.TAG_NAME, "td").text) for r in shown}
    assert ids == set(rows_of(1)["id"].to_pylist()) | set(rows_of(2)["id"].to_pylist())


def test_suspend_and_resume_a_materialized_table(page: webdriver.Chrome, world: World) -> None:
    api = f"{world.url}/v1/scopes/{world.scope}/materializedTables/{world.materialized}"
    _open(page, world.url, "materialized")
    _click(page, By.LINK_TEXT, f"{world.scope}.{world.materialized}")
    before = page.find_element(By.CSS_SELECTOR, "dd.status").text
    assert before == requests.get(api, timeout=10).json()["status"]
    _click(page, By.XPATH, "//button[text()='Suspend']")
    assert page.find_element(By.CSS_SELECTOR, "dd.status").text == "suspended"
    assert requests.get(api, timeout=10).json()["status"] == "suspended"
    _click(page, By.XPATH, "//button[text()='Resume']")
    assert page.find_element(By.CSS_SELECTOR, "dd.status").text == before
    assert requests.get(api, timeout=10).json()["status"] == before
    nodes = _texts(page, "section[aria-labelledby=lineage] svg g.node text")
    assert nodes == [f"{world.scope}.{world.table}", f"{world.scope}.{world.materialized}"]


def test_a_form_with_a_wrong_csrf_token_is_refused(page: webdriver.Chrome, world: World) -> None:
    api = f"{world.url}/v1/scopes/{world.scope}/materializedTables/{world.materialized}"
    _open(page, world.url, "materialized/table", scope=world.scope, table=world.materialized)
    status = requests.get(api, timeout=10).json()["status"]
    page.execute_script("document.querySelector('form.actions input[name=csrf_token]').value = 'forged'")
    _click(page, By.CSS_SELECTOR, "form.actions button")
    assert "CSRF" in page.find_element(By.CSS_SELECTOR, "p.error").text
    assert page.title.startswith("Forbidden")
    assert requests.get(api, timeout=10).json()["status"] == status, "nothing changed"


def test_sign_in_with_a_token_shows_only_the_granted_scope(page: webdriver.Chrome, secured: Secured) -> None:
    _open(page, secured.url, "catalog")
    assert page.title == "Sign in · Streamcat", "asked to sign in first"
    page.find_element(By.XPATH, "//label[text()='token']")
    page.find_element(By.ID, "token").send_keys(secured.token)
    _click(page, By.XPATH, "//button[text()='Sign in']")
    assert page.title == "Catalog · Streamcat", "back where it was going"
    assert _texts(page, "ul.scopes a") == ["shop"]
    _open(page, secured.url, "")
    assert "1 namespaces" in _texts(page, ".count")
    _open(page, secured.url, "catalog/table", scope="vault", table="orders")
    assert page.find_element(By.TAG_NAME, "h1").text == "Forbidden"
    _open(page, secured.url, "materialized/table", scope="shop", table="big_orders")
    assert page.find_elements(By.CSS_SELECTOR, "form.actions") == [], "a reader gets no actions"
