"""Table changes (Spark's TableChange): one domain type per change, and :func:`apply`, which applies a
request's changes to a table, dispatching on each change's type.

The wire union (``catalog_api.api.models.TableChange``) builds these once
(``AlterTableRequest.to_domain()``); what it guarantees (a known ``op``, members of the right types, a
Spark type that parses) is not checked again here, only what depends on the table.

Columns are addressed by a path of names, as Spark does: ``("address", "zip")`` for a nested field,
``element`` to step into an array's elements and ``key`` / ``value`` into a map's.

Column changes keep every column's field id (``catalog_api.schema.fieldids``): a schema made before
ids existed gets them at its first column change, in schema order, so that the version it changes
and the new one agree; an added column gets the highest id ever used plus one. Column defaults
follow Spark's metadata: ``CURRENT_DEFAULT`` (what an INSERT that omits the column writes) and
``EXISTS_DEFAULT`` (what rows written before the column existed read).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import singledispatch
from typing import Any, ClassVar, TypeAlias

from catalog_api.groups import SchemaGroups
from catalog_api.model import PRIMARY_KEY_PROPERTY, Table, primary_key
from catalog_api.schema.defaults import CURRENT_DEFAULT, EXISTS_DEFAULT
from catalog_api.schema.fieldids import assign_field_ids, last_field_id
from registry.errors import BadRequest
from registry.ids import GroupName, Namespace
from registry.model import SIMPLE_POLICIES, Compatibility

Struct = dict[str, Any]
#: A column by its path of names.
ColumnPath = tuple[str, ...]
#: A Spark data type in its JSON form, as the wire model validated it: a name or an object.
SparkType = str | dict[str, Any]
#: The table property that sets the group's policy instead of being stored.
POLICY_PROPERTY = "compatibility"

_POLICY_NAMES = {p.lower().replace("_", ""): p for p in SIMPLE_POLICIES}


def policy_from_property(value: str) -> Compatibility:
    """A policy from a TBLPROPERTIES value: ``BACKWARD``, ``full_transitive``, ``FullTransitive``..."""
    key = value.strip().lower().replace("_", "").replace("-", "")
    if key not in _POLICY_NAMES:
        raise BadRequest(f"unknown compatibility {value!r}; expected one of {', '.join(_POLICY_NAMES.values())}")
    return Compatibility.of(_POLICY_NAMES[key])


# -- the changes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    """Where a column goes: first, or after the sibling ``after``; neither is refused when applied."""

    first: bool = False
    after: str | None = None


@dataclass(frozen=True)
class ColumnDefault:
    """An added column's DEFAULT: the SQL written (CURRENT_DEFAULT) and the literal rows written before the
    column existed read (EXISTS_DEFAULT; ``current`` when None)."""

    current: str
    exists: str | None = None


@dataclass(frozen=True)
class AddColumn:
    """Add a column at ``path`` (last unless placed), with a comment and a DEFAULT if given."""

    op: ClassVar[str] = "addColumn"
    path: ColumnPath
    type: SparkType
    nullable: bool = True
    comment: str | None = None
    position: Position | None = None
    default: ColumnDefault | None = None


@dataclass(frozen=True)
class DropColumn:
    """Drop the column at ``path``."""

    op: ClassVar[str] = "dropColumn"
    path: ColumnPath


@dataclass(frozen=True)
class RenameColumn:
    """Rename the column at ``path``; the old name stays an alias (docs/decisions.md)."""

    op: ClassVar[str] = "renameColumn"
    path: ColumnPath
    new_name: str


@dataclass(frozen=True)
class UpdateColumnType:
    """Change the column's type (the group's policy decides whether that is allowed)."""

    op: ClassVar[str] = "updateColumnType"
    path: ColumnPath
    type: SparkType


@dataclass(frozen=True)
class UpdateColumnNullability:
    """Make the column nullable or not."""

    op: ClassVar[str] = "updateColumnNullability"
    path: ColumnPath
    nullable: bool


@dataclass(frozen=True)
class UpdateColumnComment:
    """Set (None: clear) the column's comment."""

    op: ClassVar[str] = "updateColumnComment"
    path: ColumnPath
    comment: str | None = None


@dataclass(frozen=True)
class UpdateColumnPosition:
    """Move the column (to the end when no position is given)."""

    op: ClassVar[str] = "updateColumnPosition"
    path: ColumnPath
    position: Position | None = None


@dataclass(frozen=True)
class UpdateColumnDefault:
    """Set (empty or None: drop) the DEFAULT new rows get; older rows keep their EXISTS_DEFAULT."""

    op: ClassVar[str] = "updateColumnDefault"
    path: ColumnPath
    default: str | None = None


@dataclass(frozen=True)
class SetProperty:
    """Set a table property (:data:`POLICY_PROPERTY` sets the group's policy instead)."""

    op: ClassVar[str] = "setProperty"
    key: str
    value: str


@dataclass(frozen=True)
class RemoveProperty:
    """Remove a table property."""

    op: ClassVar[str] = "removeProperty"
    key: str


@dataclass(frozen=True)
class SetComment:
    """Set (None: clear) the table's comment."""

    op: ClassVar[str] = "setComment"
    comment: str | None = None


@dataclass(frozen=True)
class SetCompatibility:
    """Set the compatibility policy of the table's group."""

    op: ClassVar[str] = "setCompatibility"
    compatibility: Compatibility


@dataclass(frozen=True)
class SetPartitioning:
    """Make ``partitioning`` (the text form of docs/partitioning.md; empty: unpartitioned) the table's current
    partition spec; at most once per request (:func:`partitioning_of`)."""

    op: ClassVar[str] = "setPartitioning"
    partitioning: str


ColumnChange: TypeAlias = (
    AddColumn
    | DropColumn
    | RenameColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnComment
    | UpdateColumnPosition
    | UpdateColumnDefault
)
TableChange: TypeAlias = ColumnChange | SetProperty | RemoveProperty | SetComment | SetCompatibility | SetPartitioning
_COLUMN_CHANGES: tuple[type[ColumnChange], ...] = (
    AddColumn,
    DropColumn,
    RenameColumn,
    UpdateColumnType,
    UpdateColumnNullability,
    UpdateColumnComment,
    UpdateColumnPosition,
    UpdateColumnDefault,
)
#: Every change type, column changes first, in the order a refusal lists them.
CHANGES: tuple[type[TableChange], ...] = (
    *_COLUMN_CHANGES, SetProperty, RemoveProperty, SetComment, SetCompatibility, SetPartitioning
)
#: The change types by their ``op`` on the wire.
BY_OP: dict[str, type[TableChange]] = {kind.op: kind for kind in CHANGES}
#: Every change op the catalog applies.
CHANGE_OPS = tuple(BY_OP)


def sets_policy(changes: Sequence[TableChange]) -> bool:
    """Whether the changes set the group's policy, however it is spelled (an admin's change)."""
    return any(
        isinstance(c, SetCompatibility) or (isinstance(c, SetProperty | RemoveProperty) and c.key == POLICY_PROPERTY)
        for c in changes
    )


def partitioning_of(changes: Sequence[TableChange]) -> str | None:
    """The partitioning text the changes set, or None when none sets it; BadRequest when more than one
    does, whatever their texts."""
    texts = [c.partitioning for c in changes if isinstance(c, SetPartitioning)]
    if len(texts) > 1:
        raise BadRequest(f"a table's partitioning is set once per request, not {len(texts)} times")
    return texts[0] if texts else None


# -- applying them ----------------------------------------------------------------------------------


@dataclass
class Altered:
    """A table as changes leave it: its schema (the current one when no column changed), properties and
    comment, whether a column was dropped, and the partitioning text set (None: the current spec stays)."""

    schema: Struct
    properties: dict[str, str]
    comment: str
    partitioning: str | None = None
    dropped: bool = False


@dataclass
class _Altering:
    """What applying one request's changes works on: the result so far, the properties the table had
    (the key rules read these), its key columns, and how to set its group's policy."""

    altered: Altered
    properties: Mapping[str, str]
    key: tuple[str, ...]
    set_policy: Callable[[Compatibility], None]


def apply(table: Table, changes: Sequence[TableChange], groups: SchemaGroups) -> Altered:
    """``table`` with ``changes`` applied in order (the group's policy set through ``groups``); refusals
    are BadRequest naming the change. The table's schema is left alone: the result has a new one."""
    namespace, group = Namespace(table.scope), GroupName(table.name)

    def set_policy(policy: Compatibility) -> None:
        groups.update_compatibility(namespace, group, policy, None)

    altered = Altered(copy.deepcopy(table.schema), dict(table.properties), table.comment)
    return _applied(_Altering(altered, table.properties, table.primary_key, set_policy), changes)


def apply_column_changes(schema: Struct, changes: Sequence[TableChange]) -> Struct:
    """A new schema with the column changes among ``changes`` applied in order; the input is left alone."""
    columns = [c for c in changes if isinstance(c, _COLUMN_CHANGES)]
    return _applied(_Altering(Altered(copy.deepcopy(schema), {}, ""), {}, (), _no_policy), columns).schema


def _no_policy(_policy: Compatibility) -> None:
    raise AssertionError("column changes set no policy")


def _applied(state: _Altering, changes: Sequence[TableChange]) -> Altered:
    schema = state.altered.schema
    columns = any(isinstance(c, _COLUMN_CHANGES) for c in changes)
    last = 0
    if columns:
        # Ids first, on the schema as it is: a renamed or moved column keeps the id it had.
        assign_field_ids(schema)
        last = last_field_id(schema)
    for change in changes:
        _apply(change, state)
    if columns:
        assign_field_ids(schema, last)
    return state.altered


@singledispatch
def _apply(change: TableChange, state: _Altering) -> None:
    raise TypeError(f"no rule applies {type(change).__name__}")  # every change type has its rule below


@_apply.register
def _set_property(change: SetProperty, state: _Altering) -> None:
    if change.key == PRIMARY_KEY_PROPERTY:
        _check_key_unchanged(state.properties, change)
    elif change.key == POLICY_PROPERTY:
        state.set_policy(policy_from_property(change.value))
    else:
        state.altered.properties[change.key] = change.value


@_apply.register
def _remove_property(change: RemoveProperty, state: _Altering) -> None:
    if change.key == PRIMARY_KEY_PROPERTY:
        _check_key_unchanged(state.properties, change)
    else:
        state.altered.properties.pop(change.key, None)


@_apply.register
def _set_comment(change: SetComment, state: _Altering) -> None:
    state.altered.comment = change.comment or ""


@_apply.register
def _set_compatibility(change: SetCompatibility, state: _Altering) -> None:
    state.set_policy(change.compatibility)


@_apply.register
def _set_partitioning(change: SetPartitioning, state: _Altering) -> None:
    state.altered.partitioning = change.partitioning


@_apply.register
def _add_column(change: AddColumn, state: _Altering) -> None:
    path = change.path
    fields = _container(state.altered.schema, path, change.op)["fields"]
    if any(f["name"] == path[-1] for f in fields):
        raise BadRequest(f"addColumn: column {_dotted(path)} already exists")
    metadata: dict[str, Any] = {"comment": change.comment} if change.comment else {}
    if change.default is not None:
        metadata[CURRENT_DEFAULT] = change.default.current
        metadata[EXISTS_DEFAULT] = change.default.exists or change.default.current
    new = {"name": path[-1], "type": copy.deepcopy(change.type), "nullable": change.nullable, "metadata": metadata}
    _place(fields, new, change.position, change.op, path)


@_apply.register
def _drop_column(change: DropColumn, state: _Altering) -> None:
    _keep_key(state, change, "drop")
    container = _container(state.altered.schema, change.path, change.op)
    fields = container["fields"]
    fields.pop(_field_index(container, change.path, change.op))
    state.altered.dropped = True
    if not fields and container is state.altered.schema:
        raise BadRequest(f"dropColumn: cannot drop {_dotted(change.path)}, the table's last column")


@_apply.register
def _rename_column(change: RenameColumn, state: _Altering) -> None:
    _keep_key(state, change, "rename")
    target, fields = _target(state, change)
    new_name = change.new_name
    if not new_name or any(f["name"] == new_name for f in fields):
        raise BadRequest(f"renameColumn: new name {new_name!r} is empty or taken")
    # The old name stays an alias, so data written before the rename still resolves.
    metadata = target.setdefault("metadata", {})
    aliases = [a for a in metadata.get("aliases", []) if a != new_name]
    metadata["aliases"] = [*aliases, target["name"]] if target["name"] not in aliases else aliases
    target["name"] = new_name


@_apply.register
def _update_column_type(change: UpdateColumnType, state: _Altering) -> None:
    _keep_key(state, change, "change the type of")
    target, _ = _target(state, change)
    target["type"] = copy.deepcopy(change.type)


@_apply.register
def _update_column_nullability(change: UpdateColumnNullability, state: _Altering) -> None:
    if change.nullable:
        _keep_key(state, change, "make nullable")
    target, _ = _target(state, change)
    target["nullable"] = change.nullable


@_apply.register
def _update_column_comment(change: UpdateColumnComment, state: _Altering) -> None:
    target, _ = _target(state, change)
    target.setdefault("metadata", {})["comment"] = change.comment or ""


@_apply.register
def _update_column_position(change: UpdateColumnPosition, state: _Altering) -> None:
    target, fields = _target(state, change)
    fields.remove(target)
    _place(fields, target, change.position, change.op, change.path)


@_apply.register
def _update_column_default(change: UpdateColumnDefault, state: _Altering) -> None:
    target, _ = _target(state, change)
    metadata = target.setdefault("metadata", {})
    # Only what new rows get changes: rows written before the column existed keep reading
    # EXISTS_DEFAULT, as in Spark's own catalogs.
    if change.default:
        metadata[CURRENT_DEFAULT] = change.default
    else:
        metadata.pop(CURRENT_DEFAULT, None)


# -- columns by path ---------------------------------------------------------------------------------


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


def _target(state: _Altering, change: ColumnChange) -> tuple[Struct, list[Any]]:
    """The column ``change`` changes, and the fields of the struct holding it."""
    container = _container(state.altered.schema, change.path, change.op)
    fields: list[Any] = container["fields"]
    return fields[_field_index(container, change.path, change.op)], fields


def _place(fields: list[Any], new: Any, position: Position | None, change: str, path: Sequence[str]) -> None:
    if position is None:
        fields.append(new)
    elif position.first:
        fields.insert(0, new)
    elif position.after is not None:
        index = next((i for i, f in enumerate(fields) if f["name"] == position.after), None)
        if index is None:
            raise BadRequest(f"{change}: column {position.after!r} to place {_dotted(path)} after does not exist")
        fields.insert(index + 1, new)
    else:
        raise BadRequest(f"{change}: position must be {{'first': true}} or {{'after': name}}")


# -- primary keys -------------------------------------------------------------------------------------


def _keep_key(state: _Altering, change: ColumnChange, what: str) -> None:
    """No change drops, renames, retypes or makes nullable a key column (BadRequest naming it)."""
    path = change.path
    if len(path) == 1 and path[0] in state.key:
        raise BadRequest(f"cannot {what} column {path[0]!r}: it is part of the table's primary key")


def _check_key_unchanged(properties: Mapping[str, str], change: SetProperty | RemoveProperty) -> None:
    """A table's key is set when it is created, and only then."""
    current = primary_key(dict(properties))
    if isinstance(change, SetProperty) and current and primary_key({PRIMARY_KEY_PROPERTY: change.value}) == current:
        return  # setting the key it has already changes nothing
    have = properties.get(PRIMARY_KEY_PROPERTY)
    what = "remove" if isinstance(change, RemoveProperty) else ("change" if have else "add")
    raise BadRequest(
        f"cannot {what} 'primary-key' of an existing table"
        + (f" (it is {have!r})" if have else " (it was created without one)")
        + "; a table's key is set when it is created"
    )
