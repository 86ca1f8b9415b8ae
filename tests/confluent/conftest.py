"""Fixtures of the Confluent API tests: a stock client per test, in a context of its own."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from tests.confluent.helpers import Raw


@pytest.fixture
def ctx() -> str:
    """A context (namespace) of this test's own, so that tests never see each other's subjects."""
    return f"c{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sr(server_url: str) -> SchemaRegistryClient:
    """The unmodified confluent-kafka Schema Registry client, pointed at the server's root."""
    return SchemaRegistryClient({"url": server_url})


@pytest.fixture
def raw(server_url: str) -> Raw:
    """Plain HTTP calls to the server's Confluent API."""
    return Raw(server_url)
