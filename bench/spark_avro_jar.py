"""Make Spark's built-in ``from_avro`` usable with the pyspark wheel, offline, for benchmarks.

pyspark 4.3's wheel ships Spark's Avro reading classes (``AvroDeserializer``,
``SchemaConverters``, ``AvroOptions`` in ``spark-sql``; ``from_avro`` in ``spark-sql-api``;
the ``FromAvro`` expression in ``spark-catalyst``; Apache Avro 1.12) but not the
``spark-avro`` connector jar, whose one class ``from_avro`` still needs:
``org.apache.spark.sql.avro.AvroDataToCatalyst``, which ``FromAvro`` looks up by name (without
it, every call fails with AVRO_NOT_LOADED_SQL_FUNCTIONS_UNUSABLE). ``spark.jars.packages``
would fetch the connector from Maven Central, which this machine cannot reach. So the class is
written here (``bench/spark_avro/AvroDataToCatalyst.scala``, a thin expression over the
wheel's own decoder classes) and compiled with the Scala compiler the wheel ships
(``scala-compiler-2.13``, there for ``spark-shell``), into a jar cached like the catalog shim's.

    .venv/bin/python bench/spark_avro_jar.py      # builds if needed, prints the jar's path
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_plugin.build import cache_dir, pyspark_home, spark_version

SOURCES = Path(__file__).resolve().parent / "spark_avro"


def _jar(name: str) -> str:
    found = sorted((pyspark_home() / "jars").glob(f"{name}-2.13.*.jar"))
    if not found:
        raise RuntimeError(f"the pyspark wheel has no {name} jar")
    return str(found[-1])


def build() -> Path:
    """The jar holding ``AvroDataToCatalyst``, compiled now if not cached."""
    sources = sorted(SOURCES.glob("*.scala"))
    digest = hashlib.sha256(spark_version().encode())
    for path in sources:
        digest.update(path.read_bytes())
    target = cache_dir() / f"spark-avro-stand-in-{spark_version()}-{digest.hexdigest()[:16]}.jar"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    java = shutil.which("java") or "java"
    compiler = os.pathsep.join(_jar(n) for n in ("scala-compiler", "scala-library", "scala-reflect"))
    with tempfile.TemporaryDirectory(prefix="streamcat-avro-", dir=target.parent) as work:
        classes = Path(work) / "classes"
        classes.mkdir()
        command = [java, "-cp", compiler, "scala.tools.nsc.Main", "-nowarn", "-usejavacp",
                   "-classpath", str(pyspark_home() / "jars" / "*"), "-d", str(classes), *map(str, sources)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"scalac failed ({result.returncode}):\n{result.stdout}{result.stderr}")
        jar = Path(work) / target.name
        with zipfile.ZipFile(jar, "w", compression=zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(jar, target)
    return target


if __name__ == "__main__":
    print(build())
