"""The stock Iceberg clients the tests read Streamcat tables with: pyiceberg's REST catalog and DuckDB's
iceberg extension (loaded offline from the duckdb-ext-* wheels), and Streamcat's own reader to compare."""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader
from registry.client import RegistryClient
from registry.model import SchemaInfo

#: Where the duckdb-ext-* wheels put the extensions (``extensions/v1.4.4/linux_amd64/*.duckdb_extension``).
EXTENSIONS = Path(sysconfig.get_paths()["purelib"]) / "duckdb_ext" / "extensions"


def pyiceberg(base: str, token: str | None = None) -> RestCatalog:
    """pyiceberg's REST catalog on the server at ``base`` (its ``token`` property sends a bearer token)."""
    properties = {"uri": f"{base}/iceberg"}
    if token is not None:
        properties["token"] = token
    return RestCatalog("streamcat", **properties)


def duck(base: str, token: str | None = None) -> duckdb.DuckDBPyConnection:
    """DuckDB with the server attached as catalog ``ice``; no extension is downloaded."""
    con = duckdb.connect(config={"extension_directory": str(EXTENSIONS), "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for extension in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD {extension}")
    if token is None:
        con.execute(f"ATTACH '' AS ice (TYPE ICEBERG, ENDPOINT '{base}/iceberg', AUTHORIZATION_TYPE 'none')")
    else:
        con.execute(f"CREATE SECRET streamcat (TYPE ICEBERG, TOKEN '{token}')")
        con.execute(f"ATTACH '' AS ice (TYPE ICEBERG, ENDPOINT '{base}/iceberg', SECRET streamcat)")
    return con


def rows(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    """The rows of an Arrow table as dicts, sorted by ``key``."""
    return sorted(table.to_pylist(), key=lambda r: r[key])


def duck_rows(con: duckdb.DuckDBPyConnection, sql: str, key: str = "id") -> list[dict[str, Any]]:
    """The rows a DuckDB query answers, as dicts sorted by ``key``."""
    return rows(con.execute(sql).fetch_arrow_table(), key)


def streamcat_rows(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str,
                   cut: int | None = None, key: str = "id",
                   reader_schema: SchemaInfo | None = None) -> list[dict[str, Any]]:
    """What Streamcat's own reader reads of the table at ``cut`` (default: the latest), under
    ``reader_schema`` (default: the table's latest schema)."""
    reader = StreamReader(catalog, registry, scope, table, reader_schema=reader_schema)
    return sorted((r for batch in reader.read_batches(cut=cut) for r in batch.to_pylist()), key=lambda r: r[key])
