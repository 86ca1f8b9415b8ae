"""Two schema versions side by side: their text line against line, and the fields one adds, drops or changes."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff: ``kind`` is ``same``, ``removed``, ``added`` or ``changed``;
    a side without a line is None."""

    kind: str
    left: str | None
    right: str | None
    left_number: int | None
    right_number: int | None


@dataclass(frozen=True)
class FieldChanges:
    """The fields (by path, ``$.a.b``) the right version adds, drops, or declares differently."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def readable(text: str) -> str:
    """A schema's text laid out one item a line: JSON (Avro, JSON Schema) indented, anything else as it is."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def side_by_side(left: str, right: str) -> list[DiffRow]:
    """The lines of ``left`` against those of ``right``."""
    a, b = left.splitlines(), right.splitlines()
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs = zip(range(i1, i2), range(j1, j2), strict=True)
            rows += [DiffRow("same", a[i], b[j], i + 1, j + 1) for i, j in pairs]
            continue
        removed, added = list(range(i1, i2)), list(range(j1, j2))
        for n in range(max(len(removed), len(added))):
            i = removed[n] if n < len(removed) else None
            j = added[n] if n < len(added) else None
            kind = "changed" if i is not None and j is not None else "removed" if i is not None else "added"
            rows.append(DiffRow(kind, a[i] if i is not None else None, b[j] if j is not None else None,
                                None if i is None else i + 1, None if j is None else j + 1))
    return rows


def _fields(node: Any, path: str, out: dict[str, str]) -> None:
    """The fields of an Avro record or a JSON Schema object, by path, with their declaration's JSON."""
    if not isinstance(node, dict):
        return
    if isinstance(node.get("fields"), list):  # an Avro record
        for item in node["fields"]:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                here = f"{path}.{item['name']}"
                out[here] = json.dumps(item.get("type"), sort_keys=True)
                kind = item.get("type")
                for branch in kind if isinstance(kind, list) else [kind]:
                    _fields(branch, here, out)
    if isinstance(node.get("properties"), dict):  # a JSON Schema object
        for name, sub in node["properties"].items():
            here = f"{path}.{name}"
            out[here] = json.dumps(sub, sort_keys=True)
            _fields(sub, here, out)


def field_changes(left: str, right: str) -> FieldChanges:
    """What ``right`` does to the fields of ``left`` (empty for schemas that are not JSON: Protobuf)."""
    try:
        before: dict[str, str] = {}
        after: dict[str, str] = {}
        _fields(json.loads(left), "$", before)
        _fields(json.loads(right), "$", after)
    except ValueError:
        return FieldChanges()
    return FieldChanges(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=sorted(k for k in before.keys() & after.keys() if before[k] != after[k]),
    )
