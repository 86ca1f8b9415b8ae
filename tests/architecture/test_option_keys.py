"""The option keys the Java shim and the Python data source exchange are spelled once per language, and the
two spellings agree: ``OptionKeys.java`` and ``pyspark_streamcat.options.OptionKeys`` hold the same names and
values, and no other Java source spells a key as a literal."""

from __future__ import annotations

import re
from pathlib import Path

from pyspark_streamcat.options import OptionKeys

JAVA = Path(__file__).resolve().parents[2] / "spark_plugin" / "java" / "streamcat" / "spark"
_CONSTANT = re.compile(r'static final String (\w+) = "([^"]*)";')


def java_keys() -> dict[str, str]:
    return dict(_CONSTANT.findall((JAVA / "OptionKeys.java").read_text()))


def python_keys() -> dict[str, str]:
    return {name: value for name, value in vars(OptionKeys).items() if name.isupper()}


def test_the_java_and_python_keys_are_the_same() -> None:
    assert java_keys() == python_keys()
    assert len(python_keys()) > 20


def test_no_other_java_source_spells_a_key() -> None:
    keys = {value for value in java_keys().values() if value.startswith("streamcat.")}
    offenders = {
        path.name: sorted(set(re.findall(r'"(streamcat\.[a-z.]+)"', path.read_text())) & keys)
        for path in sorted(JAVA.glob("*.java"))
        if path.name != "OptionKeys.java"
    }
    assert {name: found for name, found in offenders.items() if found} == {}
