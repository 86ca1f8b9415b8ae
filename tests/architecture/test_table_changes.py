"""One definition of each table change per language.

Python: the wire union (``catalog_api.api.models.TableChange``) and the domain types
(``catalog_api.changes``) hold the same changes with the same members, and nothing else in the
project dispatches on a change's ``op`` string. Java: ``TableChanges.java`` writes each change in one
method named for its op, with the members the OpenAPI document (``/v1/openapi.json``) gives it, and no
other Java file writes a table change.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any, get_args

import pytest

from catalog_api import changes
from catalog_api.api import models as wire
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.architecture.test_layers import modules

ROOT = Path(__file__).resolve().parents[2]
JAVA = ROOT / "spark_plugin" / "java" / "streamcat" / "spark"
TABLE_CHANGES = JAVA / "TableChanges.java"
#: Where op strings may be spelled: the wire models (their ``op`` literals) and the domain types.
DEFINITIONS = {"catalog_api.changes", "catalog_api.api.models"}


def _wire_changes() -> dict[str, type[Any]]:
    union = get_args(get_args(wire.TableChange)[0])
    return {get_args(model.model_fields["op"].annotation)[0]: model for model in union}


def test_the_wire_union_and_the_domain_types_hold_the_same_changes_with_the_same_members() -> None:
    wire_changes = _wire_changes()
    assert list(changes.BY_OP) == list(changes.CHANGE_OPS)
    assert set(wire_changes) == set(changes.BY_OP)
    for op, model in wire_changes.items():
        members = {name for name in model.model_fields if name != "op"}
        domain = {f.name for f in dataclasses.fields(changes.BY_OP[op])}
        assert members == domain, f"{op}: the wire model has {sorted(members)}, the domain type {sorted(domain)}"


def test_a_wire_change_becomes_the_domain_change_of_its_op() -> None:
    request = wire.AlterTableRequest.model_validate({"changes": [
        {"op": "addColumn", "path": ["a", "b"], "type": {"type": "array", "elementType": "long", "containsNull": True},
         "position": {"after": "x"}, "default": {"current": "1 + 1", "exists": "2"}},
        {"op": "setCompatibility", "compatibility": {"policy": "Full"}},
        {"op": "updateColumnPosition", "path": ["a"], "position": {}},
    ]}, by_name=False)
    add, policy, move = request.to_domain()
    assert add == changes.AddColumn(("a", "b"), {"type": "array", "elementType": "long", "containsNull": True},
                                    position=changes.Position(after="x"), default=changes.ColumnDefault("1 + 1", "2"))
    assert isinstance(policy, changes.SetCompatibility)
    assert policy.compatibility.policy == "Full"
    assert move == changes.UpdateColumnPosition(("a",), None), "an empty position is no position"


def _op_comparisons(tree: ast.AST) -> list[str]:
    """Op strings compared with (``x == "addColumn"``, ``op in ("setProperty", ...)``) in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            found += [i.value for i in items if isinstance(i, ast.Constant) and i.value in changes.BY_OP]
    return found


def test_no_module_dispatches_on_op_strings() -> None:
    offenders = {
        name: ops
        for name, path in modules().items()
        if name not in DEFINITIONS and (ops := _op_comparisons(ast.parse(path.read_text())))
    }
    assert offenders == {}, "dispatch on a change's type (catalog_api.changes.apply), not on its op string"


# -- the Java shim against the OpenAPI document --------------------------------------------------------


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("openapi")
    app = create_app(Settings(database_url=f"sqlite:///{root}/x.db", warehouse=str(root)))
    with app.test_client() as http:
        found: dict[str, Any] = http.get("/v1/openapi.json").get_json()
    return found


def _schema(document: dict[str, Any], ref: str) -> dict[str, Any]:
    found: dict[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return found


def _refs(schema: Any) -> list[str]:
    """Every ``$ref`` inside ``schema``."""
    if isinstance(schema, dict):
        return ([schema["$ref"]] if "$ref" in schema else []) + [r for v in schema.values() for r in _refs(v)]
    if isinstance(schema, list):
        return [r for v in schema for r in _refs(v)]
    return []


def _java_methods(source: str) -> dict[str, str]:
    """The bodies of TableChanges.java's static methods returning an ObjectNode, by name."""
    starts = list(re.finditer(r"\n    (?:private )?static ObjectNode (\w+)\(", source))
    return {m[1]: source[m.end(): nxt.start() if nxt else len(source)]
            for m, nxt in zip(starts, [*starts[1:], None], strict=True)}


def _members(body: str) -> set[str]:
    return set(re.findall(r'\.(?:put|set)\("(\w+)"', body))


def test_the_java_shim_writes_each_change_as_the_document_gives_it(document: dict[str, Any]) -> None:
    union = document["components"]["schemas"]["AlterTableRequest"]["properties"]["changes"]["items"]
    mapping: dict[str, str] = union["discriminator"]["mapping"]
    methods = _java_methods(TABLE_CHANGES.read_text())
    written = {name: body for name, body in methods.items() if re.search(r'\b(?:change|column)\("', body)}
    assert written, "TableChanges.java writes no change"
    for name, body in written.items():
        ops = re.findall(r'\b(?:change|column)\("(\w+)"', body)
        assert ops == [name], f"TableChanges.{name} writes {ops}: one method per op, named for it"
        assert name in mapping, f"TableChanges.{name}: the document has no change {name!r}"
        schema = _schema(document, mapping[name])
        members = _members(body) | ({"path"} if "column(" in body else set())
        # members of the objects a change holds (a column's default, its position) are written in its method
        nested = {p for ref in _refs(schema["properties"]) for p in _schema(document, ref).get("properties", {})}
        unknown = members - set(schema["properties"]) - nested
        assert not unknown, f"TableChanges.{name} writes {sorted(unknown)}, which {mapping[name]} does not have"
        missing = set(schema.get("required", ())) - {"op"} - members
        assert not missing, f"TableChanges.{name} does not write {sorted(missing)}, which {mapping[name]} requires"
    position = _schema(document, next(r for r in _refs(_schema(document, mapping["addColumn"])) if "Position" in r))
    assert _members(methods["position"]) <= set(position["properties"])


def test_no_other_java_file_writes_a_table_change() -> None:
    ops = "|".join(changes.BY_OP)
    offenders = [
        path.name
        for path in JAVA.rglob("*.java")
        if path != TABLE_CHANGES and re.search(rf'put\("op",\s*"(?:{ops})"\)', path.read_text())
    ]
    assert offenders == [], "table changes are written by TableChanges.java"
