"""The UI tests' fixtures: one headless Chromium for the test session (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium), servers on 127.0.0.1, and a screenshot of the page into
the test's own tmp_path when a browser test fails."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.support.auth import AUDIENCE, ISSUER, Api, add_user, migrated
from tests.support.net import serve_in_thread
from tests.ui.browser import chromium
from tests.ui.world import World, populate

ROOT_PASSWORD = "root-password-1"
WENDY_PASSWORD = "wendy-password-1"


@dataclass(frozen=True)
class Secured:
    """A server with authentication, and the API token that may read scope ``shop`` only."""

    url: str
    token: str


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """One browser for the whole test session."""
    driver = chromium(tmp_path_factory.mktemp("chromium-profile"))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


#: Whether a test's call failed (for the ``page`` fixture's screenshot).
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep whether the test itself failed, which its fixtures' teardown then reads."""
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


@pytest.fixture
def page(browser: webdriver.Chrome, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[webdriver.Chrome]:
    """The browser, with its cookies cleared first and a screenshot taken into tmp_path if the test fails."""
    browser.delete_all_cookies()
    yield browser
    if request.node.stash.get(_FAILED, False):
        shot = tmp_path / "failure.png"
        browser.save_screenshot(str(shot))
        print(f"screenshot of the failing page: {shot} ({browser.current_url})")


@contextmanager
def ui_server(tmp: Path, auth: tuple[str, ...] = ("none",), oidc_jwks: str = "") -> Iterator[str]:
    """A migrated SQLite database and the application on it (trusting the JWTs of tests.support.auth's
    issuer signed by a key of ``oidc_jwks``, if given), served on 127.0.0.1; yields its URL."""
    url = migrated(f"sqlite:///{tmp}/ui.db")
    app = create_app(Settings(database_url=url, warehouse=str(tmp / "warehouse"), auth=auth, oidc_issuer=ISSUER,
                              oidc_audience=AUDIENCE, oidc_jwks=oidc_jwks))
    with serve_in_thread(app) as base:
        yield base


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A server without authentication, with the groups, tables and materialized table of tests.ui.world."""
    with ui_server(tmp_path_factory.mktemp("ui-open")) as base:
        yield populate(base)


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A server that asks who you are: the world of tests.ui.world in scope ``shop`` and again in scope
    ``vault``, an admin, a token that may read ``shop`` only, and a user who may write ``shop.big_orders``."""
    tmp = tmp_path_factory.mktemp("ui-secured")
    with ui_server(tmp, auth=("basic",)) as base:
        add_user(f"sqlite:///{tmp}/ui.db", "root", ROOT_PASSWORD, "admin")
        admin = Api(base, auth=("root", ROOT_PASSWORD))
        populate(base, "shop", auth=("root", ROOT_PASSWORD))
        populate(base, "vault", auth=("root", ROOT_PASSWORD))
        token = admin.ok("POST", "/v1/admin/principals/tokens", json={"name": "shop-reader"})["token"]
        admin.ok("POST", "/v1/admin/grants", json={"principal": "shop-reader", "permission": "read",
                                                  "resource": "scope:shop"})
        admin.ok("POST", "/v1/admin/principals/users", json={"name": "wendy", "password": WENDY_PASSWORD})
        admin.ok("POST", "/v1/admin/grants", json={"principal": "wendy", "permission": "write",
                                                  "resource": "table:shop.big_orders"})
        yield Secured(base, token)
