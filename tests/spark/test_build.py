"""Building the catalog shim's jar with javac, cached by source hash and Spark version."""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import spark_plugin
from catalog_api.server.cli_spark import spark_conf
from spark_plugin import build

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_the_jar_is_compiled_once_and_then_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STREAMCAT_CACHE_DIR", str(tmp_path / "cache"))
    jar = build.build()
    said = capfd.readouterr()
    assert said.out == "", "the flags $(streamcat spark-conf) captures stay clean"
    assert said.err.startswith("streamcat: compiling the Spark catalog plugin with javac"), "the wait is explained"
    assert jar.parent == tmp_path / "cache"
    assert jar.name == f"streamcat-spark-{build.spark_version()}-{build.source_hash()}.jar"
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
    assert {"META-INF/MANIFEST.MF", "streamcat/spark/StreamcatCatalog.class",
            "streamcat/spark/PythonSourceBridge.class"} <= names
    built = jar.stat().st_mtime_ns
    assert build.build() == jar
    assert jar.stat().st_mtime_ns == built
    assert capfd.readouterr().err == "", "a cached jar is used silently"
    assert list((tmp_path / "cache").iterdir()) == [jar]  # no temporary build directory left


def test_a_changed_source_or_spark_version_makes_a_new_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "java"
    shutil.copytree(build.JAVA_SOURCES, sources)
    monkeypatch.setattr(build, "JAVA_SOURCES", sources)
    original = build.jar_name()
    catalog = sources / "streamcat" / "spark" / "StreamcatCatalog.java"
    catalog.write_text(catalog.read_text() + "\n// changed\n")
    changed = build.jar_name()
    assert changed != original
    monkeypatch.setattr(build, "spark_version", lambda: "9.9.9")
    assert build.jar_name().startswith("streamcat-spark-9.9.9-")
    assert build.jar_name() != changed


def test_sources_that_do_not_compile_fail_with_the_compiler_output(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "java"
    (sources / "broken").mkdir(parents=True)
    (sources / "broken" / "Broken.java").write_text("package broken; class Broken { int x = ; }\n")
    monkeypatch.setattr(build, "JAVA_SOURCES", sources)
    monkeypatch.setenv("STREAMCAT_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(build.BuildError, match=r"Broken\.java"):
        build.build()
    assert not any((tmp_path / "cache").glob("*.jar"))


def test_spark_conf_names_jar_catalog_and_python() -> None:
    conf = spark_plugin.spark_conf("http://host:9092", catalog="sc")
    assert conf["spark.sql.catalog.sc"] == "streamcat.spark.StreamcatCatalog"
    assert conf["spark.sql.catalog.sc.uri"] == "http://host:9092"
    assert conf["spark.pyspark.python"] == sys.executable
    assert Path(conf["spark.jars"]) == spark_plugin.jar_path()

    printed = CliRunner().invoke(spark_conf, ["--uri", "http://host:9092", "--catalog", "sc", "--properties"])
    assert printed.exit_code == 0, printed.output
    lines = dict(line.split(" ", 1) for line in printed.output.splitlines())
    assert lines == conf
