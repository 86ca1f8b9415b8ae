"""Spark's internal classes are used by the shim's internal-API classes only (docs/decisions.md,
"A second class may use Spark internals"), so that a Spark upgrade breaks code in known places.

Read from the Java sources' import statements: what Spark documents as the connector API (the
``connector`` packages, ``InternalRow`` and the catalog's ``analysis`` exceptions it declares) is
public; the rest of ``org.apache.spark.sql.catalyst`` and all of ``org.apache.spark.sql.execution``
are internal.
"""

from __future__ import annotations

import re
from pathlib import Path

JAVA = Path(__file__).resolve().parents[2] / "spark_plugin" / "java" / "streamcat" / "spark"
#: The classes allowed to use internals: the data source and file-format plumbing, plan analysis, and the
#: parser that reads the materialized-table statements.
INTERNAL_API_CLASSES = {"PythonSourceBridge", "IncrementalRefresh", "StreamcatSqlExtensions"}
_IMPORT = re.compile(r"^import\s+(org\.apache\.spark\.sql\.(?:catalyst|execution)\.[\w.]+);", re.MULTILINE)
#: Catalyst classes the connector API itself hands to or expects from a catalog.
_PUBLIC = re.compile(
    r"org\.apache\.spark\.sql\.catalyst\.(InternalRow|expressions\.GenericInternalRow|analysis\.\w+Exception)"
)


def _internal_imports(source: str) -> list[str]:
    return [name for name in _IMPORT.findall(source) if not _PUBLIC.fullmatch(name)]


def test_only_the_internal_api_classes_import_spark_internals() -> None:
    users = {path.stem: _internal_imports(path.read_text()) for path in sorted(JAVA.glob("*.java"))}
    offenders = {name: imports for name, imports in users.items() if imports and name not in INTERNAL_API_CLASSES}
    assert offenders == {}
    # Both classes exist and still need what they are allowed: the list stays true, not merely permissive.
    assert all(users.get(name) for name in INTERNAL_API_CLASSES)


def test_the_rule_reads_imports_as_javac_does() -> None:
    source = (
        "import org.apache.spark.sql.catalyst.InternalRow;\n"
        "import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;\n"
        "import org.apache.spark.sql.catalyst.plans.logical.Project;\n"
        "import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;\n"
        "import org.apache.spark.sql.connector.catalog.Table;\n"
    )
    assert _internal_imports(source) == [
        "org.apache.spark.sql.catalyst.plans.logical.Project",
        "org.apache.spark.sql.execution.datasources.InMemoryFileIndex",
    ]
