"""Table changes (Spark's TableChange) applied to a StructType JSON schema.

Columns are addressed by a path of names, as Spark does: ``["address", "zip"]`` for a
nested field, ``element`` to step into an array's elements and ``key`` / ``value``
into a map's.

Column changes keep every column's field id (``catalog_api.schema.fieldids``): a schema made
before ids existed gets them at its first column change, in schema order, so that the version
it changes and the new one agree; an added column gets the highest id ever used plus one.
Column defaults follow Spark's metadata: ``CURRENT_DEFAULT`` (what an INSERT that omits the
column writes) and ``EXISTS_DEFAULT`` (what rows written before the column existed read).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from catalog_api.schema.defaults import CURRENT_DEFAULT, EXISTS_DEFAULT
from catalog_api.schema.fieldids import assign_field_ids, last_field_id
from registry.errors import BadRequest

Struct = dict[str, Any]

#: Operations on columns; the table ops (properties, comment, policy) do not touch the schema, and
#: setting the partitioning touches it only to give its columns field ids.
COLUMN_OPS = (
    "addColumn",
    "dropColumn",
    "renameColumn",
    "updateColumnType",
    "updateColumnNullability",
    "updateColumnComment",
    "updateColumnPosition",
    # ``default``: the new CURRENT_DEFAULT SQL text, empty or absent to drop it.
    "updateColumnDefault",
)
TABLE_OPS = ("setProperty", "removeProperty", "setComment", "setCompatibility")
#: Makes ``partitioning`` (the text form of docs/partitioning.md; empty: unpartitioned) the table's current
#: partition spec; at most once per request (:func:`partitioning_of`).
SET_PARTITIONING = "setPartitioning"
#: Every change op the catalog applies, in the order a refusal lists them (catalog_api.api.models'
#: ``TableChange`` has one model per op).
CHANGE_OPS = (*COLUMN_OPS, *TABLE_OPS, SET_PARTITIONING)


def check_ops(changes: Sequence[dict[str, Any]]) -> None:
    """Refuses (BadRequest listing every known op) changes of which one has an op not in :data:`CHANGE_OPS`."""
    unknown = [c.get("op") for c in changes if c.get("op") not in CHANGE_OPS]
    if unknown:
        raise BadRequest(f"unknown table changes {unknown}; expected {', '.join(CHANGE_OPS)}")


def partitioning_of(changes: Sequence[dict[str, Any]]) -> str | None:
    """The partitioning text the changes set (a missing or null ``partitioning``: "", unpartitioned), or None
    when none sets it; BadRequest when more than one does, whatever their texts."""
    texts = [str(c.get("partitioning") or "") for c in changes if c.get("op") == SET_PARTITIONING]
    if len(texts) > 1:
        raise BadRequest(f"a table's partitioning is set once per request, not {len(texts)} times")
    return texts[0] if texts else None


def _dotted(path: Sequence[str]) -> str:
    return ".".join(path)


def _container(struct: Struct, path: Sequence[str], change: str) -> Struct:
    """The struct that holds the column at ``path`` (path minus its last name)."""
    node: Any = struct
    for i, name in enumerate(path[:-1]):
        if isinstance(node, dict) and node.get("type") == "array" and name == "element":
            node = node["elementType"]
            continue
        if isinstance(node, dict) and node.get("type") == "map" and name in ("key", "value"):
            node = node["keyType" if name == "key" else "valueType"]
            continue
        if not isinstance(node, dict) or node.get("type") != "struct":
            raise BadRequest(f"{change}: {_dotted(path[:i])} is not a struct")
        found = next((f for f in node["fields"] if f["name"] == name), None)
        if found is None:
            raise BadRequest(f"{change}: column {_dotted(path[: i + 1])} does not exist")
        node = found["type"]
    if not isinstance(node, dict) or node.get("type") != "struct":
        raise BadRequest(f"{change}: {_dotted(path[:-1]) or 'the table'} is not a struct")
    return node


def _field_index(container: Struct, path: Sequence[str], change: str) -> int:
    for i, f in enumerate(container["fields"]):
        if f["name"] == path[-1]:
            return i
    raise BadRequest(f"{change}: column {_dotted(path)} does not exist")


def _place(fields: list[Any], new: Any, position: dict[str, Any] | None, change: str, path: Sequence[str]) -> None:
    if not position:
        fields.append(new)
    elif position.get("first"):
        fields.insert(0, new)
    elif "after" in position:
        index = next((i for i, f in enumerate(fields) if f["name"] == position["after"]), None)
        if index is None:
            raise BadRequest(f"{change}: column {position['after']!r} to place {_dotted(path)} after does not exist")
        fields.insert(index + 1, new)
    else:
        raise BadRequest(f"{change}: position must be {{'first': true}} or {{'after': name}}")


def _path(change: dict[str, Any]) -> list[str]:
    path = change.get("path")
    if not path or not all(isinstance(p, str) and p for p in path):
        raise BadRequest(f"{change.get('op')}: path must be a non-empty list of column names")
    return list(path)


def apply_column_changes(schema: Struct, changes: Sequence[dict[str, Any]]) -> Struct:
    """A new schema with the column changes applied in order; the input is left alone."""
    result = copy.deepcopy(schema)
    if not any(c["op"] in COLUMN_OPS for c in changes):
        return result
    # Ids first, on the schema as it is: a renamed or moved column keeps the id it had.
    assign_field_ids(result)
    last = last_field_id(result)
    for change in changes:
        op = change["op"]
        if op not in COLUMN_OPS:
            continue
        path = _path(change)
        container = _container(result, path, op)
        fields = container["fields"]
        if op == "addColumn":
            if any(f["name"] == path[-1] for f in fields):
                raise BadRequest(f"addColumn: column {_dotted(path)} already exists")
            metadata: dict[str, Any] = {"comment": change["comment"]} if change.get("comment") else {}
            metadata.update(_added_default(change, path))
            new = {
                "name": path[-1],
                "type": change["type"],
                "nullable": change.get("nullable", True),
                "metadata": metadata,
            }
            _place(fields, new, change.get("position"), op, path)
            continue
        index = _field_index(container, path, op)
        target = fields[index]
        if op == "dropColumn":
            fields.pop(index)
            if not fields and container is result:
                raise BadRequest(f"dropColumn: cannot drop {_dotted(path)}, the table's last column")
        elif op == "renameColumn":
            new_name = change.get("newName")
            if not new_name or any(f["name"] == new_name for f in fields):
                raise BadRequest(f"renameColumn: new name {new_name!r} is empty or taken")
            # The old name stays an alias, so data written before the rename still resolves.
            metadata = target.setdefault("metadata", {})
            aliases = [a for a in metadata.get("aliases", []) if a != new_name]
            metadata["aliases"] = [*aliases, target["name"]] if target["name"] not in aliases else aliases
            target["name"] = new_name
        elif op == "updateColumnType":
            target["type"] = change["type"]
        elif op == "updateColumnNullability":
            target["nullable"] = bool(change["nullable"])
        elif op == "updateColumnComment":
            target.setdefault("metadata", {})["comment"] = change.get("comment") or ""
        elif op == "updateColumnPosition":
            fields.pop(index)
            _place(fields, target, change.get("position"), op, path)
        elif op == "updateColumnDefault":
            metadata = target.setdefault("metadata", {})
            default = change.get("default")
            # Only what new rows get changes: rows written before the column existed keep reading
            # EXISTS_DEFAULT, as in Spark's own catalogs.
            if default:
                metadata[CURRENT_DEFAULT] = str(default)
            else:
                metadata.pop(CURRENT_DEFAULT, None)
    return assign_field_ids(result, last)


def _added_default(change: dict[str, Any], path: Sequence[str]) -> dict[str, str]:
    """The default metadata of an added column: ``default`` is ``{"current": sql, "exists": sql}``
    (Spark's CURRENT_DEFAULT and EXISTS_DEFAULT texts), or absent."""
    default = change.get("default")
    if default is None:
        return {}
    if not (isinstance(default, dict) and isinstance(default.get("current"), str) and default["current"]):
        raise BadRequest(f"addColumn: the default of {_dotted(path)} must be {{'current': sql, 'exists': sql}}")
    out = {CURRENT_DEFAULT: default["current"]}
    exists = default.get("exists")
    out[EXISTS_DEFAULT] = exists if isinstance(exists, str) and exists else default["current"]
    return out
