"""An Iceberg client's commit, checked against the table's derived metadata and turned into the catalog's
table changes: requirements that no longer hold answer 409, updates Streamcat cannot take answer 406
with the reason, and the rest becomes one ALTER TABLE (the group's policy deciding a new schema)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from catalog_api.changes import RemoveProperty, SetProperty, TableChange
from catalog_api.iceberg.errors import NotSupported, RequirementFailed
from catalog_api.iceberg.evolution import column_changes
from catalog_api.iceberg.metadata import NAME_MAPPING_PROPERTY
from catalog_api.iceberg.model import Requirement, Update
from registry.errors import BadRequest

#: What each requirement compares, in the metadata.
_CHECKED = {
    "assert-table-uuid": ("uuid", "table-uuid"),
    "assert-current-schema-id": ("current-schema-id", "current-schema-id"),
    "assert-last-assigned-field-id": ("last-assigned-field-id", "last-column-id"),
    "assert-last-assigned-partition-id": ("last-assigned-partition-id", "last-partition-id"),
    "assert-default-spec-id": ("default-spec-id", "default-spec-id"),
    "assert-default-sort-order-id": ("default-sort-order-id", "default-sort-order-id"),
}
#: Updates refused, with the reason.
_REFUSED = {
    "remove-snapshot-ref": "branches and tags are not supported: 'main' follows the table's commits",
    "remove-snapshots": "snapshots are the table's commits: expire them with CALL streamcat.system.expire_snapshots",
    "add-spec": "change partitioning with ALTER TABLE ... (Spark) or Streamcat's API",
    "set-default-spec": "change partitioning with ALTER TABLE ... (Spark) or Streamcat's API",
    "add-sort-order": "Streamcat tables are unsorted",
    "set-default-sort-order": "Streamcat tables are unsorted",
    "set-location": "a table's location is its stream's and never moves",
}
#: The updates :func:`added_snapshots` takes (an append), which :func:`changes` leaves.
_DATA = ("add-snapshot", "set-snapshot-ref")
#: Properties derived from the commits, which clients cannot set.
_DERIVED = "streamcat."


def check(requirements: Sequence[Requirement], metadata: dict[str, Any]) -> None:
    """RequirementFailed (409) naming the first requirement that does not hold for ``metadata``."""
    for r in requirements:
        if r.type == "assert-create":
            raise RequirementFailed("the table exists already")
        if r.type == "assert-ref-snapshot-id":
            ref = r.values.get("ref")
            if ref != "main":
                raise RequirementFailed(f"the table has no ref {ref!r}: only 'main'")
            wanted, current = r.values.get("snapshot-id"), metadata["current-snapshot-id"]
            current = None if current == -1 else current
            if wanted != current:
                raise RequirementFailed(f"ref main is at snapshot {current}, not {wanted}: the table changed; reload")
            continue
        if r.type not in _CHECKED:
            raise BadRequest(f"unknown requirement {r.type!r}")
        key, field = _CHECKED[r.type]
        if r.values.get(key) != metadata[field]:
            raise RequirementFailed(
                f"{r.type}: the table's {field} is {metadata[field]}, not {r.values.get(key)}; reload and retry"
            )


def changes(updates: Sequence[Update], metadata: dict[str, Any]) -> list[TableChange]:
    """The catalog's changes that make these updates (NotSupported or BadRequest for those it cannot)."""
    added: list[dict[str, Any]] = []
    current_id = metadata["current-schema-id"]
    target: dict[str, Any] | None = None
    found: list[TableChange] = []
    for u in updates:
        if u.action in _DATA:
            continue
        if u.action in _REFUSED:
            raise NotSupported(f"{u.action}: {_REFUSED[u.action]}")
        if u.action == "add-schema":
            schema = u.values.get("schema")
            if not isinstance(schema, dict):
                raise BadRequest("add-schema needs a schema")
            added.append(schema)
        elif u.action == "set-current-schema":
            wanted = u.values.get("schema-id")
            known = {s["schema-id"]: s for s in metadata["schemas"]}
            if wanted == -1:
                if not added:
                    raise BadRequest("set-current-schema -1 names the last added schema, and none was added")
                target = added[-1]
            elif wanted in known:
                target = None if wanted == current_id else known[wanted]
            else:
                matching = [s for s in added if s.get("schema-id") == wanted]
                if not matching:
                    raise BadRequest(f"set-current-schema: no schema {wanted}")
                target = matching[-1]
        elif u.action == "set-properties":
            values = u.values.get("updates") or {}
            _check_properties(values)
            # The name mapping is derived from every schema the table had (pyiceberg sends one with a rename).
            found.extend(SetProperty(str(k), str(v)) for k, v in values.items() if k != NAME_MAPPING_PROPERTY)
        elif u.action == "remove-properties":
            removals = u.values.get("removals") or []
            _check_properties(removals)
            found.extend(RemoveProperty(str(k)) for k in removals if k != NAME_MAPPING_PROPERTY)
        elif u.action == "assign-uuid":
            if u.values.get("uuid") != metadata["table-uuid"]:
                raise NotSupported("assign-uuid: a table's uuid is derived and cannot change")
        elif u.action == "upgrade-format-version":
            if u.values.get("format-version") != 2:
                raise NotSupported("the catalog serves format version 2")
        else:
            raise NotSupported(f"{u.action}: not supported by Streamcat's Iceberg catalog")
    if target is not None:
        current = next(s for s in metadata["schemas"] if s["schema-id"] == current_id)
        found = [*column_changes(current, target), *found]
    return found


def added_snapshots(updates: Sequence[Update]) -> list[dict[str, Any]]:
    """The snapshots a commit adds (pyiceberg's append: ``add-snapshot``, then ``set-snapshot-ref`` moving
    'main' to it), in order; NotSupported for refs other than 'main' or 'main' moved elsewhere."""
    added = [u.values.get("snapshot") for u in updates if u.action == "add-snapshot"]
    if not all(isinstance(s, dict) for s in added):
        raise BadRequest("add-snapshot needs a snapshot")
    snapshots = [s for s in added if isinstance(s, dict)]
    ids = [s.get("snapshot-id") for s in snapshots]
    moves = [u for u in updates if u.action == "set-snapshot-ref"]
    for u in moves:
        if u.values.get("ref-name") != "main" or u.values.get("type", "branch") != "branch":
            raise NotSupported("set-snapshot-ref: branches and tags are not supported: 'main' follows the table's "
                               "commits")
        if u.values.get("snapshot-id") not in ids:
            raise NotSupported("set-snapshot-ref: 'main' follows the table's commits; it moves only to a snapshot "
                               "the same commit adds")
    if snapshots and (not moves or moves[-1].values.get("snapshot-id") != ids[-1]):
        raise NotSupported("add-snapshot: a snapshot becomes visible only as 'main' (set-snapshot-ref to the last "
                           "snapshot the commit adds): branches are not supported")
    return snapshots


def _check_properties(keys: Any) -> None:
    for key in keys:
        if str(key).startswith(_DERIVED):
            raise BadRequest(f"property {key!r} is derived from the table's commits and cannot be set or removed")
