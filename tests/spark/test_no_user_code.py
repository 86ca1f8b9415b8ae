"""No user code runs by accident: a ``pyspark_*`` module in the working directory of ``spark-sql`` and of
``streamcat refresher`` is never imported, whatever the plugin does (Spark imports every such module on
the Python path when it looks for Python data sources by name; the plugin never lets it)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.server.cli_spark import spark_conf
from spark_plugin.build import pyspark_home

# A process of its own (not the shared session): outside the "spark" group, so it runs beside it.
pytestmark = [pytest.mark.spark]


def statements(scope: str) -> str:
    """DDL, INSERT, SELECT, MERGE, CHANGES and every procedure, on the Python data source's paths."""
    s = f"streamcat.{scope}"
    revenue = f"SELECT item, sum(qty) AS qty FROM {s}.orders GROUP BY item"
    return f"""
        CREATE NAMESPACE {s};
        CREATE TABLE {s}.orders (id INT, item STRING, qty INT);
        CREATE TABLE {s}.stock (id INT NOT NULL, qty INT, CONSTRAINT stock_pk PRIMARY KEY (id));
        INSERT INTO {s}.orders VALUES (1, 'apple', 3), (2, 'pear', 1);
        INSERT INTO {s}.stock VALUES (1, 5), (2, 7);
        MERGE INTO {s}.stock t USING (SELECT 1 AS id, 9 AS qty) u ON t.id = u.id
            WHEN MATCHED THEN UPDATE SET qty = u.qty WHEN NOT MATCHED THEN INSERT *;
        SELECT concat('stock:', id, ':', qty) FROM {s}.stock ORDER BY id;
        SELECT concat('change:', _commit_version, ':', _change_type, ':', id)
            FROM {s}.stock CHANGES FROM VERSION 2 TO VERSION 2 WHERE _change_type != 'update_preimage';
        CALL streamcat.system.compact(table => '{scope}.stock');
        CALL streamcat.system.expire_snapshots(table => '{scope}.stock', retain_last => 1);
        CALL streamcat.system.set_partitioning(table => '{scope}.orders', partitioning => 'item');
        CALL streamcat.system.create_materialized_table(table => '{scope}.revenue', query => '{revenue}',
            freshness => '1 second', refresh_mode => 'full');
        INSERT INTO {s}.orders VALUES (3, 'apple', 2);
        CALL streamcat.system.refresh_materialized_table(table => '{scope}.revenue');
        CALL streamcat.system.suspend_materialized_table(table => '{scope}.revenue');
        CALL streamcat.system.resume_materialized_table(table => '{scope}.revenue');
        CALL streamcat.system.alter_materialized_table(table => '{scope}.revenue', freshness => '2 seconds');
        INSERT INTO {s}.orders VALUES (4, 'fig', 7);
    """


def test_a_pyspark_module_in_the_working_directory_is_never_imported(spark_server: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker-imported"
    (tmp_path / "pyspark_marker.py").write_text(f"open({str(marker)!r}, 'a').write('imported\\n')\n")
    scope = f"nouser{uuid.uuid4().hex[:8]}"
    script = tmp_path / "script.sql"
    script.write_text(statements(scope))
    printed = CliRunner().invoke(spark_conf, ["--uri", spark_server])
    assert printed.exit_code == 0, printed.output
    # The Python data source's paths (not Spark's own Parquet scan and write): Python workers run too.
    flags = [*shlex.split(printed.output), "--conf", "spark.sql.catalog.streamcat.native-scan=false",
             "--conf", "spark.sql.catalog.streamcat.native-write=false", "--conf", "spark.ui.enabled=false"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_HOME"] = str(pyspark_home())
    # The venv on PATH (as the README says), and the working directory on the Python path: Spark's lookup
    # of Python data sources by name would import the marker (checked with the shim before the fix).
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(tmp_path)

    done = subprocess.run([str(pyspark_home() / "bin" / "spark-sql"), *flags, "-f", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert [line for line in lines if line.startswith("stock:")] == ["stock:1:9", "stock:2:7"]
    assert [line for line in lines if line.startswith("change:")] == ["change:2:update_postimage:1"]
    assert not marker.exists(), marker.read_text()

    refresher = subprocess.run([sys.executable, "-m", "catalog_api.server.cli", "refresher", "--once",
                                "--master", "local[1]", "--uri", spark_server, "--scope", scope], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=600, check=False)
    assert refresher.returncode == 0, refresher.stdout + refresher.stderr[-4000:]
    assert f"{scope}.revenue: succeeded" in refresher.stdout, refresher.stdout
    assert not marker.exists(), marker.read_text()
    assert CatalogClient(spark_server).get_table(scope, "revenue")["stream"]["lastCommit"] == 3
