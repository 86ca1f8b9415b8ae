"""What the row-level write, conflict and compaction tests share: tables, Spark's writer classes fed
Arrow batches directly (no SparkSession), and a plain-Python model of what a table holds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import ByteType, StructField, StructType
from pyspark_streamcat.arrow import spark_arrow_schema
from pyspark_streamcat.options import SourceOptions
from pyspark_streamcat.writer import BatchWriter as SparkBatchWriter
from pyspark_streamcat.writer import ChangesWritten, RowLevelWriter

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.streams.compaction import ChunkTables
from catalog_api.streams.merge import TableLayout, read_state
from catalog_api.streams.reader import StreamReader
from registry.client import RegistryClient

INSERT, DELETE, UPDATE, REINSERT = 0, 1, 2, 3

#: id (the key of keyed tables), a string, a nullable double.
COLUMNS: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "double", "nullable": True, "metadata": {}},
    ],
}


@dataclass
class TableHandle:
    """A table on the test server, and how the tests write and read it."""

    url: str
    catalog: CatalogClient
    scope: str
    name: str
    key: tuple[str, ...]

    @property
    def registry(self) -> RegistryClient:
        """A registry client in the table's namespace."""
        return RegistryClient(self.url, self.scope, session=self.catalog.http)

    @property
    def location(self) -> str:
        """Where the table's chunk files are."""
        return str(self.catalog.get_table(self.scope, self.name)["stream"]["location"])

    @property
    def schema(self) -> StructType:
        """The table's Spark schema."""
        return StructType.fromJson(self.catalog.get_table(self.scope, self.name)["schema"])

    def options(self, **extra: str) -> SourceOptions:
        """The data source's options for this table (as the catalog shim would give them)."""
        return SourceOptions.parse({"uri": self.url, "scope": self.scope, "table": self.name, **extra}).resolved()

    def last(self) -> int:
        """The table's newest commit number."""
        return int(self.catalog.get_stream(self.scope, self.name)["lastCommit"])

    def snapshot(self, cut: int | None = None) -> tuple[int, list[Chunk]]:
        """(cut, visible chunks)."""
        return self.catalog.snapshot(self.scope, self.name, cut=cut)

    # -- writing -----------------------------------------------------------------------------------

    def batch(self, rows: list[dict[str, Any]]) -> pa.RecordBatch:
        """Rows as an Arrow batch of the table's Spark schema."""
        return pa.RecordBatch.from_pylist(rows, schema=spark_arrow_schema(self.schema))

    def insert(self, *tasks: list[dict[str, Any]]) -> int:
        """INSERT INTO through Spark's batch writer: one chunk per task; returns the commit."""
        writer = SparkBatchWriter(self.options(), self.schema, overwrite=False)
        messages = [writer.write(iter([self.batch(rows)])) for rows in tasks]
        writer.commit(list(messages))
        return self.last()

    def overwrite(self, rows: list[dict[str, Any]]) -> int:
        """INSERT OVERWRITE."""
        writer = SparkBatchWriter(self.options(), self.schema, overwrite=True)
        writer.commit([writer.write(iter([self.batch(rows)]))])
        return self.last()

    def change_schema(self, with_data: bool = True) -> StructType:
        """The schema of the rows a row-level write receives (spark_plugin DeltaWrites.changeSchema); a
        DELETE's has no data columns."""
        table = self.schema
        ids = [StructField("_id__chunk", pa_string(), True), StructField("_id__pos", pa_long(), True)] if not self.key \
            else [StructField(f"_id_{k}", table[k].dataType, True) for k in self.key]
        data = [StructField(f.name, f.dataType, True, f.metadata) for f in table.fields] if with_data else []
        return StructType([StructField("_op", ByteType(), False), *ids, *data])

    def row_level_writer(self, read_cut: int, operation: str = "merge") -> RowLevelWriter:
        """The writer Spark would make on the driver for a DELETE/UPDATE/MERGE that read ``read_cut``."""
        options = self.options(**{"streamcat.rowlevel": operation, "streamcat.readcut": str(read_cut)})
        return RowLevelWriter(options, self.change_schema(operation != "delete"))

    def changes_batch(self, changes: list[dict[str, Any]], with_data: bool = True) -> pa.RecordBatch:
        """Change rows (``_op``, ``_id_*``, columns; absent ones null) as a batch of the change schema."""
        schema = spark_arrow_schema(self.change_schema(with_data))
        return pa.RecordBatch.from_pylist(changes, schema=schema)

    def row_level(self, read_cut: int, *tasks: list[dict[str, Any]], operation: str = "merge") -> None:
        """Run a row-level write: each task's change rows through its own task writer, then the commit. A
        ``delete`` gets the change schema of a DELETE (no data columns), as Spark gives it."""
        writer = self.row_level_writer(read_cut, operation)
        with_data = operation != "delete"
        messages: list[ChangesWritten] = [writer.write(iter([self.changes_batch(rows, with_data)]))
                                          for rows in tasks]
        writer.commit(list(messages))

    def events(self, records: list[dict[str, Any]]) -> int:
        """Records written by a producer (the stream writer: one event chunk); returns the commit."""
        from catalog_api.streams import StreamWriter

        registry = self.registry
        writer = StreamWriter(self.catalog, registry, self.scope, self.name,
                              schema=registry.latest_schemas(self.name)[0].schema)
        for record in records:
            writer.write(record)
        writer.flush()
        writer.close()
        return self.last()

    # -- reading -----------------------------------------------------------------------------------

    def state(self, cut: int | None = None) -> list[dict[str, Any]]:
        """The table's rows at a cut (the merged state), sorted by id then the other columns."""
        table = self.catalog.get_table(self.scope, self.name)
        layout = TableLayout.from_properties(table.get("properties") or {})
        _cut, chunks = self.snapshot(cut)
        reader = StreamReader(self.catalog, self.registry, self.scope, self.name)
        rows = read_state(self.location, chunks, layout, ChunkTables(reader)).to_pylist()
        return sorted(rows, key=lambda r: (r["id"], str(r["name"]), str(r["amount"])))

    def rows_with_ids(self, cut: int | None = None) -> list[dict[str, Any]]:
        """Every row of an append table at a cut with its id (``_chunk``, ``_pos``), deleted ones included
        (``_deleted``), as a DELETE's scan sees them."""
        from catalog_api.streams.row_kinds import DELETES_KIND, read_position_deletes

        _cut, chunks = self.snapshot(cut)
        deleted = read_position_deletes(self.location, [c.path for c in chunks if c.kind == DELETES_KIND])
        reader = StreamReader(self.catalog, self.registry, self.scope, self.name)
        found = []
        for chunk in chunks:
            if chunk.kind == DELETES_KIND:
                continue
            gone = set(deleted[chunk.path].to_pylist()) if chunk.path in deleted else set()
            for pos, row in enumerate(ChunkTables(reader)(chunk).to_pylist()):
                found.append({**row, "_chunk": chunk.path, "_pos": pos, "_deleted": pos in gone})
        return found


def pa_string() -> Any:
    """Spark's StringType."""
    from pyspark.sql.types import StringType

    return StringType()


def pa_long() -> Any:
    """Spark's LongType."""
    from pyspark.sql.types import LongType

    return LongType()


def make_table(url: str, catalog: CatalogClient, scope: str, key: tuple[str, ...] = (),
               properties: dict[str, str] | None = None) -> TableHandle:
    """A new table of COLUMNS: a primary-key table when ``key`` is given."""
    name = f"t{uuid.uuid4().hex[:10]}"
    props = dict(properties or {})
    if key:
        props["primary-key"] = ",".join(key)
    catalog.create_table(scope, name, COLUMNS, properties=props)
    return TableHandle(url, catalog, scope, name, key)


def by_id(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Rows of a keyed table by their id."""
    return {r["id"]: r for r in rows}


def sort_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in the order ``TableHandle.state`` gives them."""
    return sorted(({k: r[k] for k in ("id", "name", "amount")} for r in rows),
                  key=lambda r: (r["id"], str(r["name"]), str(r["amount"])))
