"""Local compaction: a table's merged state rewritten as a few large columnar chunks, with pyarrow.

The server never moves data bytes: the compacting client reads the table at its latest cut m
(the merge of ``catalog_api.streams.merge.read_state``: one row per live key, or every row
minus the deleted positions), writes it as columnar chunks of about ``rows_per_chunk`` rows
(a primary-key table sorted by key, an append table in its row order) under the table's
current schema, and commits them as one ``compaction`` commit with base cut m that removes
every chunk visible at m. The new chunks' changes sort at m, so appends and primary-key
row-level commits made meanwhile stay after them and the compaction does not conflict with
them; change feeds and streaming reads skip compaction commits (docs/changelog-tables.md). An aggregation
table's hidden state columns (``avg``'s ``<column>$sum`` and ``<column>$count``, ``$rows``) are written too
(read by name; their ids, :data:`catalog_api.aggregates.HIDDEN_FIELD_IDS`, are ones no schema has), beside
the visible columns the merge computed from them (an ``avg`` holds its average, so a scan of the table's own
columns needs no merge).

A partitioned table's compaction keeps partitions (docs/partitioning.md): the merged state is split by
the table's current partition spec, and each output chunk holds the rows of one partition and carries
its ``{"specId", "values"}``. Chunks written under an earlier spec are rewritten under the current one:
the state is merged whole first (a primary-key table's versions of a key may sit under two specs), so
no output chunk ever mixes partitions.

A table that is one compaction's output under its current spec and nothing else has nothing to compact:
no commit.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.partitioning.spec import PartitionSpec, table_spec
from catalog_api.streams.chunks import partition_pieces, write_columnar_chunk
from catalog_api.streams.conflicts import COMPACTION, CommitInDoubt, Intent, Table, commit_checked, delete_quietly
from catalog_api.streams.merge import TableLayout, is_compacted, read_state, with_state
from catalog_api.streams.reader import StreamReader, scoped_registry
from catalog_api.streams.row_kinds import DELETES_KIND, OP_COLUMN
from registry.client import RegistryClient

#: Rows per compacted chunk.
DEFAULT_ROWS_PER_CHUNK = 1_000_000
#: Where compacted chunk files go under the stream's location.
COMPACTED_DIR = "data"


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction did. ``commit`` is None when there was nothing to compact."""

    table: str
    base_cut: int
    commit: int | None
    rows: int
    chunks_removed: int
    chunks_written: int
    seconds: float

    @property
    def rows_per_second(self) -> float:
        """Rows of the merged state per second of the whole compaction (read, merge, write, commit)."""
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


class ChunkTables:
    """``read_chunk`` for :func:`read_state`: a chunk's rows under the table's current schema, then an
    aggregation table's hidden state columns (null where the chunk has none), with the chunk's ``OP_COLUMN``
    when it has one (event chunks decoded through the registry)."""

    def __init__(self, reader: StreamReader) -> None:
        self.reader = reader
        self.schema: pa.Schema | None = None

    def __call__(self, chunk: Chunk) -> pa.Table:
        batches = list(self.reader.read_chunk_batches(chunk, batch_rows=1 << 20))
        table = pa.Table.from_batches(batches) if batches else self.empty()
        if self.schema is None and batches:
            self.schema = table.schema
        layout = self.reader.layout
        if chunk.kind != "events":
            extra = self._file_columns(chunk, [OP_COLUMN, *layout.state_names])
            table = with_state(table, layout, extra)
            if OP_COLUMN in extra.column_names:
                table = table.append_column(OP_COLUMN, extra.column(OP_COLUMN))
            return table
        return with_state(table, layout)

    def empty(self) -> pa.Table:
        """No rows, in the table's schema as far as it is known."""
        schema = self.schema
        if schema is None:
            return pa.table({})
        return schema.empty_table()

    def _file_columns(self, chunk: Chunk, names: list[str]) -> pa.Table:
        """The columns of ``names`` that the chunk's file has, by name (the row kinds, hidden state columns)."""
        fs, root = storage.resolve(self.reader.location)
        with fs.open_input_file(f"{root}/{chunk.path}") as source:
            parquet = pq.ParquetFile(source)
            present = [n for n in names if n in parquet.schema_arrow.names]
            return parquet.read(columns=present) if present else pa.table({})


def _encoding_id(catalog_table: dict[str, Any], registry: RegistryClient, stream: str) -> int:
    from registry.api.models import VersionInfo as VersionInfoModel

    version = VersionInfoModel.model_validate(catalog_table["schemaVersion"]).to_domain()
    return int(registry.encoding_id(stream, version))


def _in_spec(chunk: Chunk, spec: PartitionSpec) -> bool:
    return (chunk.partition or {}).get("specId", 0) == spec.spec_id


def compact(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str, *,
            rows_per_chunk: int = DEFAULT_ROWS_PER_CHUNK) -> CompactionResult:
    """Compact ``scope.table`` at its latest cut; see the module docstring.

    Raises ``CommitConflict`` (nothing committed, the files written removed) when an overwrite or an
    append table's row-level commit came after the cut it compacted: run it again.
    """
    if rows_per_chunk < 1:
        raise ValueError(f"rows_per_chunk must be positive, not {rows_per_chunk}")
    started = time.perf_counter()
    registry = scoped_registry(registry, scope)
    described = catalog.get_table(scope, table)
    layout = TableLayout.from_properties(described.get("properties") or {})
    location = str(described["stream"]["location"])
    target = Table(catalog, scope, table, location, layout.key, registry)
    spec = table_spec(described)
    base, visible = catalog.snapshot(scope, table)
    name = f"{scope}.{table}"
    compacted = is_compacted(visible) and all(_in_spec(c, spec) for c in visible)
    if not visible or (compacted and not any(c.kind == DELETES_KIND for c in visible)):
        return CompactionResult(name, base, None, sum(c.event_count for c in visible), 0, 0,
                                time.perf_counter() - started)
    reader = StreamReader(catalog, registry, scope, table)
    state = read_state(location, visible, layout, ChunkTables(reader))
    if layout.is_keyed and state.num_rows:
        state = state.sort_by([(k, "ascending") for k in layout.key])
    encoding_id = _encoding_id(described, registry, table)
    written: list[Chunk] = []
    try:
        # Rows keep their order within a partition: a primary-key table's stay sorted by key.
        for partition, rows in partition_pieces(state, spec):
            for start in range(0, rows.num_rows, rows_per_chunk):
                piece = rows.slice(start, rows_per_chunk)
                path = f"{COMPACTED_DIR}/{uuid.uuid4().hex}.compacted.parquet"
                stats = write_columnar_chunk(location, path, piece, encoding_id, described["schema"])
                written.append(stats.columnar(path, sequence=base, partition=partition))
        intent = Intent(COMPACTION, base, removes=tuple(c.path for c in visible))
        answer = commit_checked(target, written, intent, properties={"streamcat.compaction.rows": str(state.num_rows)},
                                writer_id=f"compaction-{uuid.uuid4()}", writer_sequence=0)
    except CommitInDoubt:
        raise  # the files may be the table's now: they stay (gc removes them if the commit was not made)
    except BaseException:
        delete_quietly(location, [c.path for c in written])
        raise
    return CompactionResult(name, base, int(answer["number"]), state.num_rows, len(visible), len(written),
                            time.perf_counter() - started)


__all__ = ["DEFAULT_ROWS_PER_CHUNK", "ChunkTables", "CompactionResult", "compact"]
