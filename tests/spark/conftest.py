"""Fixtures of the Spark tests; the session's SparkSession and its server are tests/support/spark.py's
(shared with tests/faults)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from catalog_api.server.config import Settings


@pytest.fixture
def external(spark_settings: Settings) -> Path:
    """A directory of this test's own under the root that LOCATION may name."""
    folder = Path(spark_settings.allowed_locations[0]) / uuid.uuid4().hex[:12]
    folder.mkdir()
    return folder


@pytest.fixture
def scope(spark: Any) -> str:
    """A Spark namespace (catalog scope) of this test's own."""
    name = f"ns{uuid.uuid4().hex[:12]}"
    spark.sql(f"CREATE NAMESPACE streamcat.{name}")
    return name
