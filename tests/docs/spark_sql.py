"""``spark-sql`` run the way the README says: the venv on ``PATH``, the flags of ``streamcat spark-conf``,
nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

VENV_BIN = Path(sys.executable).parent


def user_env() -> dict[str, str]:
    """A shell's environment after the README's ``export PATH="$PWD/.venv/bin:$PATH"``: no SPARK_HOME and
    no PYSPARK_* settings of the test session."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def spark_conf_flags(uri: str) -> list[str]:
    """What ``$(streamcat spark-conf --uri URI)`` expands to."""
    done = subprocess.run(["streamcat", "spark-conf", "--uri", uri], env=user_env(), capture_output=True,
                          text=True, timeout=300, check=True)
    return done.stdout.split()


def start_spark_sql(uri: str, script: Path, cwd: Path, *extra: str) -> subprocess.Popen[str]:
    """``spark-sql $(streamcat spark-conf --uri URI) EXTRA -f SCRIPT`` in ``cwd``, started."""
    command: Sequence[str] = ["spark-sql", *spark_conf_flags(uri), *extra, "-f", str(script)]
    return subprocess.Popen(command, cwd=cwd, env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(process: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str, str]:
    """Wait for ``process``: its exit code, stdout and stderr."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, out, err


def frames(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are Java stack frames or start a Python traceback."""
    return [line for line in stderr.splitlines() if line.startswith("\tat ") or "Traceback" in line]
