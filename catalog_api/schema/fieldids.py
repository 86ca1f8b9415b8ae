"""Stable column ids of table schemas (StructType JSON), as Iceberg keeps them.

Every struct field of a table's schema, top-level or nested (inside structs, array elements and
map values), carries a positive id in its metadata under :data:`FIELD_ID` (``parquet.field.id``,
the key Spark's Parquet reader and writer use, so Spark writes it into the files it writes). An id
follows its column through renames, type changes and moves; an added column gets the highest id
the table ever used plus one, so a column dropped and added again under the same name never
reads the old column's data. Readers match columns by id (``catalog_api.schema.resolution``).

The highest id ever used must survive the drop of the column that held it; the schema itself is
the only place the server keeps (a table's schema is its group's latest registry version), so it
is written, only when it is above every id still present, in the metadata of the first
top-level column under :data:`LAST_FIELD_ID`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

#: StructField metadata key of a column's id (Spark's own, honoured by its Parquet reader and writer).
FIELD_ID = "parquet.field.id"
#: StructField metadata key, on the first top-level column, of the highest id the table ever used,
#: when a dropped column held it.
LAST_FIELD_ID = "streamcat.last-field-id"

Struct = dict[str, Any]


def struct_fields(dtype: Any) -> Iterator[dict[str, Any]]:
    """Every struct field inside the type ``dtype`` (StructType JSON), depth first, in schema order:
    the fields of structs, and of structs inside array elements and map keys and values."""
    return (f for _, f in fields_by_path(dtype))


def fields_by_path(dtype: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """:func:`struct_fields` with the path of names of each (``element``, ``key``, ``value`` step into
    arrays and maps, as in table changes), below ``path``."""
    if not isinstance(dtype, dict):
        return
    kind = dtype.get("type")
    if kind == "struct":
        for f in dtype.get("fields", []):
            if isinstance(f, dict):
                here = (*path, f["name"])
                yield here, f
                yield from fields_by_path(f.get("type"), here)
    elif kind == "array":
        yield from fields_by_path(dtype.get("elementType"), (*path, "element"))
    elif kind == "map":
        yield from fields_by_path(dtype.get("keyType"), (*path, "key"))
        yield from fields_by_path(dtype.get("valueType"), (*path, "value"))


def field_id(f: dict[str, Any]) -> int | None:
    """The id of a struct field (JSON form), or None when it has no valid one."""
    value = (f.get("metadata") or {}).get(FIELD_ID)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def last_field_id(schema: Struct) -> int:
    """The highest id ``schema`` ever gave a column (0 when it has none)."""
    last = 0
    for f in struct_fields(schema):
        found = field_id(f)
        if found is not None:
            last = max(last, found)
        mark = (f.get("metadata") or {}).get(LAST_FIELD_ID)
        if isinstance(mark, int) and not isinstance(mark, bool):
            last = max(last, mark)
    return last


def has_field_ids(schema: Struct) -> bool:
    """Whether some column of ``schema`` has an id (a schema made before ids existed has none)."""
    return any(field_id(f) is not None for f in struct_fields(schema))


def assign_field_ids(schema: Struct, last: int = 0) -> Struct:
    """``schema`` (changed in place, and returned) with an id on every struct field.

    Ids already there are kept when valid and unique; the other fields get new ids, in schema
    order, above both ``last`` and every id and mark in ``schema``. The mark of the highest id
    is rewritten: present on the first column only when no column holds that id any more.
    """
    fields = list(struct_fields(schema))
    top = fields[0] if fields else None
    last = max(last, last_field_id(schema))
    seen: set[int] = set()
    for f in fields:
        metadata = f.setdefault("metadata", {})
        metadata.pop(LAST_FIELD_ID, None)
        found = field_id(f)
        if found is None or found in seen:
            last += 1
            found = last
            metadata[FIELD_ID] = found
        seen.add(found)
    if top is not None and seen and max(seen) < last:
        top_fields = schema.get("fields") or []
        if top_fields:
            top_fields[0].setdefault("metadata", {})[LAST_FIELD_ID] = last
    return schema


def ids_by_path(schema: Struct) -> dict[tuple[str, ...], int]:
    """The id of each column of ``schema`` by its path of names (:func:`fields_by_path`)."""
    return {path: fid for path, f in fields_by_path(schema) if (fid := field_id(f)) is not None}


def carry_field_ids(current: Struct, wanted: Struct) -> Struct:
    """``wanted`` (a whole new schema for a table whose schema is ``current``; changed in place and
    returned) with the ids of ``current``'s columns of the same path, and new ids for the others.

    A new schema that comes whole, as a materialized table's new query gives it, knows nothing of
    the table's ids (or carries those of the tables it reads): keeping a column's id when its path
    stays is what makes the table's older chunks read under the new schema.
    """
    known = ids_by_path(current)
    last = last_field_id(current)
    for path, f in fields_by_path(wanted):
        metadata = f.setdefault("metadata", {})
        metadata.pop(LAST_FIELD_ID, None)
        if path in known:
            metadata[FIELD_ID] = known[path]
        else:
            metadata.pop(FIELD_ID, None)
    return assign_field_ids(wanted, last)


def without_field_ids(schema: Struct) -> Struct:
    """A copy of ``schema`` without field ids or the mark of the highest one: what the columns are,
    whatever ids they were given (to compare schemas by content)."""
    out = copy.deepcopy(schema)
    for f in struct_fields(out):
        metadata = f.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop(FIELD_ID, None)
            metadata.pop(LAST_FIELD_ID, None)
    return out
