"""The Streamcat data source for Spark (a Python data source named ``streamcat``).

The catalog shim hands Spark this class by reference (a pickle the Python workers import), never by
name: Spark's lookup of Python data sources by name imports every ``pyspark_*`` module on the path,
the working directory included (``PythonSourceBridge.java``). The catalog
(``streamcat.spark.StreamcatCatalog``) hands it each table's coordinates, so SQL users never name it;
it can also be used directly (``format("streamcat")`` loads the shim's ``streamcat.DefaultSource``)::

    spark.read.format("streamcat").option("uri", url).option("scope", "sales").option("table", "orders").load()

Reads return every row under the table's current schema, from columnar chunks (Parquet,
written by Spark) and event chunks (written by producers in the registry's wire format).
Writes produce columnar chunks and commit them atomically. Kept light at import: every Python
worker that runs it imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

__all__ = ["DefaultSource"]


class DefaultSource(DataSource):
    """Reads and writes Streamcat tables: batch, streaming, time travel, atomic and exactly-once writes."""

    @classmethod
    def name(cls) -> str:
        """The short name Spark knows the source by."""
        return "streamcat"

    def schema(self) -> StructType:
        """The table's current schema (asked only when the source is used without the catalog)."""
        from pyspark.sql.types import StructType

        from .options import SourceOptions
        from .reader import refusals_in_one_line

        with refusals_in_one_line("the streamcat data source"):
            options = SourceOptions.parse(self.options)
            table = options.catalog_client().get_table(options.scope, options.stream)
        return StructType.fromJson(table["schema"])

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader of ``schema`` (the table's columns the query needs)."""
        from .options import SourceOptions
        from .reader import BatchReader, refusals_in_one_line

        with refusals_in_one_line("the streamcat data source"):
            return BatchReader(SourceOptions.parse(self.options).resolved(), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A streaming reader: micro-batches of whole commits."""
        from .options import SourceOptions
        from .reader import StreamReader

        return StreamReader(SourceOptions.parse(self.options).resolved(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch writer (``overwrite`` for INSERT OVERWRITE and ``mode("overwrite")``); with the option
        ``streamcat.rowlevel``, the writer of a DELETE/UPDATE/MERGE statement (``schema`` is then the
        change schema); with ``streamcat.compact.base``, the writer of a compaction."""
        from .options import SourceOptions
        from .writer import BatchWriter, CompactionWriter, RowLevelWriter

        options = SourceOptions.parse(self.options).resolved()
        if options.row_level is not None:
            return RowLevelWriter(options, schema)
        if options.compact_base is not None:
            return CompactionWriter(options, schema)
        return BatchWriter(options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A streaming writer (``overwrite`` in complete output mode)."""
        from .options import SourceOptions
        from .writer import StreamingWriter

        return StreamingWriter(SourceOptions.parse(self.options).resolved(), schema, overwrite)
