"""A Spark standalone cluster on 127.0.0.1: one master and its workers, each a JVM of its own, started
with the ``spark-class`` script of the installed pyspark wheel (as ``sbin/start-master.sh`` does)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from spark_plugin.build import pyspark_home
from tests.support.net import free_port

#: The heap of the master's and the workers' own JVMs (SPARK_DAEMON_MEMORY; Spark's default is 1g).
DAEMON_MEMORY = "256m"


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: its master URL and its directory (daemon logs in ``logs/``, the
    executors' working directories and logs in ``work/``)."""

    master: str
    root: Path

    def log_text(self) -> str:
        """The end of what the master, the workers and their executors logged (for a failing test's message)."""
        files = [p for d in ("logs", "work") for p in sorted((self.root / d).rglob("*")) if p.name.endswith(
            ("log", "stderr")) and p.is_file()]
        return "\n".join(f"== {p}\n{p.read_text(errors='replace')[-3000:]}" for p in files)


def spark_env(work: Path) -> dict[str, str]:
    """The environment of Spark's scripts: the wheel as SPARK_HOME, small daemons, files under ``work``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(SPARK_HOME=str(pyspark_home()), SPARK_DAEMON_MEMORY=DAEMON_MEMORY, SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOCAL_DIRS=str(work / "local"), SPARK_LOG_DIR=str(work / "logs"))
    return env


def _alive_workers(ui: str) -> int:
    try:
        state = requests.get(f"{ui}/json/", timeout=2).json()
    except (requests.RequestException, ValueError):
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@contextmanager
def standalone_cluster(work: Path, workers: int = 2, worker_memory: str = "1g",
                       timeout: float = 90.0) -> Iterator[Cluster]:
    """A master and ``workers`` workers (one core each) on 127.0.0.1; stopped (killed) on exit."""
    for sub in ("local", "logs", "work"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    # The daemons know nothing of the applications' stores: what executors need comes with each application.
    env = {k: v for k, v in spark_env(work).items() if not k.startswith("AWS_")}
    spark_class = str(pyspark_home() / "bin" / "spark-class")
    port, ui_port = free_port(), free_port()
    master = f"spark://127.0.0.1:{port}"
    ui = f"http://127.0.0.1:{ui_port}"
    with ExitStack() as stack:
        processes: list[subprocess.Popen[bytes]] = []

        def start(name: str, *args: str) -> None:
            log = stack.enter_context(open(work / "logs" / f"{name}.log", "wb"))
            # A session of its own: stopping a daemon stops the JVM spark-class execs, and nothing else.
            processes.append(subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True))

        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(ui_port))
        for i in range(workers):
            start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                  "--memory", worker_memory, "--webui-port", str(free_port()), "--work-dir", str(work / "work"),
                  master)
        cluster = Cluster(master, work)
        try:
            deadline = time.monotonic() + timeout
            while _alive_workers(ui) < workers:
                if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                    raise RuntimeError(f"the cluster did not come up in {timeout} s:\n{cluster.log_text()}")
                time.sleep(0.5)
            yield cluster
        finally:
            for process in processes:
                # The group: the daemon's JVM and the executors a worker started.
                os.killpg(process.pid, signal.SIGKILL)
            for process in processes:
                process.wait(timeout=30)
