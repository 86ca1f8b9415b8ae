"""A server of the docs tests' own, as after ``make serve``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.support.net import serve_in_thread


@pytest.fixture(scope="session")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A new server (SQLite file, warehouse directory)."""
    root = tmp_path_factory.mktemp("docs-server")
    url = f"sqlite:///{root / 'catalog.db'}"
    migrate.upgrade(url)
    with serve_in_thread(create_app(Settings(database_url=url, warehouse=str(root / "warehouse")))) as served:
        yield served
