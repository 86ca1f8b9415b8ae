"""Beyond one machine: a Spark standalone cluster (a master and two workers, each a JVM of its own, started
with pyspark's own ``spark-class``) runs the core flow through ``spark-submit`` and ``streamcat refresher``,
once on a local warehouse and once on a warehouse in S3 (moto's server).

The S3 endpoint and credentials reach the executors through Spark settings (``spark.executorEnv.*``) only:
the cluster's daemons never see them, and no table property carries them. The JVM has no filesystem for
``s3://`` here (no hadoop-aws), so the S3 tables are read and written by the Python data source, which
the driver says once in its log.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

import spark_plugin
from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.streams import StreamReader
from registry.client import RegistryClient
from spark_plugin.build import pyspark_home
from tests.support.cluster import Cluster, spark_env, standalone_cluster
from tests.support.moto import S3Server, s3_server
from tests.support.net import serve_in_thread

pytestmark = pytest.mark.slow

FLOW = Path(__file__).with_name("flow.py")
#: Each application's executors: one per worker (one core each), small.
EXECUTORS = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
             "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
             "spark.sql.catalogImplementation": "in-memory", "spark.sql.shuffle.partitions": "4"}
FALLBACK = 'no Hadoop filesystem for scheme "s3"'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


def serve(tmp_path: Path, name: str, warehouse: str) -> Any:
    """The application on a SQLite database of its own, with ``warehouse``, over HTTP."""
    url = f"sqlite:///{tmp_path / f'{name}.db'}"
    migrate.upgrade(url)
    return serve_in_thread(create_app({"database_url": url, "warehouse": warehouse}))


def conf_flags(settings: dict[str, str]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]


def start(command: list[str], env: dict[str, str], cwd: Path, name: str) -> subprocess.Popen[str]:
    """``command`` running, its output going to ``cwd/name.out`` and ``cwd/name.err``."""
    with open(cwd / f"{name}.out", "w") as out, open(cwd / f"{name}.err", "w") as err:
        return subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True)


def finish(process: subprocess.Popen[str], cwd: Path, name: str, cluster: Cluster) -> tuple[str, str]:
    """Wait for a process of :func:`start`; its standard output and error (the test fails if it did)."""
    try:
        code = process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    out, err = ((cwd / f"{name}.{kind}").read_text() for kind in ("out", "err"))
    assert code == 0, f"{name} exited {code}:\n{out[-3000:]}\n{err[-6000:]}\n{cluster.log_text()}"
    return out, err


def rows(server: str, scope: str, table: str) -> list[tuple[Any, ...]]:
    """A table's rows read with the project's Python reader (no Spark)."""
    reader = StreamReader(CatalogClient(server), RegistryClient(server, scope), scope, table)
    return sorted((r["item"], r["qty"]) for r in reader.read())


def test_core_flow_on_a_standalone_cluster_with_local_and_s3_warehouses(
    cluster: Cluster, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test process (the S3 server's catalog, the Python reader below) reaches S3 as a user's shell would.
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    scope = f"cl{uuid.uuid4().hex[:8]}"
    warehouses = {"wh_local": str(tmp_path / "warehouse"), "wh_s3": f"s3://{s3.bucket}/warehouse"}
    with serve(tmp_path, "local", warehouses["wh_local"]) as local_url, serve(tmp_path, "s3", warehouses["wh_s3"]) \
            as s3_url:
        servers = {"wh_local": local_url, "wh_s3": s3_url}
        executor_env = {f"spark.executorEnv.{k}": v for k, v in s3.env.items()}
        settings = {**spark_plugin.spark_conf(local_url, "wh_local"), **spark_plugin.catalog_conf(s3_url, "wh_s3"),
                    **EXECUTORS, **executor_env}
        # The driver's environment is the user's shell (with the S3 settings); the daemons' is not.
        env = {**spark_env(cluster.root), **s3.env}
        submit = [str(pyspark_home() / "bin" / "spark-submit"), "--master", cluster.master, *conf_flags(settings),
                  str(FLOW), scope, str(tmp_path / "checkpoints"), "wh_local", "wh_s3"]
        stdout, stderr = finish(start(submit, env, tmp_path, "flow"), tmp_path, "flow", cluster)
        results = {line.split(" ", 2)[1]: json.loads(line.split(" ", 2)[2])
                   for line in stdout.splitlines() if line.startswith("RESULT ")}
        assert set(results) == {"wh_local", "wh_s3"}, stdout
        for catalog, seen in results.items():
            assert seen["orders"] == [1000, 1000, 1000], catalog
            assert seen["stock"] == [110, 20, 90 + 20 * 5], catalog
            assert seen["changes"] == {"insert": 10, "update_preimage": 10, "update_postimage": 10}, catalog
            assert seen["copy"] == [1000, 1000], catalog
            assert seen["revenue"] == [["cake", 500], ["tea", 500]], catalog
        # Python path on S3, said once by the driver; the local warehouse took the native path silently.
        assert stderr.count(FALLBACK) == 1, stderr[-4000:]

        # The S3 tables' files are in the bucket, and nothing of S3 is in a table's properties.
        s3_files = s3.filesystem().get_file_info(pafs.FileSelector(f"{s3.bucket}/warehouse/{scope}", recursive=True))
        assert any(f.path.endswith(".parquet") for f in s3_files)
        for catalog, url in servers.items():
            for table in ("orders", "stock", "orders_copy"):
                properties = CatalogClient(url).get_table(scope, table)["properties"]
                assert not [k for k, v in properties.items() if "aws" in k.lower() or s3.endpoint in str(v)], catalog

        # The refresher on the cluster catches each materialized table up with its changed source: one for each
        # server, both at once (an executor each).
        refreshers = {}
        for catalog, url in servers.items():
            extra = executor_env if catalog == "wh_s3" else {}
            command = [sys.executable, "-m", "catalog_api.server.cli", "refresher", "--once", "--master",
                       cluster.master, "--uri", url, "--catalog", catalog, "--scope", scope,
                       *conf_flags({**EXECUTORS, "spark.cores.max": "1", **extra})]
            refreshers[catalog] = start(command, env, tmp_path, f"refresher-{catalog}")
        try:
            for catalog, process in refreshers.items():
                out, _ = finish(process, tmp_path, f"refresher-{catalog}", cluster)
                lines = [line for line in out.splitlines() if line.startswith(f"{scope}.revenue: ")]
                assert len(lines) == 1, out
                assert lines[0].split(": ")[1] not in ("failed", "unchanged", "skipped"), lines
                assert rows(servers[catalog], scope, "revenue") == [("cake", 520), ("tea", 510)], catalog
        finally:
            for process in refreshers.values():
                if process.poll() is None:
                    process.kill()
                    process.wait()
