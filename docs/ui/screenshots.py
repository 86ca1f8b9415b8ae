"""Make the screenshots of docs/ui.md: a server on 127.0.0.1 with the UI tests' data (tests/ui/world.py),
a few refreshes of its materialized table, and each page in the UI tests' headless Chromium.

    .venv/bin/python docs/ui/screenshots.py          # writes docs/ui/*.png
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from selenium import webdriver
from selenium.webdriver.common.by import By

from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient
from tests.support.net import serve_in_thread
from tests.ui.browser import chromium
from tests.ui.world import EVENT_BAD, append, populate, refresh

OUT = Path(__file__).resolve().parent
WIDTH = 1280


def shoot(driver: webdriver.Chrome, url: str, name: str, width: int = WIDTH) -> None:
    """Open ``url`` (unless empty: the page as it is) and save the whole page as ``OUT/name.png``."""
    if url:
        driver.get(url)
    driver.set_window_size(width, 900)
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(width, min(max(height, 600), 3000))
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(OUT / f"{name}.png"))
    print(f"docs/ui/{name}.png")


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    logging.getLogger("streamcat.audit").setLevel(logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="streamcat-ui-docs-"))
    try:
        database = f"sqlite:///{tmp / 'ui.db'}"
        migrate.upgrade(database)
        app = create_app(Settings(database_url=database, warehouse=str(tmp / "warehouse")))
        with serve_in_thread(app) as base:
            populate(base)
            for name in ("clicks", "payments", "customers"):
                RegistryClient(base, "shop").create_group(name, RegistryClient(base, "shop").get_group("events"))
            refresh(base)
            append(base)
            refresh(base, method="full: the source changed")
            driver = chromium(tmp / "profile")
            try:
                ui = f"{base}/ui/"
                shoot(driver, ui, "overview")
                shoot(driver, ui + "registry?" + urlencode({"namespace": "shop"}), "registry")
                group = ui + "registry/group?" + urlencode({"namespace": "shop", "group": "events"})
                driver.get(group)
                ids = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#left option")]
                driver.get(group + "&" + urlencode({"left": ids[0], "right": ids[-1]}))
                box = driver.find_element(By.ID, "candidate")
                box.clear()
                box.send_keys(json.dumps(EVENT_BAD, indent=2))
                driver.find_element(By.XPATH, "//button[text()='Check']").click()
                shoot(driver, "", "group")
                shoot(driver, ui + "catalog/scope?scope=shop", "scope")
                table = {"scope": "shop", "table": "orders", "cut": 2, "feed": 1}
                shoot(driver, ui + "catalog/table?" + urlencode(table), "table")
                shoot(driver, ui + "materialized", "materialized")
                mt = ui + "materialized/table?" + urlencode({"scope": "shop", "table": "big_orders"})
                shoot(driver, mt, "materialized-table")
                shoot(driver, mt, "materialized-table-narrow", width=420)
                shoot(driver, ui + "signin", "signin")
            finally:
                driver.quit()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
