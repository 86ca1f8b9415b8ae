"""Row kinds in chunk files: the changes of primary-key tables and the position deletes of append tables.

The model is in ``docs/changelog-tables.md``. This module is the only writer of both shapes:

* a **change chunk** is a columnar chunk whose int8 column ``_streamcat_op`` says, per row,
  whether it upserts (0) or deletes (1) its key, or (2, aggregation tables only) retracts its values
  from the key's aggregates (a chunk without the column upserts every row);
* a **position-deletes chunk** (chunk kind ``deletes``) is a Parquet file of (``path``, ``pos``)
  pairs naming rows of other chunks of the same stream by their 0-based position.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.model import GROUP_PRIMARY_KEY, MERGE_ENGINES, Chunk, primary_key
from catalog_api.model import MERGE_ENGINE_PROPERTY as MERGE_ENGINE
from catalog_api.model import PRIMARY_KEY_PROPERTY as PRIMARY_KEY
from catalog_api.model import SEQUENCE_FIELD_PROPERTY as SEQUENCE_FIELD
from catalog_api.streams.chunks import CHUNK_VERSION_KEY, ChunkStats, write_columnar_chunk

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
#: What the data plane uses; the table properties are the catalog's (catalog_api.model), re-exported here.
__all__ = ["DELETE", "DELETES_KIND", "GROUP_PRIMARY_KEY", "MERGE_ENGINE", "MERGE_ENGINES", "OP_COLUMN",
           "POSITION_SCHEMA", "PRIMARY_KEY", "RETRACT", "SEQUENCE_FIELD", "UPSERT", "primary_key",
           "read_position_deletes", "write_change_chunk", "write_position_deletes"]


def write_change_chunk(location: str, path: str, table: pa.Table, ops: pa.Array | None, encoding_id: int, *,
                       dictionary: bool | Sequence[str] = True) -> ChunkStats:
    """Write ``table`` (rows in the table's schema) as a columnar chunk whose rows upsert or delete their keys.

    ``ops`` holds one ``UPSERT``/``DELETE`` per row; ``None`` means every row upserts, and then the chunk
    is an ordinary columnar chunk. ``dictionary``: as for :func:`write_columnar_chunk`.
    """
    if ops is not None:
        if len(ops) != table.num_rows:
            raise ValueError(f"{len(ops)} row kinds for {table.num_rows} rows")
        table = table.append_column(pa.field(OP_COLUMN, pa.int8(), nullable=False), [ops.cast(pa.int8())])
    return write_columnar_chunk(location, path, table, encoding_id, dictionary=dictionary)


def write_position_deletes(location: str, path: str, paths: Sequence[str] | pa.Array,
                           positions: Sequence[int] | pa.Array) -> Chunk:
    """Write a position-deletes chunk naming rows (``paths[i]``, ``positions[i]``), sorted; returns its Chunk."""
    table = pa.table({"path": pa.array(paths, pa.string()), "pos": pa.array(positions, pa.int64())},
                     schema=POSITION_SCHEMA)
    table = table.sort_by([("path", "ascending"), ("pos", "ascending")])
    fs, root = storage.resolve(location)
    full = f"{root}/{path}"
    fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
    table = table.replace_schema_metadata({CHUNK_VERSION_KEY: b"1"})
    pq.write_table(table, full, filesystem=fs, compression="zstd")
    size = fs.get_file_info(full).size or 0
    return Chunk(path=path, kind=DELETES_KIND, event_count=table.num_rows, bytes=size)


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
