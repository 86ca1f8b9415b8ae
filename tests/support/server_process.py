"""``streamcat serve`` (gunicorn) as a child process on a port of its own, which a test may kill and start again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.net import free_port, wait_until_up


class ServerProcess:
    """The server in a process group of its own (the gunicorn master and its workers), always on one port,
    so that clients find it again at the same URL after :meth:`kill` and :meth:`start`."""

    def __init__(self, env: dict[str, str], log: Path, workers: int = 2) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**env, "STREAMCAT_PORT": str(self.port), "STREAMCAT_HOST": "127.0.0.1",
                    "STREAMCAT_WORKERS": str(workers)}
        #: where the server logs: a file, not a pipe, which nobody would read while the server runs
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server; returns once it answers ``/ping``."""
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "catalog_api.server.cli", "serve"], env=self.env,
                                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        wait_until_up(f"{self.url}/ping", process=self.process)

    def kill(self) -> None:
        """SIGKILL the master and every worker at once: no request is finished, no transaction ended cleanly."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None

    def output(self) -> str:
        """What the server processes logged so far."""
        return self.log.read_text(errors="replace")
