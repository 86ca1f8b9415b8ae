"""The client side runs in an environment that holds only the client's dependencies.

The environment is a fresh virtualenv (no system packages) whose site-packages link to the
installed distributions of the ``client`` dependency group of pyproject.toml and what they
require, nothing else; so no network is needed. A producer's whole path runs in it against a
real server: create a stream, write events with the stream writer (registering the schema),
read them back with the stream reader.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
import tomllib
import venv
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from catalog_api.server.migrate import upgrade
from tests.support.net import serve_in_thread

ROOT = Path(__file__).resolve().parents[2]


def _requirement_names(requirements: list[str]) -> list[str]:
    return [re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0] for r in requirements]


def client_requirements() -> list[str]:
    """The names in the ``client`` dependency group."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return _requirement_names(project["dependency-groups"]["client"])


def _closure(names: list[str]) -> set[str]:
    """The distributions ``names`` need, transitively (extras and environment markers honoured)."""
    found: set[str] = set()
    pending = list(names)
    while pending:
        name = metadata.distribution(pending.pop()).metadata["Name"]
        if name.lower() in found:
            continue
        found.add(name.lower())
        for requirement in metadata.distribution(name).requires or []:
            if ";" in requirement and ("extra ==" in requirement or not _marker_holds(requirement)):
                continue
            pending.append(_requirement_names([requirement])[0])
    return found


def _marker_holds(requirement: str) -> bool:
    from packaging.requirements import Requirement

    marker = Requirement(requirement).marker
    return marker is None or marker.evaluate()


def _top_level_entries(name: str) -> Iterator[Path]:
    dist = metadata.distribution(name)
    seen: set[str] = set()
    for file in dist.files or []:
        top = file.parts[0]
        if top in seen or top.startswith("..") or top == "__pycache__":
            continue
        seen.add(top)
        yield Path(str(dist.locate_file(top)))


def make_client_environment(where: Path, names: list[str]) -> Path:
    """A virtualenv whose site-packages hold links to exactly the distributions ``names`` need."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(where)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )
    for name in sorted(_closure(names)):
        for entry in _top_level_entries(name):
            link = site / entry.name
            if entry.exists() and not link.exists():
                link.symlink_to(entry)
    # the project's source, as an editable install would put it on the path
    (site / "streamcat-source.pth").write_text(f"{ROOT}\n{ROOT / 'spark_plugin'}\n")
    return python


PRODUCER = textwrap.dedent(
    """
    import importlib, json, sys
    for server_side in ("flask", "werkzeug", "sqlalchemy", "alembic", "gunicorn", "psycopg"):
        try:
            importlib.import_module(server_side)
        except ImportError:
            continue
        sys.exit(f"{server_side} is importable in the client environment")

    from catalog_api.client import CatalogClient
    from catalog_api.streams import StreamReader, StreamWriter
    from registry.client import RegistryClient, schema_info
    from registry.model import Compatibility, GroupProperties, SerializationFormat
    import registry.serde

    url = sys.argv[1]
    catalog = CatalogClient(url)
    registry = RegistryClient(url, namespace="shop")
    catalog.create_scope("shop")
    catalog.create_stream("shop", "orders")
    backward = Compatibility.of("Backward")
    registry.create_group("orders", GroupProperties(SerializationFormat("Avro"), backward, False, {}))
    order = schema_info("Avro", json.dumps({"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}))
    with StreamWriter(catalog, registry, "shop", "orders", schema=order, writer_id="producer-1") as writer:
        for i in range(100):
            writer.write({"id": i, "item": f"item-{i}"}, routing_key=str(i % 7))
        writer.flush()
    read = sorted(r["id"] for r in StreamReader(catalog, registry, "shop", "orders").read())
    assert read == list(range(100)), read
    print("client ok", len(read))
    """
)


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of an environment holding only the client dependency group."""
    return make_client_environment(tmp_path_factory.mktemp("client-env"), client_requirements())


def test_the_client_environment_lacks_the_server_libraries(client_python: Path) -> None:
    assert "flask" not in _closure(client_requirements())
    result = subprocess.run([str(client_python), "-c", "import flask"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "No module named 'flask'" in result.stderr


def test_a_producer_writes_and_reads_a_stream_with_only_client_dependencies(
    client_python: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'client.db'}"
    upgrade(url)
    app = create_app(Settings(database_url=url, warehouse=str(tmp_path / "warehouse")))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    with serve_in_thread(app) as server:
        result = subprocess.run(
            [str(client_python), "-c", PRODUCER, server], capture_output=True, text=True, env=env, timeout=300
        )
    assert result.returncode == 0, result.stderr
    assert "client ok 100" in result.stdout


def test_the_spark_data_source_imports_with_client_and_spark_dependencies(tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    spark = _requirement_names(project["project"]["optional-dependencies"]["spark"])
    python = make_client_environment(tmp_path / "env", [*client_requirements(), *spark])
    code = (
        "import pyspark_streamcat, pyspark_streamcat.reader, pyspark_streamcat.writer, sys\n"
        "bad = [m for m in ('flask', 'sqlalchemy', 'alembic', 'gunicorn') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print(pyspark_streamcat.DefaultSource.name())\n"
    )
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "streamcat"
