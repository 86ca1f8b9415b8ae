"""The metadata writer: Iceberg's manifests and manifest lists (Avro) and metadata JSON files, written
under a table's location (``<location>/metadata/``) from what :mod:`catalog_api.iceberg.snapshots`
derives. It writes metadata only: data files and position delete files are the table's chunks, never
read or copied (a position-deletes chunk is an Iceberg position delete file as it is written).

Every file's name says what it holds (a manifest's block and removal, a snapshot's cut, the metadata's
digest), prefixed with the table's uuid, so a file once written is never rewritten and two servers
writing the same file write the same bytes (each to a temporary name, then moved into place). The files
written are remembered per process; the current snapshot's manifest list is checked on every load, so
files deleted behind the writer's back are written again.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow.fs as pafs
from cachetools import LRUCache

from catalog_api import storage
from catalog_api.iceberg.model import DATA_CONTENT, DataFile, IcebergSnapshot, ManifestKey, TableHistory
from catalog_api.iceberg.schemas import partition_avro_type
from catalog_api.model import ICEBERG_FILE_PATH_ID, METADATA_FOLDER
from catalog_api.storage import uri_of

_MAP = {"type": "array", "logicalType": "map"}


def _map_field(name: str, fid: int, key_id: int, value: str) -> dict[str, Any]:
    items = {"type": "record", "name": f"k{key_id}_v{key_id + 1}", "fields": [
        {"name": "key", "type": "int", "field-id": key_id}, {"name": "value", "type": value, "field-id": key_id + 1}]}
    return {"name": name, "field-id": fid, "type": ["null", {**_MAP, "items": items}], "default": None}


def _entry_schema(partition_fields: list[dict[str, Any]]) -> dict[str, Any]:
    """Iceberg's v2 manifest entry schema, with the partition record of one spec."""
    data_file = {"type": "record", "name": "r2", "fields": [
        {"name": "content", "field-id": 134, "type": "int"},
        {"name": "file_path", "field-id": 100, "type": "string"},
        {"name": "file_format", "field-id": 101, "type": "string"},
        {"name": "partition", "field-id": 102, "type": {"type": "record", "name": "r102", "fields": partition_fields}},
        {"name": "record_count", "field-id": 103, "type": "long"},
        {"name": "file_size_in_bytes", "field-id": 104, "type": "long"},
        _map_field("column_sizes", 108, 117, "long"),
        _map_field("value_counts", 109, 119, "long"),
        _map_field("null_value_counts", 110, 121, "long"),
        _map_field("nan_value_counts", 137, 138, "long"),
        _map_field("lower_bounds", 125, 126, "bytes"),
        _map_field("upper_bounds", 128, 129, "bytes"),
        {"name": "key_metadata", "field-id": 131, "type": ["null", "bytes"], "default": None},
        {"name": "split_offsets", "field-id": 132, "type": ["null", {"type": "array", "element-id": 133,
                                                                      "items": "long"}], "default": None},
        {"name": "equality_ids", "field-id": 135, "type": ["null", {"type": "array", "element-id": 136,
                                                                     "items": "int"}], "default": None},
        {"name": "sort_order_id", "field-id": 140, "type": ["null", "int"], "default": None},
    ]}
    return {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "field-id": 0, "type": "int"},
        {"name": "snapshot_id", "field-id": 1, "type": ["null", "long"], "default": None},
        {"name": "sequence_number", "field-id": 3, "type": ["null", "long"], "default": None},
        {"name": "file_sequence_number", "field-id": 4, "type": ["null", "long"], "default": None},
        {"name": "data_file", "field-id": 2, "type": data_file},
    ]}


_SUMMARY = {"type": "record", "name": "r508", "fields": [
    {"name": "contains_null", "field-id": 509, "type": "boolean"},
    {"name": "contains_nan", "field-id": 518, "type": ["null", "boolean"], "default": None},
    {"name": "lower_bound", "field-id": 510, "type": ["null", "bytes"], "default": None},
    {"name": "upper_bound", "field-id": 511, "type": ["null", "bytes"], "default": None},
]}
MANIFEST_LIST_SCHEMA = fastavro.parse_schema({"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "field-id": 500, "type": "string"},
    {"name": "manifest_length", "field-id": 501, "type": "long"},
    {"name": "partition_spec_id", "field-id": 502, "type": "int"},
    {"name": "content", "field-id": 517, "type": "int"},
    {"name": "sequence_number", "field-id": 515, "type": "long"},
    {"name": "min_sequence_number", "field-id": 516, "type": "long"},
    {"name": "added_snapshot_id", "field-id": 503, "type": "long"},
    {"name": "added_files_count", "field-id": 504, "type": "int"},
    {"name": "existing_files_count", "field-id": 505, "type": "int"},
    {"name": "deleted_files_count", "field-id": 506, "type": "int"},
    {"name": "added_rows_count", "field-id": 512, "type": "long"},
    {"name": "existing_rows_count", "field-id": 513, "type": "long"},
    {"name": "deleted_rows_count", "field-id": 514, "type": "long"},
    {"name": "partitions", "field-id": 507, "type": ["null", {"type": "array", "element-id": 508, "items": _SUMMARY}],
     "default": None},
    {"name": "key_metadata", "field-id": 519, "type": ["null", "bytes"], "default": None},
]})
#: Manifest entry status of a file a snapshot added (kept as it is by later snapshots, as a fast append does).
ADDED = 1


@dataclass(frozen=True)
class SpecLayout:
    """What a manifest of one partition spec needs: the spec's JSON and each field's Avro type."""

    spec: dict[str, Any]
    avro_types: tuple[Any, ...]
    transforms: tuple[str, ...]

    @staticmethod
    def of(spec: dict[str, Any], source_types: dict[int, Any]) -> SpecLayout:
        """The layout of an Iceberg spec (JSON) whose source columns have the Iceberg types ``source_types``."""
        types = tuple(partition_avro_type(f["transform"], source_types.get(f["source-id"])) for f in spec["fields"])
        return SpecLayout(spec, types, tuple(f["transform"] for f in spec["fields"]))


@dataclass(frozen=True)
class _Written:
    uri: str
    length: int
    files: int
    rows: int
    min_sequence: int


@dataclass(frozen=True)
class TableFiles:
    """What one table's metadata files are written from."""

    location: str
    table_uuid: str
    schema: dict[str, Any]
    specs: dict[int, SpecLayout]
    history: TableHistory


def _partition_value(value: Any, avro_type: Any, transform: str) -> Any:
    if value is not None and transform.startswith("truncate") and avro_type == ["null", "bytes"]:
        return base64.b64decode(value)  # truncated binary is kept as base64 text
    return value


def _path_bounds(f: DataFile) -> dict[str, Any]:
    """A position delete file's ``file_path`` bounds, as a manifest's lower and upper bounds hold them (UTF-8),
    by which readers match it to the data files it may name."""
    if f.path_bounds is None:
        return {}
    low, high = f.path_bounds
    return {"lower_bounds": [{"key": ICEBERG_FILE_PATH_ID, "value": low.encode()}],
            "upper_bounds": [{"key": ICEBERG_FILE_PATH_ID, "value": high.encode()}]}


class MetadataWriter:
    """Writes the metadata files of tables' Iceberg snapshots, each once per process."""

    def __init__(self, max_files: int = 200_000) -> None:
        self._written: LRUCache[str, _Written] = LRUCache(maxsize=max_files)
        self._lock = threading.Lock()

    def _folder(self, table: TableFiles) -> tuple[pafs.FileSystem, str, str]:
        fs, root = storage.resolve(table.location)
        folder = f"{root}/{METADATA_FOLDER}"
        return fs, folder, uri_of(f"{table.location.rstrip('/')}/{METADATA_FOLDER}")

    @staticmethod
    def _put(fs: pafs.FileSystem, path: str, data: bytes) -> None:
        temporary = f"{path}.{uuid.uuid4().hex}.tmp"
        with fs.open_output_stream(temporary) as out:
            out.write(data)
        fs.move(temporary, path)

    def _remembered(self, path: str) -> _Written | None:
        with self._lock:
            return self._written.get(path)

    def _remember(self, path: str, written: _Written) -> _Written:
        with self._lock:
            self._written[path] = written
        return written

    def _manifest(self, table: TableFiles, key: ManifestKey, fs: pafs.FileSystem, folder: str, base: str) -> _Written:
        name = f"{table.table_uuid[:8]}-{key.name}"
        path = f"{folder}/{name}"
        found = self._remembered(path)
        if found is not None:
            return found
        files: list[DataFile] = table.history.files(key)
        info = fs.get_file_info(path)
        written = _Written(f"{base}/{name}", info.size or 0, len(files), sum(f.record_count for f in files),
                           min((f.commit for f in files), default=key.first))
        if info.type == pafs.FileType.NotFound:
            data = self._manifest_bytes(table, key, files)
            self._put(fs, path, data)
            written = _Written(written.uri, len(data), written.files, written.rows, written.min_sequence)
        return self._remember(path, written)

    def _manifest_bytes(self, table: TableFiles, key: ManifestKey, files: list[DataFile]) -> bytes:
        layout = table.specs[key.spec_id]
        partition_fields = [
            {"name": f["name"], "field-id": f["field-id"], "type": t, "default": None}
            for f, t in zip(layout.spec["fields"], layout.avro_types, strict=True)
        ]
        location = table.location.rstrip("/")
        records = [{
            "status": ADDED,
            "snapshot_id": f.commit,
            "sequence_number": f.commit,
            "file_sequence_number": f.commit,
            "data_file": {
                "content": f.content,
                "file_path": uri_of(f"{location}/{f.path}"),
                "file_format": "PARQUET",
                "partition": {
                    pf["name"]: _partition_value(v, t, tr)
                    for pf, v, t, tr in zip(layout.spec["fields"], f.partition, layout.avro_types, layout.transforms,
                                            strict=False)
                },
                "record_count": f.record_count,
                "file_size_in_bytes": f.size,
                **_path_bounds(f),
            },
        } for f in files]
        out = io.BytesIO()
        metadata = {
            "schema": json.dumps(table.schema),
            "schema-id": str(table.schema["schema-id"]),
            "partition-spec": json.dumps(layout.spec["fields"]),
            "partition-spec-id": str(key.spec_id),
            "format-version": "2",
            "content": "data" if key.content == DATA_CONTENT else "deletes",
        }
        fastavro.writer(out, fastavro.parse_schema(_entry_schema(partition_fields)), records, codec="deflate",
                        metadata=metadata)
        return out.getvalue()

    def _manifest_list(self, table: TableFiles, snapshot: IcebergSnapshot, fs: pafs.FileSystem, folder: str,
                       base: str) -> str:
        name = f"{table.table_uuid[:8]}-snap-{snapshot.cut}.avro"
        path = f"{folder}/{name}"
        found = self._remembered(path)
        if found is not None:
            return found.uri
        if fs.get_file_info(path).type == pafs.FileType.NotFound:
            entries = []
            for key in snapshot.manifests:
                manifest = self._manifest(table, key, fs, folder, base)
                entries.append({
                    "manifest_path": manifest.uri, "manifest_length": manifest.length,
                    "partition_spec_id": key.spec_id, "content": key.content, "sequence_number": key.last,
                    "min_sequence_number": manifest.min_sequence, "added_snapshot_id": key.last,
                    "added_files_count": manifest.files, "existing_files_count": 0, "deleted_files_count": 0,
                    "added_rows_count": manifest.rows, "existing_rows_count": 0, "deleted_rows_count": 0,
                })
            out = io.BytesIO()
            metadata = {
                "snapshot-id": str(snapshot.cut),
                "parent-snapshot-id": "null" if snapshot.parent is None else str(snapshot.parent),
                "sequence-number": str(snapshot.cut),
                "format-version": "2",
            }
            fastavro.writer(out, MANIFEST_LIST_SCHEMA, entries, codec="deflate", metadata=metadata)
            self._put(fs, path, out.getvalue())
        return self._remember(path, _Written(f"{base}/{name}", 0, 0, 0, 0)).uri

    def manifest_lists(self, table: TableFiles) -> dict[int, str]:
        """The URI of each snapshot's manifest list, by cut, writing those (and their manifests) that
        are not there yet."""
        fs, folder, base = self._folder(table)
        current = table.history.current
        if current is not None:
            newest = f"{folder}/{table.table_uuid[:8]}-snap-{current.cut}.avro"
            if self._remembered(newest) is not None and fs.get_file_info(newest).type == pafs.FileType.NotFound:
                self.forget(folder)  # deleted behind the writer's back: write everything again
        if table.history.snapshots:
            fs.create_dir(folder, recursive=True)
        return {s.cut: self._manifest_list(table, s, fs, folder, base) for s in table.history.snapshots}

    def metadata_file(self, table: TableFiles, metadata: dict[str, Any]) -> str:
        """The URI of a metadata JSON file holding ``metadata``, written if it is not there yet."""
        fs, folder, base = self._folder(table)
        data = json.dumps(metadata, separators=(",", ":")).encode()
        name = f"{table.table_uuid[:8]}-{hashlib.sha256(data).hexdigest()[:20]}.metadata.json"
        path = f"{folder}/{name}"
        if self._remembered(path) is None:
            fs.create_dir(folder, recursive=True)
            if fs.get_file_info(path).type == pafs.FileType.NotFound:
                self._put(fs, path, data)
            self._remember(path, _Written(f"{base}/{name}", len(data), 0, 0, 0))
        return f"{base}/{name}"

    @staticmethod
    def exists(uri: str) -> bool:
        """Whether the file at ``uri`` (one this writer wrote) is still there."""
        fs, path = storage.resolve(uri)
        return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)

    def forget(self, folder: str) -> None:
        """Forget what was written under ``folder``."""
        with self._lock:
            for path in [p for p in self._written if p.startswith(folder + "/")]:
                del self._written[path]

