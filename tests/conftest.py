"""Shared fixtures: a real PostgreSQL server, each backend migrated, a real HTTP server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient
from tests.support.net import serve_in_thread
from tests.support.postgres import PostgresServer, start_postgres

# Property tests check what holds, not how fast: a per-example deadline only fails them on a busy machine
# (CI and the test session's own PostgreSQL and Spark share two cores).
settings.register_profile("streamcat", deadline=None)
settings.load_profile("streamcat")

BACKENDS = ["sqlite", "postgresql"]
#: The session's SparkSession and its server, for every directory whose tests use Spark.
pytest_plugins = ["tests.support.spark"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole test session."""
    server = start_postgres()
    yield server
    server.stop()


def new_database(kind: str, tmp: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of ``kind``; PostgreSQL ones live on the session's server."""
    if kind == "sqlite":
        return f"sqlite:///{tmp / f'{uuid.uuid4().hex}.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database(f"t_{uuid.uuid4().hex[:16]}")


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database migrated to head, one per backend, shared by the session."""
    url = new_database(request.param, tmp_path_factory.mktemp("db"), request)
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="session")
def settings(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Server settings on the session's database of the current backend."""
    return Settings(database_url=database_url, warehouse=str(tmp_path_factory.mktemp("warehouse")))


@pytest.fixture(scope="session")
def server_url(settings: Settings) -> Iterator[str]:
    """The application served over real HTTP on 127.0.0.1."""
    with serve_in_thread(create_app(settings)) as url:
        yield url


@pytest.fixture
def namespace() -> str:
    """A namespace of this test's own, so tests never see each other's groups."""
    return f"ns{uuid.uuid4().hex[:12]}"


@pytest.fixture
def catalog(server_url: str) -> CatalogClient:
    """A catalog client on the test server."""
    return CatalogClient(server_url)


@pytest.fixture
def scope(catalog: CatalogClient, namespace: str) -> str:
    """A scope of this test's own: the catalog side of ``namespace``."""
    catalog.create_scope(namespace)
    return namespace


@pytest.fixture
def client(server_url: str, namespace: str) -> RegistryClient:
    """A registry client confined to the test's namespace."""
    return RegistryClient(server_url, namespace)
