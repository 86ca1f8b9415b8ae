"""HTTP requests sent byte for byte as written: no URL normalization, no implied headers.

``requests`` re-quotes paths (``%2E%2E`` becomes ``..``, which urllib3 then resolves away) and
picks content types itself; tests of bad input need the server to see exactly what they send.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class RawResponse:
    """Status, headers and body of one response."""

    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


def raw_request(
    base_url: str,
    method: str,
    target: str,
    body: bytes | None = None,
    content_type: str | None = None,
    timeout: float = 60.0,
) -> RawResponse:
    """Send ``method target`` (path and query, already encoded) to ``base_url``, with exactly these headers."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        connection.putrequest(method, target, skip_accept_encoding=True)
        if content_type is not None:
            connection.putheader("Content-Type", content_type)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return RawResponse(response.status, response.getheader("Content-Type") or "", response.read())
    finally:
        connection.close()
