"""An S3-compatible server on 127.0.0.1 (moto's standalone server, a process of its own) with one bucket."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow.fs as pafs

from tests.support.net import free_port, wait_until_up


@dataclass(frozen=True)
class S3Server:
    """A running S3 server: its endpoint, a bucket on it, and the environment that leads AWS clients there."""

    endpoint: str
    bucket: str

    @property
    def env(self) -> dict[str, str]:
        """What pyarrow (and any AWS SDK) reads: endpoint, credentials and region; no instance metadata lookups."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "streamcat-test",
            "AWS_SECRET_ACCESS_KEY": "streamcat-test-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def filesystem(self) -> pafs.S3FileSystem:
        """pyarrow's S3 filesystem on this server (given explicitly, not through the environment)."""
        env = self.env
        return pafs.S3FileSystem(access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"],
                                 region=env["AWS_REGION"], endpoint_override=self.endpoint, scheme="http",
                                 allow_bucket_creation=True)


@contextmanager
def s3_server(bucket: str = "warehouse") -> Iterator[S3Server]:
    """moto's server on a free port, with ``bucket`` created; stopped on exit."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            endpoint = f"http://127.0.0.1:{port}"
            wait_until_up(f"{endpoint}/moto-api/", timeout=60, process=process)
            server = S3Server(endpoint, bucket)
            server.filesystem().create_dir(bucket)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
