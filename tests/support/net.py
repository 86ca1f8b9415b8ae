"""Ports and HTTP servers on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from flask import Flask
from werkzeug.serving import make_server


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(
    url: str, timeout: float = 90.0, process: subprocess.Popen[bytes] | None = None, **request: Any
) -> None:
    """Poll ``url`` until it answers 200 (``request``: more arguments of ``requests.get``, e.g. ``verify``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if requests.get(url, timeout=1, **request).ok:
                return
        except (requests.ConnectionError, requests.Timeout):
            pass  # not listening yet, or no worker to answer (a TLS handshake waits for one)
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up in {timeout} s")


@contextmanager
def serve_in_thread(app: Flask) -> Iterator[str]:
    """Serve ``app`` with werkzeug's threaded server on a free port; yields the base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@contextmanager
def serve_with_gunicorn(env: dict[str, str], workers: int = 2, **request: Any) -> Iterator[str]:
    """Run ``streamcat serve`` (gunicorn) as a child process; yields the base URL.

    With ``STREAMCAT_TLS_CERT`` in ``env`` the URL is https; ``request`` (``verify``, ``cert``) is how
    the start-up probe reaches it.
    """
    port = free_port()
    env = {**env, "STREAMCAT_PORT": str(port), "STREAMCAT_HOST": "127.0.0.1", "STREAMCAT_WORKERS": str(workers)}
    command = [sys.executable, "-m", "catalog_api.server.cli", "serve"]
    # The server's log goes to a file, not a pipe: nobody reads a pipe while the server runs, and
    # once its buffer is full (the audit log writes a line per mutation) every request would hang.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
        url = f"{'https' if env.get('STREAMCAT_TLS_CERT') else 'http'}://127.0.0.1:{port}"
        try:
            wait_until_up(f"{url}/ping", process=process, **request)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
