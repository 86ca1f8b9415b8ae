"""What the UI tests look at: a server on 127.0.0.1 with groups, a table written by the stream
writer, and materialized tables created through the REST API."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import requests

from catalog_api.client import CatalogClient
from catalog_api.materialized.model import CUTS_PROPERTY, HOLDER_PROPERTY, METHOD_PROPERTY
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient, schema_info
from registry.model import Compatibility, GroupProperties, SerializationFormat

#: A schema whose doc holds markup: the UI must show it as text.
HOSTILE_DOC = "<script>document.title='owned'</script> & <b>bold</b>"
EVENT_V1: dict[str, Any] = {
    "type": "record", "name": "Event", "namespace": "test.ui", "doc": HOSTILE_DOC,
    "fields": [{"name": "key", "type": "string"}, {"name": "seq", "type": "long"}],
}
EVENT_V2: dict[str, Any] = {
    **EVENT_V1, "fields": [*EVENT_V1["fields"], {"name": "source", "type": "string", "default": "v1"}],
}
#: Would break readers of v2 under Backward: ``source`` changes type.
EVENT_BAD: dict[str, Any] = {
    **EVENT_V1, "fields": [*EVENT_V1["fields"], {"name": "source", "type": "int"}],
}
ORDERS_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "customer", "type": "string", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "double", "nullable": True, "metadata": {}},
    ],
}
#: Rows of the commits of shop.orders: commit n holds ids n*100 .. n*100 + n*10 - 1.
COMMITS = 4
WRITER = "ui-loader"


@dataclass(frozen=True)
class World:
    """The server and what it holds."""

    url: str
    scope: str = "shop"
    table: str = "orders"
    group: str = "events"
    materialized: str = "big_orders"


def rows_of(commit: int) -> pa.Table:
    """The rows commit ``commit`` of shop.orders adds."""
    ids = list(range(commit * 100, commit * 100 + commit * 10))
    return pa.table({"id": ids, "customer": [f"c{i % 7}" for i in ids], "amount": [i * 1.5 for i in ids]})


def populate(url: str, scope: str = "shop", auth: tuple[str, str] | None = None) -> World:
    """Fill the server at ``url``: scope ``scope`` with the group ``events`` (v1, v2), the table
    ``orders`` (COMMITS commits by WRITER) and the materialized table ``big_orders`` over it."""
    catalog = CatalogClient(url, auth=auth)
    catalog.create_scope(scope, comment="the shop's tables")
    registry = RegistryClient(url, scope, auth=auth)
    registry.create_group("events", GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward")))
    registry.add_schema("events", schema_info("Avro", json.dumps(EVENT_V1)))
    registry.add_schema("events", schema_info("Avro", json.dumps(EVENT_V2)))
    catalog.create_table(scope, "orders", ORDERS_SCHEMA, comment="orders of the shop")
    schema = registry.latest_schemas("orders")[0].schema
    writer = StreamWriter(catalog, registry, scope, "orders", schema=schema, writer_id=WRITER)
    for commit in range(1, COMMITS + 1):
        writer.write_table(rows_of(commit))
        writer.flush()
    writer.close()
    body = {
        "tableName": "big_orders", "queryText": f"SELECT * FROM {scope}.orders WHERE amount > 100",
        "sources": [{"scopeName": scope, "tableName": "orders"}], "schema": ORDERS_SCHEMA, "freshness": "1 minute",
    }
    created = requests.post(f"{url}/v1/scopes/{scope}/materializedTables", json=body, auth=auth, timeout=30)
    created.raise_for_status()
    return World(url, scope)


def refresh(url: str, scope: str = "shop", method: str = "full: first refresh",
            auth: tuple[str, str] | None = None) -> int:
    """Refresh ``big_orders`` as the refresher does (lease, one overwrite commit recording the source
    cut it read, the report), with the rows ``orders`` holds now; returns the refresh's commit."""
    base = f"{url}/v1/scopes/{scope}/materializedTables/big_orders"
    requests.post(f"{base}/lease", json={"holder": "ui-test"}, auth=auth, timeout=10).raise_for_status()
    catalog, registry = CatalogClient(url, auth=auth), RegistryClient(url, scope, auth=auth)
    cut = int(catalog.get_stream(scope, "orders")["lastCommit"])
    started = time.monotonic()
    schema = registry.latest_schemas("big_orders")[0].schema
    writer = StreamWriter(catalog, registry, scope, "big_orders", schema=schema)
    for commit in range(1, cut + 1):
        writer.write_table(rows_of(commit))
    properties = {HOLDER_PROPERTY: "ui-test", CUTS_PROPERTY: json.dumps({f"{scope}.orders": cut}),
                  METHOD_PROPERTY: method}
    done = writer.flush(overwrite=True, properties=properties)
    writer.close()
    assert done is not None
    report = {"holder": "ui-test", "outcome": "succeeded", "commit": done["number"], "cuts": {f"{scope}.orders": cut},
              "durationMs": int((time.monotonic() - started) * 1000)}
    requests.post(f"{base}/refreshes", json=report, auth=auth, timeout=10).raise_for_status()
    return int(done["number"])


def append(url: str, scope: str = "shop", auth: tuple[str, str] | None = None) -> int:
    """One more commit of ``orders`` (the rows of rows_of(its number)); returns its number."""
    catalog, registry = CatalogClient(url, auth=auth), RegistryClient(url, scope, auth=auth)
    number = int(catalog.get_stream(scope, "orders")["lastCommit"]) + 1
    writer = StreamWriter(catalog, registry, scope, "orders", schema=registry.latest_schemas("orders")[0].schema,
                          writer_id=WRITER)
    writer.write_table(rows_of(number))
    writer.flush()
    writer.close()
    return number
