"""A headless Chromium that talks to nobody but the server under test (the tests and the docs'
screenshot script use the same one): Debian's ``chromium`` and ``chromium-driver``, through Selenium."""

from __future__ import annotations

import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

#: The flags of a browser that talks to nobody but the server under test.
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,900",
)


def chromium(profile: Path) -> webdriver.Chrome:
    """A headless Chromium with a fresh profile in ``profile`` (the docs' screenshot script uses it too)."""
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        raise RuntimeError("the UI tests need Debian's chromium and chromium-driver (apt-get install -y ...)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))
