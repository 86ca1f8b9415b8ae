"""The layers point one way, and the client side runs without the server's dependencies.

The import graph is read from the source (every import statement, at module level or inside
a function), so an import hidden in a function to dodge a cycle counts like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Where each top-level package of the project lives.
PACKAGES = {
    "registry": ROOT / "registry",
    "catalog_api": ROOT / "catalog_api",
    "migrations": ROOT / "migrations",
    "spark_plugin": ROOT / "spark_plugin",
    "pyspark_streamcat": ROOT / "spark_plugin" / "pyspark_streamcat",
}
SERVER_LAYER = "catalog_api.server"
#: The web UI: a client of the registry's and the catalog's services, as the REST views are.
UI_LAYER = "catalog_api.ui"
SERVER_LIBRARIES = ("flask", "werkzeug", "sqlalchemy", "alembic", "gunicorn", "psycopg", "prometheus_client")
#: The client side: what producers, consumers and Spark executors import.
CLIENT_MODULES = (
    "registry.client",
    "registry.serde",
    "registry.api.models",
    "catalog_api.client",
    "catalog_api.streams",
    "catalog_api.api.models",
    "pyspark_streamcat",
    "spark_plugin.functions",
)


def _module_name(path: Path) -> str:
    # the innermost folder names the package (pyspark_streamcat lives inside spark_plugin/)
    for package, folder in sorted(PACKAGES.items(), key=lambda item: -len(item[1].parts)):
        if folder in path.parents or path.parent == folder:
            relative = path.relative_to(folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            return ".".join([package, *parts])
    raise AssertionError(f"{path} is in no package")


@cache
def modules() -> dict[str, Path]:
    """Every module of the project, by dotted name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            if package == "spark_plugin" and PACKAGES["pyspark_streamcat"] in path.parents:
                continue
            found[_module_name(path)] = path
    return found


def _imports(name: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            yield prefix
            # ``from package import module`` imports the module too
            yield from (f"{prefix}.{alias.name}" for alias in node.names if f"{prefix}.{alias.name}" in modules())


@cache
def imports_of(name: str) -> frozenset[str]:
    """What module ``name`` imports, directly."""
    return frozenset(_imports(name, modules()[name]))


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def reachable(start: str) -> dict[str, str]:
    """Every module ``start`` imports, directly or through project modules, with who imports it."""
    seen: dict[str, str] = {}
    pending = [m for m in modules() if _within(m, start)]
    for module in pending:
        seen.setdefault(module, start)
    while pending:
        module = pending.pop()
        for target in imports_of(module):
            if target in seen:
                continue
            seen[target] = module
            if target in modules():
                pending.append(target)
            # importing a.b.c runs a/__init__.py and a/b/__init__.py first
            parts = target.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if parent in modules() and parent not in seen:
                    seen[parent] = module
                    pending.append(parent)
    return seen


def _offenders(start: str, banned: tuple[str, ...]) -> list[str]:
    found = reachable(start)
    bad = [target for target in found if any(_within(target, b) for b in banned)]
    return sorted(f"{target} (imported by {found[target]})" for target in bad)


def test_the_graph_reader_sees_imports() -> None:
    # A sanity check of the reader itself: the app factory certainly imports both domains and Flask.
    found = reachable("catalog_api.server.app")
    assert {"flask", "registry.service", "catalog_api.service", "sqlalchemy"} <= set(found)


def test_registry_knows_nothing_of_the_catalog_the_server_or_spark() -> None:
    banned = ("catalog_api", "spark_plugin", "pyspark_streamcat")
    offenders = [
        f"{module} imports {target}"
        for module in modules()
        if _within(module, "registry")
        for target in imports_of(module)
        if any(_within(target, b) for b in banned)
    ]
    assert offenders == []


def test_catalog_domain_does_not_import_the_server_layer() -> None:
    offenders = [
        f"{module} imports {target}"
        for module in modules()
        if _within(module, "catalog_api") and not _within(module, SERVER_LAYER)
        for target in imports_of(module)
        if _within(target, SERVER_LAYER)
    ]
    assert offenders == []


def test_catalog_reaches_the_registry_only_through_its_service_interface() -> None:
    # No registry rows, stores or caches: the catalog's store and service see SchemaGroups.
    banned = ("registry.store", "registry.service", "registry.db")
    offenders = [
        f"{module} imports {target}"
        for module in modules()
        if _within(module, "catalog_api")
        and not _within(module, SERVER_LAYER)
        and not _within(module, UI_LAYER)
        and module not in ("catalog_api.orm", "catalog_api.views.orm", "catalog_api.materialized.orm")
        for target in imports_of(module)
        if any(_within(target, b) for b in banned)
        and not (
            module in ("catalog_api.sql", "catalog_api.views.store", "catalog_api.materialized.store",
                       "catalog_api.materialized.service")
            and target == "registry.db"
        )
    ]
    assert offenders == []


def test_the_ui_reads_services_never_stores() -> None:
    # The UI is one more client of the services: no rows, stores or database sessions, and no shell.
    banned = ("registry.store", "registry.db", "catalog_api.store", "catalog_api.sql", "sqlalchemy", SERVER_LAYER)
    offenders = [
        f"{module} imports {target}"
        for module in modules()
        if _within(module, UI_LAYER)
        for target in imports_of(module)
        if any(_within(target, b) for b in banned) or target.endswith((".orm", ".store"))
    ]
    assert any(_within(m, UI_LAYER) for m in modules()), "the UI exists"
    assert offenders == []


@pytest.mark.parametrize("client", CLIENT_MODULES)
def test_client_modules_import_nothing_of_the_server(client: str) -> None:
    if not any(_within(m, client) for m in modules()):
        pytest.fail(f"client module {client} does not exist")
    assert _offenders(client, (*SERVER_LIBRARIES, SERVER_LAYER)) == []


def _layer(module: str) -> str:
    return SERVER_LAYER if _within(module, SERVER_LAYER) else module.split(".")[0]


def test_packages_form_no_cycle() -> None:
    # Packages (with the server layer apart from the catalog domain) must form a DAG.
    edges: dict[str, set[str]] = {}
    for module in modules():
        for target in imports_of(module):
            if target.split(".")[0] in PACKAGES and _layer(target) != _layer(module):
                edges.setdefault(_layer(module), set()).add(_layer(target))
    assert "catalog_api" in edges["catalog_api.server"], "the reader sees the server's imports"
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        assert node not in visiting, f"import cycle: {' -> '.join([*visiting, node])}"
        if node in done:
            return
        visiting.append(node)
        for target in sorted(edges.get(node, ())):
            visit(target)
        visiting.pop()
        done.add(node)

    for node in sorted(edges):
        visit(node)
