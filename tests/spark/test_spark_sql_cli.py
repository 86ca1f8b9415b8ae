"""The ``spark-sql`` command line, configured with nothing but the flags ``streamcat spark-conf`` prints."""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.server.cli_spark import spark_conf
from registry.errors import NotFound
from spark_plugin.build import pyspark_home

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_spark_sql_runs_ddl_and_dml_with_only_jars_and_conf(spark_server: str, tmp_path: Path) -> None:
    printed = CliRunner().invoke(spark_conf, ["--uri", spark_server])
    assert printed.exit_code == 0, printed.output
    flags = shlex.split(printed.output)
    assert {f for f in flags if f.startswith("--")} == {"--jars", "--conf"}

    scope = f"cli{uuid.uuid4().hex[:10]}"
    statements = f"""
        CREATE NAMESPACE streamcat.{scope};
        CREATE TABLE streamcat.{scope}.t (id INT, name STRING) USING avro;
        INSERT INTO streamcat.{scope}.t VALUES (1, 'one'), (2, 'two');
        SELECT concat('row:', id, ':', name) FROM streamcat.{scope}.t ORDER BY id;
        DESCRIBE TABLE streamcat.{scope}.t;
        DROP TABLE streamcat.{scope}.t;
        SHOW TABLES IN streamcat.{scope};
    """
    # No PYSPARK_PYTHON: the flags alone must lead Spark to the right interpreter.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_HOME"] = str(pyspark_home())
    done = subprocess.run([str(pyspark_home() / "bin" / "spark-sql"), *flags, "-e", statements], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert [line for line in lines if line.startswith("row:")] == ["row:1:one", "row:2:two"]
    assert [line.split() for line in lines if line.split()[:1] in (["id"], ["name"])] == [["id", "int"],
                                                                                         ["name", "string"]]
    catalog = CatalogClient(spark_server)
    assert catalog.get_scope(scope)["scopeName"] == scope
    with pytest.raises(NotFound):
        catalog.get_table(scope, "t")
