"""Build the catalog shim's jar with plain ``javac`` against the jars of the installed pyspark.

No Maven and no committed jar: the jar is compiled on first use and cached under
``$STREAMCAT_CACHE_DIR`` (default ``$XDG_CACHE_HOME/streamcat`` or ``~/.cache/streamcat``).
Its file name holds the pyspark version and a hash of the Java sources (and of the compiler
flags), so editing a source or upgrading Spark builds a new jar and an unchanged tree reuses
the old one. Concurrent builds (several test processes) are safe: each compiles in its own
temporary directory and the finished jar is moved into place atomically.

Run ``python -m spark_plugin.build`` to build and print the jar's path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

JAVA_SOURCES = Path(__file__).resolve().parent / "java"
#: The Java release the classes target: Spark 4 runs on Java 17 or later.
JAVA_RELEASE = "17"
_MANIFEST = "Manifest-Version: 1.0\nCreated-By: streamcat spark_plugin.build\n\n"


class BuildError(RuntimeError):
    """javac is missing or the sources do not compile; the message has the compiler's output."""


def pyspark_home() -> Path:
    """The installed pyspark package directory (its ``jars/`` hold Spark's classes)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_version() -> str:
    """The installed pyspark's version."""
    import pyspark

    return str(pyspark.__version__)


def cache_dir() -> Path:
    """Where built jars are kept."""
    configured = os.environ.get("STREAMCAT_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "streamcat"


def sources() -> list[Path]:
    """Every Java source of the shim, in a stable order."""
    return sorted(JAVA_SOURCES.rglob("*.java"))


def source_hash() -> str:
    """A digest of the sources (paths and contents), the Spark version and the compiler flags."""
    digest = hashlib.sha256()
    digest.update(f"spark={spark_version()};release={JAVA_RELEASE}\n".encode())
    for path in sources():
        digest.update(path.relative_to(JAVA_SOURCES).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def jar_name() -> str:
    """The jar's file name for the current sources and Spark version."""
    return f"streamcat-spark-{spark_version()}-{source_hash()}.jar"


def javac() -> str:
    """The javac to use: ``$JAVA_HOME/bin/javac`` when set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    found = shutil.which("javac")
    if not found:
        raise BuildError("javac not found: install a JDK 17 or later, or set JAVA_HOME")
    return found


def _compile(classes: Path) -> None:
    classpath = str(pyspark_home() / "jars" / "*")
    command = [javac(), "--release", JAVA_RELEASE, "-encoding", "UTF-8", "-nowarn", "-cp", classpath,
               "-d", str(classes), *map(str, sources())]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BuildError(f"javac failed ({result.returncode}):\n{result.stdout}{result.stderr}")


def _package(classes: Path, jar: Path) -> None:
    with zipfile.ZipFile(jar, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("META-INF/MANIFEST.MF", _MANIFEST)
        for path in sorted(classes.rglob("*.class")):
            out.write(path, path.relative_to(classes).as_posix())


def build(force: bool = False) -> Path:
    """The shim's jar for the current sources and Spark version, compiled now if not cached."""
    target = cache_dir() / jar_name()
    if target.exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # A first build takes a while (10-20 s): say what is happening, on stderr so that $(streamcat spark-conf)
    # still captures only the flags.
    print(f"streamcat: compiling the Spark catalog plugin with javac into {target} (once per source change)",
          file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="streamcat-build-", dir=target.parent) as work:
        classes = Path(work) / "classes"
        classes.mkdir()
        _compile(classes)
        jar = Path(work) / target.name
        _package(classes, jar)
        os.replace(jar, target)
    return target


if __name__ == "__main__":
    try:
        print(build(force="--force" in sys.argv[1:]))
    except BuildError as e:
        sys.exit(str(e))
