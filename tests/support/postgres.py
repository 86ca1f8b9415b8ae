"""A throwaway PostgreSQL server, started from the Debian binaries on a free port."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.net import free_port


def _bin_dir() -> Path:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql (the .ci/run script does)")


@dataclass
class PostgresServer:
    """A running PostgreSQL cluster owned by the test session."""

    root: Path
    port: int
    bin_dir: Path
    user: str | None

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, check=True, capture_output=True, text=True)

    def url(self, database: str) -> str:
        """A SQLAlchemy URL for ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create a database and return its URL."""
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def start(self) -> None:
        """Start the server on its port (again, after :meth:`halt`); returns once it accepts connections."""
        options = (f"-p {self.port} -k {self.root} -h 127.0.0.1 -c fsync=off -c synchronous_commit=off "
                   "-c max_connections=200")
        data = str(self.root / "data")
        self._run("pg_ctl", "-D", data, "-l", str(self.root / "log"), "-w", "-t", "60", "-o", options, "start")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            probe = subprocess.run([str(self.bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                                   capture_output=True)
            if probe.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(f"PostgreSQL did not start; see {self.root / 'log'}")

    def halt(self) -> None:
        """Stop the server as an operator's restart does (``pg_ctl stop -m fast``: open sessions are ended and
        their transactions rolled back), keeping its data for :meth:`start`."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        """Stop the server and remove its files."""
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """initdb a cluster in a temporary directory and start it on 127.0.0.1."""
    bin_dir = _bin_dir()
    root = Path(tempfile.mkdtemp(prefix="streamcat-pg-"))
    # PostgreSQL refuses to run as root; run it as the postgres system user then.
    user = "postgres" if os.geteuid() == 0 else None
    if user:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    port = free_port()
    server = PostgresServer(root, port, bin_dir, user)
    data = root / "data"
    server._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    server.start()
    return server
