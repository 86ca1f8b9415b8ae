"""The application the contract tests run against: in-process, on SQLite and a temporary warehouse."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import delete, inspect

import catalog_api.orm  # noqa: F401  (the catalog's tables are emptied too)
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.db import Base


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    """The application on a fresh, migrated SQLite database."""
    root = tmp_path_factory.mktemp("contract")
    url = f"sqlite:///{root / 'contract.db'}"
    migrate.upgrade(url)
    return create_app(Settings(database_url=url, warehouse=str(root / "warehouse")))


def empty(app: Flask) -> None:
    """Delete every row the application wrote (the schema and its revision stay)."""
    with app.extensions["streamcat"].engine.begin() as conn:
        present = set(inspect(conn).get_table_names())
        for table in reversed(Base.metadata.sorted_tables):
            if table.name in present:
                conn.execute(delete(table))
