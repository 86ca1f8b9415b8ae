"""Alembic revisions: the only way the database schema is created or changed."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

from registry.db import normalize_url

SCRIPT_LOCATION = Path(__file__).parent


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for ``database_url`` using the revisions in this package."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("sqlalchemy.url", normalize_url(database_url).replace("%", "%%"))
    return config
