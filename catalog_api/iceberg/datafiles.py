"""The data files an Iceberg client's snapshot adds, found through the manifest list and manifests it
wrote under the table's location, and checked against the table's schema by their Parquet footers
(field ids and types): the server reads metadata only, never a data page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.iceberg.errors import NotSupported
from catalog_api.iceberg.writer import uri_of
from catalog_api.locations import safe_relative
from catalog_api.schema.resolution import PARQUET_FIELD_ID
from registry.errors import BadRequest

#: A manifest entry's status: the file was added, or removed, by the entry's snapshot.
_ADDED, _DELETED = 1, 2
#: Arrow types each Iceberg primitive type may be written as.
_ARROW_TYPES: dict[str, tuple[Any, ...]] = {
    "boolean": (pa.bool_(),),
    "int": (pa.int32(),),
    "long": (pa.int64(),),
    "float": (pa.float32(),),
    "double": (pa.float64(),),
    "string": (pa.string(), pa.large_string(), pa.string_view()),
    "binary": (pa.binary(), pa.large_binary(), pa.binary_view()),
    "date": (pa.date32(),),
    "timestamp": (pa.timestamp("us"),),
    "timestamptz": (pa.timestamp("us", "UTC"), pa.timestamp("us", "+00:00")),
}


@dataclass(frozen=True)
class AddedFile:
    """A data file a client's snapshot adds: its path relative to the table's location, rows and size."""

    path: str
    rows: int
    bytes: int


def relative(location: str, uri: str, what: str) -> str:
    """``uri`` (absolute, as Iceberg names files) relative to ``location``; BadRequest outside it."""
    for base in {uri_of(location).rstrip("/"), location.rstrip("/")}:
        if uri.startswith(base + "/"):
            path = uri[len(base) + 1:]
            if safe_relative(path):
                return path
    raise BadRequest(f"{what} {uri!r} is not a file under the table's location {uri_of(location)}")


def _avro_records(location: str, path: str) -> list[dict[str, Any]]:
    fs, root = storage.resolve(location)
    try:
        with fs.open_input_file(f"{root}/{path}") as source:
            return [r for r in fastavro.reader(source) if isinstance(r, dict)]
    except (OSError, ValueError) as e:
        raise BadRequest(f"cannot read {path} under the table's location: {e}") from None


@dataclass(frozen=True)
class SnapshotFiles:
    """The data files a client's snapshot adds, and the paths (relative to the location) of those it removes."""

    added: list[AddedFile]
    removed: list[str]


def snapshot_files(location: str, snapshot: dict[str, Any]) -> SnapshotFiles:
    """The data files ``snapshot`` (an ``add-snapshot``'s snapshot) adds and removes, by the manifests it
    wrote (those its manifest list names with its own id); NotSupported for delete files (row deletes)."""
    snapshot_id = snapshot.get("snapshot-id")
    listed = snapshot.get("manifest-list")
    if not isinstance(listed, str):
        raise BadRequest("add-snapshot needs a manifest-list")
    found = SnapshotFiles([], [])
    for manifest in _avro_records(location, relative(location, listed, "manifest list")):
        if manifest.get("added_snapshot_id") != snapshot_id:
            continue  # a manifest an earlier snapshot wrote: the table's own files
        if manifest.get("content", 0) != 0:
            raise NotSupported("add-snapshot: delete files (row-level deletes) are not supported; only appends and "
                               "overwrites of the whole table")
        path = relative(location, str(manifest.get("manifest_path")), "manifest")
        for entry in _avro_records(location, path):
            data = entry.get("data_file") or {}
            file = relative(location, str(data.get("file_path")), "data file")
            if entry.get("status") == _DELETED:
                found.removed.append(file)
            elif entry.get("status") == _ADDED:
                if str(data.get("file_format", "")).upper() != "PARQUET":
                    raise NotSupported(f"data file {file}: only Parquet data files are supported")
                found.added.append(AddedFile(file, int(data.get("record_count", 0)),
                                             int(data.get("file_size_in_bytes", 0))))
    return found


def _field_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
    return int(raw) if raw is not None else None


def _check_type(name: str, expected: Any, actual: pa.DataType) -> str | None:
    """Why ``actual`` is not a way to write Iceberg type ``expected`` (None: it is)."""
    if isinstance(expected, str):
        if expected.startswith("decimal"):
            ok = pa.types.is_decimal(actual) and f"decimal({actual.precision}, {actual.scale})" == expected
        else:
            ok = actual in _ARROW_TYPES.get(expected, ())
        return None if ok else f"is {actual}, not the table's {expected}"
    kind = expected.get("type")
    if kind == "struct":
        if not pa.types.is_struct(actual):
            return f"is {actual}, not a struct"
        problem = _check_fields(expected, list(actual), f"{name}.")
        return None if problem is None else problem
    if kind == "list":
        return None if pa.types.is_list(actual) or pa.types.is_large_list(actual) else f"is {actual}, not a list"
    if kind == "map":
        return None if pa.types.is_map(actual) else f"is {actual}, not a map"
    return f"has type {actual}, which the table's {expected} is not"


def _check_fields(struct: dict[str, Any], fields: list[pa.Field], prefix: str) -> str | None:
    """The first problem (naming the column) of a file's ``fields`` against Iceberg ``struct``, or None."""
    wanted = {int(f["id"]): f for f in struct.get("fields", [])}
    seen: set[int] = set()
    for f in fields:
        fid = _field_id(f)
        if fid is None:
            return f"column {prefix}{f.name} has no field id (the table's columns carry Iceberg field ids)"
        column = wanted.get(fid)
        if column is None:
            return f"column {prefix}{f.name} has field id {fid}, which is no column of the table"
        if column["name"] != f.name:
            return f"column {prefix}{f.name} has field id {fid}, which is the table's column {column['name']}"
        problem = _check_type(f"{prefix}{f.name}", column["type"], f.type)
        if problem is not None:
            return problem if problem.startswith("column ") else f"column {prefix}{f.name} {problem}"
        seen.add(fid)
    for fid, column in wanted.items():
        if fid not in seen and column.get("required"):
            return f"required column {prefix}{column['name']} is missing"
    return None


def check_footer(location: str, file: AddedFile, schema: dict[str, Any]) -> None:
    """BadRequest naming the column and the reason unless the Parquet file's columns carry the field ids
    and types of ``schema`` (the table's current Iceberg schema); reads the file's footer only."""
    fs, root = storage.resolve(location)
    try:
        with fs.open_input_file(f"{root}/{file.path}") as source:
            parquet = pq.ParquetFile(source)
            arrow, rows = parquet.schema_arrow, parquet.metadata.num_rows
    except (OSError, pa.ArrowException) as e:
        raise BadRequest(f"data file {file.path}: not a readable Parquet file: {e}") from None
    if rows != file.rows:
        raise BadRequest(f"data file {file.path}: its manifest says {file.rows} rows, its footer {rows}")
    problem = _check_fields(schema, list(arrow), "")
    if problem is not None:
        raise BadRequest(f"data file {file.path}: {problem}")
