"""A table's rows at a commit, read on the server with a bound on rows and bytes.

The rows come from ``catalog_api.streams.reader.StreamReader``, the reader every client uses, over
the services (catalog_api/ui/reader.py; the UI checked the viewer's read permission on the table
already). An append table's chunks are read one at a time
until the page has its rows; a primary-key table's snapshot must be merged whole, and is previewed
only when its chunks are small enough.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from catalog_api.model import Chunk
from catalog_api.streams.reader import StreamReader
from catalog_api.streams.row_kinds import DELETES_KIND
from catalog_api.ui.reader import reader_of
from catalog_api.ui.services import Services
from registry.serde import SerdeError

#: Rows a preview shows at most.
MAX_ROWS = 50
#: Bytes of chunk files a preview reads at most.
MAX_BYTES = 32 * 1024 * 1024
#: Characters of one value shown at most.
MAX_VALUE_CHARS = 200
@dataclass(frozen=True)
class Preview:
    """Rows of a table at a commit (values as text), or why there are none."""

    cut: int
    columns: list[str]
    rows: list[list[str]]
    bytes_read: int
    refused: str = ""


def _text(value: Any) -> str:
    if value is None:
        return "null"
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"


def preview(services: Services, scope: str, table: str, cut: int) -> Preview:
    """Up to MAX_ROWS rows of ``scope.table`` at commit ``cut``, reading MAX_BYTES of chunks at most
    (BadRequest for a commit the table does not have; a page that says why for rows that cannot be read)."""
    reader = reader_of(services, scope, table)
    _cut, chunks = reader.snapshot(cut)
    try:
        return _read(reader, cut, chunks)
    except (SerdeError, OSError, pa.ArrowException) as e:  # a chunk gone (gc), unreadable, or undecodable
        return Preview(cut, [], [], 0, f"the rows at commit {cut} cannot be read here: {e}")


def _read(reader: StreamReader, cut: int, chunks: list[Chunk]) -> Preview:
    if reader.layout.is_keyed or any(c.kind == DELETES_KIND for c in chunks):
        total = sum(c.bytes for c in chunks)
        if total > MAX_BYTES:
            return Preview(cut, [], [], 0, f"commit {cut} must be merged from {total:,} bytes of chunks; "
                                            f"a preview reads {MAX_BYTES:,} at most")
        return _page(cut, _first(reader.read(cut), MAX_ROWS), total)
    records: list[Any] = []
    read = 0
    for chunk in chunks:
        if len(records) >= MAX_ROWS:
            break
        if read + chunk.bytes > MAX_BYTES:
            if not records:
                return Preview(cut, [], [], 0, f"the first chunk at commit {cut} holds {chunk.bytes:,} bytes; "
                                                f"a preview reads {MAX_BYTES:,} at most")
            break
        read += chunk.bytes
        records += _first(reader.read_chunk(chunk), MAX_ROWS - len(records))
    return _page(cut, records, read)


def _first(records: Iterator[Any], n: int) -> list[Any]:
    found: list[Any] = []
    for record in records:
        if len(found) >= n:
            break
        found.append(record)
    return found


def _page(cut: int, records: list[Any], read: int) -> Preview:
    columns: list[str] = []
    for record in records:
        for key in record if isinstance(record, dict) else ["value"]:
            if key not in columns:
                columns.append(key)
    rows = [
        [_text(record.get(c)) if isinstance(record, dict) else _text(record) for c in columns] for record in records
    ]
    return Preview(cut, columns, rows, read)
