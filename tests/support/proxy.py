"""A fault-injecting HTTP proxy on 127.0.0.1: real TCP between a client and a real server.

It forwards every request to the server and relays the answer, except for the commit requests
(``POST .../commits``) it is told to fault: those reach the server, which carries them out, and their
answer is lost on the way back, the failure a writer cannot tell from "not committed":

- ``drop``: the connection is closed without a byte of the answer (a connection reset, a process
  killed after sending, a timeout);
- ``bad-gateway``: the client gets ``502 Bad Gateway`` instead (what a load balancer answers when the
  server's connection breaks);
- ``hold``: the request is held, never forwarded (``Faults.held`` is set once it is), so that a test can
  kill the writer while its commit is on the way: after its chunk files are written, before any commit.
"""

from __future__ import annotations

import http.client
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO
from urllib.parse import urlsplit

DROP, BAD_GATEWAY, HOLD = "drop", "bad-gateway", "hold"
#: Headers that describe one hop, not the message: the proxy sets its own.
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


@dataclass
class Faults:
    """Which commit requests (1-based, counted from the last :meth:`arm`) lose their answer, and how; or, armed
    with another ``suffix``, which POSTs to paths ending with it."""

    lose: set[int] = field(default_factory=set)
    mode: str = DROP
    #: the end of the paths of the POSTs faulted (and counted)
    suffix: str = "/commits"
    #: commit requests seen since armed
    commits: int = 0
    #: the numbers (of ``commits``) whose answers were lost
    lost: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: set when a request is held (``hold``)
    held: threading.Event = field(default_factory=threading.Event)

    def arm(self, *lose: int, mode: str = DROP, suffix: str = "/commits") -> None:
        """Lose the answers of the ``lose``-th commit requests (POSTs to paths ending with ``suffix``) from now on
        (none: forward everything)."""
        with self.lock:
            self.lose, self.mode, self.commits, self.lost, self.suffix = set(lose), mode, 0, [], suffix

    def faulted(self, method: str, path: str) -> str | None:
        """The fault to apply to this request, if any (counts the commit requests)."""
        if method != "POST" or not path.split("?", 1)[0].endswith(self.suffix):
            return None
        with self.lock:
            self.commits += 1
            if self.commits not in self.lose:
                return None
            self.lost.append(self.commits)
            return self.mode


def _read_head(stream: BinaryIO) -> tuple[str, str, list[tuple[str, str]]] | None:
    line = stream.readline(65_536)
    if not line.strip():
        return None
    method, target, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers = []
    while True:
        raw = stream.readline(65_536).decode("latin-1").rstrip("\r\n")
        if not raw:
            return method, target, headers
        name, _, value = raw.partition(":")
        headers.append((name.strip(), value.strip()))


def _read_body(stream: BinaryIO, headers: list[tuple[str, str]]) -> bytes:
    values = {k.lower(): v for k, v in headers}
    if values.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int(stream.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while stream.readline().strip():
                    pass  # trailers
                return bytes(body)
            body += stream.read(size)
            stream.readline()
    return stream.read(int(values.get("content-length", "0")))


class _Handler(socketserver.StreamRequestHandler):
    server: _ProxyServer

    def handle(self) -> None:
        while True:
            head = _read_head(self.rfile)
            if head is None:
                return
            method, target, headers = head
            body = _read_body(self.rfile, headers)
            fault = self.server.faults.faulted(method, target)
            if fault == HOLD:
                self.server.faults.held.set()
                self.rfile.read()  # until the client goes away; nothing reaches the server
                return
            status, reason, answer_headers, answer = self.server.forward(method, target, headers, body)
            if fault == DROP:
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault == BAD_GATEWAY:
                status, reason, answer_headers, answer = 502, "Bad Gateway", [("Content-Type", "text/plain")], (
                    b"upstream connection reset")
            lines = [f"HTTP/1.1 {status} {reason}"]
            lines += [f"{k}: {v}" for k, v in answer_headers if k.lower() not in _HOP]
            lines += [f"Content-Length: {len(answer)}", "Connection: keep-alive", "", ""]
            self.wfile.write("\r\n".join(lines).encode("latin-1") + answer)
            self.wfile.flush()


class _ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: str, faults: Faults) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.faults = faults

    def forward(self, method: str, target: str, headers: list[tuple[str, str]],
                body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send one request to the server on a connection of its own; its whole answer."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                if name.lower() not in _HOP:
                    connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        finally:
            connection.close()


@contextmanager
def faulty_proxy(upstream: str) -> Iterator[tuple[str, Faults]]:
    """A proxy in front of the server at ``upstream``; yields its base URL and its :class:`Faults` to arm."""
    faults = Faults()
    server = _ProxyServer(upstream, faults)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", faults
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
