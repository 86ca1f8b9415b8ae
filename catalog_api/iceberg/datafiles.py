"""The data files an Iceberg client's snapshot adds, found through the manifest list and manifests it
wrote under the table's location, and checked against the table's schema by their Parquet footers
(field ids and types): the server reads metadata only, never a data page."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.iceberg.errors import NotSupported
from catalog_api.locations import safe_relative
from catalog_api.partitioning.spec import BUCKET, PartitionSpec
from catalog_api.partitioning.transforms import apply
from catalog_api.schema.resolution import PARQUET_FIELD_ID
from catalog_api.storage import uri_of
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
    """A data file a client's snapshot adds: its path relative to the table's location, rows and size, the
    partition spec its manifest is of and its partition values by field name (as the manifest decodes them)."""

    path: str
    rows: int
    bytes: int
    spec_id: int = 0
    partition: dict[str, Any] = field(default_factory=dict)


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
        spec_id = int(manifest.get("partition_spec_id") or 0)
        for entry in _avro_records(location, path):
            data = entry.get("data_file") or {}
            file = relative(location, str(data.get("file_path")), "data file")
            if entry.get("status") == _DELETED:
                found.removed.append(file)
            elif entry.get("status") == _ADDED:
                if str(data.get("file_format", "")).upper() != "PARQUET":
                    raise NotSupported(f"data file {file}: only Parquet data files are supported")
                found.added.append(AddedFile(file, int(data.get("record_count", 0)),
                                             int(data.get("file_size_in_bytes", 0)), spec_id,
                                             dict(data.get("partition") or {})))
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


def _stats_units(value: Any) -> Any:
    """A partition value as a manifest decodes it, in chunk statistics' units (days, microseconds, base64)."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return (moment - _EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return (value - _EPOCH.date()).days
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass
class _ColumnRange:
    """What a file's row groups' statistics say of one column: its least and greatest value, and whether some
    value is null, some is not, or some row group has no bounds."""

    low: Any = None
    high: Any = None
    nulls: bool = False
    values: bool = False
    unknown: bool = False

    def add(self, statistics: Any, rows: int) -> None:
        if statistics is None:
            self.unknown = True
            return
        nulls = statistics.null_count if statistics.has_null_count else None
        if nulls is None:
            self.unknown = True
            return
        self.nulls = self.nulls or nulls > 0
        if nulls == rows:
            return
        self.values = True
        if not statistics.has_min_max:
            self.unknown = True
            return
        # Dates and timestamps compare as their stored days and microseconds (stats units).
        raw = statistics.physical_type in ("INT32", "INT64")
        low, high = (statistics.min_raw, statistics.max_raw) if raw else (statistics.min, statistics.max)
        self.low = low if self.low is None or low < self.low else self.low
        self.high = high if self.high is None or high > self.high else self.high


def _column_range(parquet: pq.ParquetFile, name: str) -> _ColumnRange:
    """The range of top-level column ``name`` over the file's row groups (a column the file lacks: all null)."""
    metadata = parquet.metadata
    found = _ColumnRange()
    leaf = next((i for i in range(metadata.num_columns) if metadata.schema.column(i).path == name), None)
    if leaf is None:
        found.nulls = metadata.num_rows > 0
        return found
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        found.add(group.column(leaf).statistics, group.num_rows)
    return found


def _partition_problem(parquet: pq.ParquetFile, file: AddedFile, spec: PartitionSpec, schema: dict[str, Any],
                       types: dict[int, str]) -> str | None:
    """Why the file's rows are not all in the partition its manifest gives it (None: they are): each value is
    checked against the bounds and null counts of its source column in the footer's statistics."""
    names = {int(f["id"]): str(f["name"]) for f in schema["fields"]}
    for f in spec.fields:
        column = names.get(f.source_id, f.source)
        declared = _stats_units(file.partition.get(f.name))
        seen = _column_range(parquet, column)
        if seen.unknown:
            return (f"column {column}: the file's statistics do not show which partition of {f.name} ({f.transform})"
                    " its rows are in")
        source_type = types.get(f.source_id)
        found: set[Any] = {None} if seen.nulls else set()
        if seen.values:
            if f.transform.kind == BUCKET and seen.low != seen.high:
                return (f"column {column}: the bucket of each of its values ({seen.low!r} to {seen.high!r}) cannot be "
                        f"checked from the file's statistics; write {f.transform} partitions with Spark or Streamcat's "
                        "writers")
            found |= {apply(f.transform, seen.low, source_type), apply(f.transform, seen.high, source_type)}
        if found != {declared}:
            shown = ", ".join(repr(v) for v in sorted(found, key=repr))
            return (f"column {column}: partition {f.name}={declared!r} ({f.transform}), but the file's rows have "
                    f"{shown}")
    return None


def partition_values(file: AddedFile, spec: PartitionSpec) -> list[Any]:
    """The file's partition values under ``spec`` (its manifest's), in chunk statistics' units, in spec order."""
    return [_stats_units(file.partition.get(f.name)) for f in spec.fields]


def check_footer(location: str, file: AddedFile, schema: dict[str, Any], spec: PartitionSpec | None = None,
                 types: dict[int, str] | None = None) -> None:
    """BadRequest naming the column and the reason unless the Parquet file's columns carry the field ids
    and types of ``schema`` (the table's current Iceberg schema) and, under a partitioned ``spec`` (the
    table's current one; ``types`` the Spark type names of its columns by id), its rows are in the partition
    its manifest gives it; reads the file's footer only."""
    fs, root = storage.resolve(location)
    try:
        with fs.open_input_file(f"{root}/{file.path}") as source:
            parquet = pq.ParquetFile(source)
            arrow, rows = parquet.schema_arrow, parquet.metadata.num_rows
            problem = _check_fields(schema, list(arrow), "")
            if problem is None and spec is not None and not spec.unpartitioned:
                if file.spec_id != spec.spec_id:
                    raise BadRequest(f"data file {file.path} is written for partition spec {file.spec_id}, but the "
                                     f"table's is spec {spec.spec_id} ({spec.text()}); reload the table")
                problem = _partition_problem(parquet, file, spec, schema, types or {})
    except (OSError, pa.ArrowException) as e:
        raise BadRequest(f"data file {file.path}: not a readable Parquet file: {e}") from None
    if rows != file.rows:
        raise BadRequest(f"data file {file.path}: its manifest says {file.rows} rows, its footer {rows}")
    if problem is not None:
        raise BadRequest(f"data file {file.path}: {problem}")
