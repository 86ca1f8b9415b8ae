"""What the stream client tests share: schemas, fixtures, a stream with its schema group."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
import requests

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.row_kinds import DELETE, write_change_chunk
from registry.client import RegistryClient, schema_info
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat

#: A small event record, and its second version: one more field, with a default.
EVENT_V1: dict[str, Any] = {
    "type": "record", "name": "Event", "namespace": "test.streams",
    "fields": [{"name": "key", "type": "string"}, {"name": "seq", "type": "long"}],
}
EVENT_V2: dict[str, Any] = {
    **EVENT_V1, "fields": [*EVENT_V1["fields"], {"name": "source", "type": "string", "default": "v1"}],
}
V1: SchemaInfo = schema_info("Avro", json.dumps(EVENT_V1))
V2: SchemaInfo = schema_info("Avro", json.dumps(EVENT_V2))


@dataclass
class StreamHandle:
    """A stream with an Avro schema group of its name, and clients to reach both."""

    catalog: CatalogClient
    registry: RegistryClient
    scope: str
    name: str

    @property
    def location(self) -> str:
        """Where the stream's chunk files live."""
        return str(self.catalog.get_stream(self.scope, self.name)["location"])

    def writer(self, **options: Any) -> StreamWriter:
        """A writer of this stream (``schema=V1`` and the like go through ``options``)."""
        return StreamWriter(self.catalog, self.registry, self.scope, self.name, **options)

    def reader(self, **options: Any) -> StreamReader:
        """A reader of this stream."""
        return StreamReader(self.catalog, self.registry, self.scope, self.name, **options)

    def files(self) -> set[str]:
        """Every file under the stream's location."""
        return {f.path for f in storage.list_files(self.location)}

    def last_commit(self) -> int:
        """The stream's latest commit number."""
        return int(self.catalog.get_stream(self.scope, self.name)["lastCommit"])


def make_stream(catalog: CatalogClient, registry: RegistryClient, scope: str, segments: int = 1,
                name: str | None = None) -> StreamHandle:
    """A new stream in ``scope`` and an Avro group (Backward) of the same name in the scope's namespace."""
    name = name or f"s{uuid.uuid4().hex[:10]}"
    catalog.create_stream(scope, name, segments=segments)
    scoped = RegistryClient(registry.url, scope, session=registry.http)
    scoped.create_group(name, GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"), False, {}))
    return StreamHandle(catalog, scoped, scope, name)


@pytest.fixture(name="stream")
def stream_fixture(catalog: CatalogClient, client: RegistryClient, scope: str) -> StreamHandle:
    """A one-segment stream with its schema group."""
    return make_stream(catalog, client, scope)


@pytest.fixture(name="stream4")
def stream4_fixture(catalog: CatalogClient, client: RegistryClient, scope: str) -> StreamHandle:
    """A four-segment stream with its schema group."""
    return make_stream(catalog, client, scope, segments=4)


class LosingAnswers(requests.Session):
    """A session whose first ``lose`` commit requests reach the server but whose answers never come back.

    That is a timeout after the server committed: the case the writer id and sequence exist for.
    """

    def __init__(self, lose: int) -> None:
        super().__init__()
        self.lose = lose
        self.sent = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        response = super().request(method, url, *args, **kwargs)
        if method == "POST" and str(url).endswith("/commits"):
            self.sent += 1
            if self.lose > 0:
                self.lose -= 1
                raise requests.ConnectionError("connection reset before the answer arrived")
        return response


def keyed_chunk(location: str, encoding_id: int, schema: pa.Schema, rows: list[tuple[int, dict[str, Any]]]) -> Chunk:
    """A columnar change chunk of (UPSERT/DELETE, row) pairs written under a table's location, ready to commit."""
    path = f"data/{uuid.uuid4().hex}.parquet"
    table = pa.Table.from_pylist([r for _, r in rows], schema=schema)
    ops = pa.array([op for op, _ in rows], pa.int8()) if any(op == DELETE for op, _ in rows) else None
    return write_change_chunk(location, path, table, ops, encoding_id).columnar(path)
