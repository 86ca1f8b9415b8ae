"""Row kinds in chunk files: the changes of primary-key tables and the position deletes of append tables.

The model is in ``docs/changelog-tables.md``. This module is the only writer of both shapes:

* a **change chunk** is a columnar chunk whose int8 column ``_streamcat_op`` says, per row,
  whether it upserts (0) or deletes (1) its key, or (2, aggregation tables only) retracts its values
  from the key's aggregates (a chunk without the column upserts every row);
* a **position-deletes chunk** (chunk kind ``deletes``) is a Parquet file of (``path``, ``pos``)
  pairs naming rows of other chunks of the same stream by their 0-based position. It is also an Iceberg
  position delete file: its ``file_path`` column holds each path as an absolute URI, and ``file_path``
  and ``pos`` carry Iceberg's reserved field ids, so Iceberg readers apply it as it is (the Iceberg view,
  ``catalog_api/iceberg/``, lists it by its chunk's statistics; docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.model import GROUP_PRIMARY_KEY, ICEBERG_FILE_PATH_ID, ICEBERG_POS_ID, MERGE_ENGINES, Chunk, primary_key
from catalog_api.model import MERGE_ENGINE_PROPERTY as MERGE_ENGINE
from catalog_api.model import PRIMARY_KEY_PROPERTY as PRIMARY_KEY
from catalog_api.model import SEQUENCE_FIELD_PROPERTY as SEQUENCE_FIELD
from catalog_api.schema.resolution import PARQUET_FIELD_ID
from catalog_api.streams.chunks import CHUNK_VERSION_KEY, ChunkStats, column_stats, write_columnar_chunk

#: The column of a change chunk that holds each row's kind.
OP_COLUMN = "_streamcat_op"
#: Row kinds in ``OP_COLUMN``: RETRACT takes a row's values back from an aggregation table's aggregates (a
#: CDC update's before-image or a delete's), where DELETE removes the key's row.
UPSERT, DELETE, RETRACT = 0, 1, 2
#: The chunk kind of position-deletes files.
DELETES_KIND = "deletes"
#: The columns of a position-deletes file.
POSITION_SCHEMA = pa.schema(
    [pa.field("path", pa.string(), nullable=False), pa.field("pos", pa.int64(), nullable=False)])
#: The columns a position-deletes file is written with: Iceberg's (absolute ``file_path`` and ``pos``, with their
#: field ids), then Streamcat's relative ``path``.
WRITTEN_POSITION_SCHEMA = pa.schema([
    pa.field("file_path", pa.string(), nullable=False, metadata={PARQUET_FIELD_ID: str(ICEBERG_FILE_PATH_ID).encode()}),
    pa.field("pos", pa.int64(), nullable=False, metadata={PARQUET_FIELD_ID: str(ICEBERG_POS_ID).encode()}),
    pa.field("path", pa.string(), nullable=False),
])
#: Up to how many chunks a position-deletes chunk's statistics name (``"files"``) the chunks it deletes from.
NAMED_FILES_KEPT = 64
#: What the data plane uses; the table properties are the catalog's (catalog_api.model), re-exported here.
__all__ = ["DELETE", "DELETES_KIND", "GROUP_PRIMARY_KEY", "MERGE_ENGINE", "MERGE_ENGINES", "OP_COLUMN",
           "POSITION_SCHEMA", "PRIMARY_KEY", "RETRACT", "SEQUENCE_FIELD", "UPSERT", "primary_key",
           "read_position_deletes", "write_change_chunk", "write_position_deletes"]


def write_change_chunk(location: str, path: str, table: pa.Table, ops: pa.Array | None, encoding_id: int,
                       schema: dict[str, Any] | None = None, *,
                       dictionary: bool | Sequence[str] = True) -> ChunkStats:
    """Write ``table`` (rows in the table's schema) as a columnar chunk whose rows upsert or delete their keys.

    ``ops`` holds one ``UPSERT``/``DELETE`` per row; ``None`` means every row upserts, and then the chunk
    is an ordinary columnar chunk. ``schema`` and ``dictionary``: as for :func:`write_columnar_chunk`
    (``schema`` gives the columns their Parquet field ids).
    """
    if ops is not None:
        if len(ops) != table.num_rows:
            raise ValueError(f"{len(ops)} row kinds for {table.num_rows} rows")
        table = table.append_column(pa.field(OP_COLUMN, pa.int8(), nullable=False), [ops.cast(pa.int8())])
    return write_columnar_chunk(location, path, table, encoding_id, schema, dictionary=dictionary)


def write_position_deletes(location: str, path: str, paths: Sequence[str] | pa.Array,
                           positions: Sequence[int] | pa.Array) -> Chunk:
    """Write a position-deletes chunk naming rows (``paths[i]``, ``positions[i]``), sorted (as Iceberg requires: by
    file, then position); returns its Chunk, whose statistics hold the bounds of ``file_path`` and, when it names
    at most ``NAMED_FILES_KEPT`` chunks, their paths (``"files"``): what the Iceberg view lists it by."""
    relative = pa.array(paths, pa.string())
    base = storage.uri_of(location.rstrip("/")) + "/"
    absolute = pc.binary_join_element_wise(pa.scalar(base), relative, "")
    table = pa.table([absolute, pa.array(positions, pa.int64()), relative], schema=WRITTEN_POSITION_SCHEMA)
    table = table.sort_by([("path", "ascending"), ("pos", "ascending")])
    fs, root = storage.resolve(location)
    full = f"{root}/{path}"
    fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
    table = table.replace_schema_metadata({CHUNK_VERSION_KEY: b"1"})
    pq.write_table(table, full, filesystem=fs, compression="zstd")
    size = fs.get_file_info(full).size or 0
    stats = column_stats(table)
    named = pc.unique(table.column("path"))
    if len(named) <= NAMED_FILES_KEPT:
        stats["files"] = named.to_pylist()
    return Chunk(path=path, kind=DELETES_KIND, event_count=table.num_rows, bytes=size, stats=stats)


def read_position_deletes(location: str, paths: Sequence[str]) -> dict[str, pa.Array]:
    """The deleted positions of every chunk named by the position-deletes chunks ``paths``:
    chunk path -> sorted unique int64 positions."""
    if not paths:
        return {}
    fs, root = storage.resolve(location)
    tables = [pq.read_table(f"{root}/{p}", filesystem=fs, schema=POSITION_SCHEMA) for p in paths]
    merged = pa.concat_tables(tables)
    result: dict[str, pa.Array] = {}
    grouped = merged.group_by("path").aggregate([("pos", "distinct")])
    for name, positions in zip(grouped.column("path").to_pylist(), grouped.column("pos_distinct").to_pylist(),
                               strict=True):
        result[name] = pa.array(sorted(positions), pa.int64())
    return result
