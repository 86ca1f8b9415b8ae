"""Which column of a columnar chunk feeds which column of the reader's schema: by field id, not by name.

A columnar chunk is a Parquet file whose rows are all of one schema version (its encoding id).
Its columns are matched to the reader's (the table's current schema, StructType JSON) at every
struct level, nested structs included:

1. by id, when the file's columns have ids: Parquet field ids (``PARQUET:field_id``, which Spark's
   writer and ours write), or else the ids of the file's own schema version, matched to the file's
   columns by name (the file was written with that version's names);
2. a schema version made before ids existed gets the ids its first column change gave it (in
   schema order, ``catalog_api.schema.fieldids``): such "positional" ids are trusted only where the
   file's column has the reader column's name or one of its former names (aliases), and the
   column is otherwise matched by name and aliases, as Avro resolution matches, so that older
   versions of a table altered before ids existed still read;
3. by name, then former names, when the reader has no ids (a table never altered since ids exist).

A reader column no file column feeds is missing: it reads its ``EXISTS_DEFAULT`` or null. A file
column no reader column takes (a dropped column, or one dropped and added again under the same
name: a new id) is not read.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from catalog_api.schema.fieldids import assign_field_ids, field_id, has_field_ids

#: Arrow field metadata key of a Parquet field id (what pyarrow reads and writes).
PARQUET_FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class FileField:
    """One column of a file (at some struct level): its name, its id if known, its nested columns."""

    name: str
    id: int | None
    children: tuple[FileField, ...] | None = None
    #: the id comes from a schema version made before ids existed (see the module's rule 2)
    positional: bool = False


@dataclass(frozen=True)
class ColumnSource:
    """Where a reader column's values are in the file: the file's column ``name``, and, when the
    column is or holds structs, how their fields map (None: take the values as they are)."""

    name: str
    children: ColumnMap | None = None


#: Reader column name -> its source in the file; reader columns left out are missing there.
ColumnMap = dict[str, ColumnSource]


def _nested(dtype: Any) -> dict[str, Any] | None:
    """The struct inside a StructType-JSON type (itself, an array's elements, a map's values), if any."""
    while isinstance(dtype, dict):
        kind = dtype.get("type")
        if kind == "struct":
            return dtype
        if kind == "array":
            dtype = dtype.get("elementType")
        elif kind == "map":
            dtype = dtype.get("valueType")
        else:
            return None
    return None


def _arrow_nested(dtype: pa.DataType) -> pa.StructType | None:
    while True:
        if pa.types.is_struct(dtype):
            return dtype
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            dtype = dtype.value_type
        elif pa.types.is_map(dtype):
            dtype = dtype.item_type
        else:
            return None


def _parquet_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _has_parquet_ids(fields: Sequence[pa.Field]) -> bool:
    for f in fields:
        if _parquet_id(f) is not None:
            return True
        nested = _arrow_nested(f.type)
        if nested is not None and _has_parquet_ids(list(nested)):
            return True
    return False


def has_parquet_ids(schema: pa.Schema) -> bool:
    """Whether a file (its Arrow schema as pyarrow reads it) has Parquet field ids."""
    return _has_parquet_ids(list(schema))


def file_fields(schema: pa.Schema, writer: dict[str, Any] | None) -> tuple[FileField, ...]:
    """The columns of a file whose Arrow schema is ``schema``, with their ids: the file's Parquet field
    ids if it has any, else those of ``writer`` (its schema version, StructType JSON) by name, or the
    positional ids of a version made before ids existed; no ids when ``writer`` is None."""
    if has_parquet_ids(schema):
        return _from_parquet(list(schema))
    if writer is None:
        return _from_parquet(list(schema))  # no ids anywhere: names only
    positional = not has_field_ids(writer)
    if positional:
        writer = assign_field_ids(copy.deepcopy(writer))
    return _from_writer(list(schema), writer, positional)


def _from_parquet(fields: Sequence[pa.Field]) -> tuple[FileField, ...]:
    out = []
    for f in fields:
        nested = _arrow_nested(f.type)
        out.append(FileField(f.name, _parquet_id(f), _from_parquet(list(nested)) if nested is not None else None))
    return tuple(out)


def _from_writer(fields: Sequence[pa.Field], writer: dict[str, Any], positional: bool) -> tuple[FileField, ...]:
    by_name = {w["name"]: w for w in writer.get("fields", [])}
    out = []
    for f in fields:
        w = by_name.get(f.name)
        nested = _arrow_nested(f.type)
        children = None
        if nested is not None:
            inner = _nested(w.get("type")) if w is not None else None
            children = (_from_writer(list(nested), inner, positional) if inner is not None
                        else _from_parquet(list(nested)))
        out.append(FileField(f.name, field_id(w) if w is not None else None, children, positional))
    return tuple(out)


def _names(reader: dict[str, Any]) -> list[str]:
    aliases = (reader.get("metadata") or {}).get("aliases") or []
    return [reader["name"], *(a for a in aliases if isinstance(a, str))]


def _by_name(names: Sequence[str], fields: Sequence[FileField], ignore_case: bool) -> FileField | None:
    for name in names:
        exact = [f for f in fields if f.name == name]
        if exact:
            return exact[0]
        if ignore_case:
            folded = [f for f in fields if f.name.lower() == name.lower()]
            if len(folded) == 1:
                return folded[0]
    return None


def _match(reader: dict[str, Any], fields: Sequence[FileField], ids: dict[int, FileField],
           ignore_case: bool) -> FileField | None:
    wanted = field_id(reader)
    if wanted is None or not ids:
        return _by_name(_names(reader), fields, ignore_case)
    found = ids.get(wanted)
    if found is None or not found.positional:
        return found
    names = {n.lower() if ignore_case else n for n in _names(reader)}
    if (found.name.lower() if ignore_case else found.name) in names:
        return found
    # A positional id that names another column: the file is of a version older than the one ids
    # were first given to, made before ids existed; names are all that can tell there (rule 2).
    return _by_name(_names(reader), fields, ignore_case)


def plan(reader: dict[str, Any], fields: Sequence[FileField], ignore_case: bool = False) -> ColumnMap:
    """Which file column feeds each column of the struct ``reader`` (StructType JSON), nested too.

    ``ignore_case``: names also match ignoring case when that is unambiguous (Spark's resolution).
    """
    ids = {f.id: f for f in fields if f.id is not None}
    columns = reader.get("fields", [])
    out: ColumnMap = {}
    for column in columns:
        found = _match(column, fields, ids, ignore_case)
        if found is None:
            continue
        inner = _nested(column.get("type"))
        children = plan(inner, found.children, ignore_case) if inner is not None and found.children is not None \
            else None
        out[column["name"]] = ColumnSource(found.name, children)
    return out


def _unsliced(array: pa.Array) -> pa.Array:
    # Child arrays of nested types ignore the parent's slice offset; a copy without offset keeps them aligned.
    return pa.concat_arrays([array]) if array.offset else array


def _renamed(array: pa.Array, children: ColumnMap) -> pa.Array:
    """``array`` with the struct fields inside it (itself, list elements, map values) taken as ``children`` says."""
    kind = array.type
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(kind):
        array = _unsliced(array)
        parts = [_renamed(array.field(source.name), source.children) if source.children is not None
                 else array.field(source.name) for source in children.values()]
        if not parts:
            # No field of the struct is in the file: a placeholder no reader name can match keeps the length.
            return pa.StructArray.from_arrays([pa.nulls(len(array))], names=["\x00"], mask=mask)
        return pa.StructArray.from_arrays(parts, names=list(children), mask=mask)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        array = _unsliced(array)
        values = _renamed(array.values, children)
        builder = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
        return builder.from_arrays(array.offsets, values, mask=mask)
    if pa.types.is_map(kind):
        array = _unsliced(array)
        return pa.MapArray.from_arrays(array.offsets, array.keys, _renamed(array.items, children), mask=mask)
    return array


def _chunked_renamed(column: pa.ChunkedArray, children: ColumnMap) -> pa.ChunkedArray:
    chunks = column.chunks or [pa.array([], type=column.type)]
    renamed = [_renamed(c, children) for c in chunks]
    return pa.chunked_array(renamed if column.chunks else [], type=renamed[0].type)


def select_columns(data: pa.Table, columns: ColumnMap) -> pa.Table:
    """The file's rows ``data`` as the reader's columns that ``columns`` maps, under the reader's names
    (nested struct fields renamed and the unmapped left out), in the reader's order."""
    arrays = []
    for source in columns.values():
        column = data.column(source.name)
        arrays.append(column if source.children is None else _chunked_renamed(column, source.children))
    return pa.Table.from_arrays(arrays, names=list(columns)) if arrays else data.select([])


def select_batch_columns(batch: pa.RecordBatch, columns: ColumnMap) -> pa.RecordBatch:
    """:func:`select_columns` of one record batch."""
    arrays = []
    for source in columns.values():
        column = batch.column(source.name)
        arrays.append(column if source.children is None else _renamed(column, source.children))
    return pa.RecordBatch.from_arrays(arrays, names=list(columns)) if arrays else batch.select([])


def file_columns(columns: ColumnMap) -> list[str]:
    """The top-level file columns a read under ``columns`` needs (what to ask the Parquet reader for)."""
    return [source.name for source in columns.values()]


def version_fields(writer: dict[str, Any]) -> tuple[FileField, ...]:
    """The columns of records written under the schema version ``writer`` (StructType JSON), with its ids
    (or, made before ids existed, its positional ones): what events of that version hold."""
    positional = not has_field_ids(writer)
    if positional:
        writer = assign_field_ids(copy.deepcopy(writer))
    out = []
    for f in writer.get("fields", []):
        inner = _nested(f.get("type"))
        out.append(FileField(f["name"], field_id(f), version_fields(inner) if inner is not None else None, positional))
    return tuple(out)


def exact_avro_reader(reader_avro: dict[str, Any], reader: dict[str, Any], writer: dict[str, Any],
                      writer_avro: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """An Avro reader schema that resolves records of ``writer_avro`` as field ids say, with the names to
    give its fields back; None when Avro's own resolution (by name, then aliases) already does.

    Avro resolution takes a reader field's name before its aliases, so a column dropped and added again
    under its old name would read the old column's values, and a column renamed into a dropped one's
    name would read that one's. The schema returned renames every top-level field to a name no writer
    field has, aliased to exactly the writer field its id matches (none: its default), so Avro's own
    resolution does the rest (promotions, defaults, nested records); ``reader`` and ``writer`` are the
    two versions' Spark schemas (StructType JSON, with their ids).
    """
    columns = plan(reader, version_fields(writer))
    written = [f["name"] for f in writer_avro.get("fields", [])]
    agrees = True
    for f in reader_avro.get("fields", []):
        avro_pick = next((n for n in (f["name"], *f.get("aliases", ())) if n in written), None)
        source = columns.get(f["name"])
        if avro_pick != (source.name if source is not None else None):
            agrees = False
            break
    if agrees:
        return None
    exact = copy.deepcopy(reader_avro)
    names: dict[str, str] = {}
    taken = set(written) | {f["name"] for f in exact.get("fields", [])}
    for index, f in enumerate(exact.get("fields", [])):
        temporary = f"_streamcat_{index}"
        while temporary in taken:
            temporary += "_"
        names[temporary] = f["name"]
        source = columns.get(f["name"])
        f["aliases"] = [source.name] if source is not None else []
        f["name"] = temporary
    return exact, names
