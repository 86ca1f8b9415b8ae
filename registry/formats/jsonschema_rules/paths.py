"""JSON paths of the values an incompatibility is about: ``$.a.b``, ``$.tags[0]``, ``$.*``, ``$./^x-/``."""

from __future__ import annotations

import json
import re


def property_path(path: str, name: str) -> str:
    """``$.address.zip``, or ``$["odd name"]`` for names that are not identifiers."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"{path}.{name}"
    return f"{path}[{json.dumps(name)}]"


def item_path(path: str, index: int | None) -> str:
    """``$.tags[0]`` for a tuple position, ``$.tags[]`` for every other item."""
    return f"{path}[{'' if index is None else index}]"


def additional_path(path: str) -> str:
    """The path of the values of undeclared properties."""
    return f"{path}.*"


def pattern_path(path: str, pattern: str) -> str:
    """The path of the values of properties whose name matches ``pattern``."""
    return f"{path}./{pattern}/"
