"""Object keywords: ``properties``, ``required``, ``patternProperties``, ``additionalProperties``,
``minProperties``/``maxProperties``, ``propertyNames``, ``dependencies``/``dependentRequired``/``dependentSchemas``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from registry.formats.base import Incompatibility
from registry.formats.jsonschema_rules._helpers import _dict, _is_number, _list, _none
from registry.formats.jsonschema_rules.branches import Branch
from registry.formats.jsonschema_rules.nodes import Node, Recurse
from registry.formats.jsonschema_rules.paths import additional_path, pattern_path, property_path


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _matches(pattern: str, name: str) -> bool | None:
    """Whether ``name`` matches ``pattern`` as jsonschema tests it (None: the pattern does not compile)."""
    compiled = _regex(pattern)
    return None if compiled is None else compiled.search(name) is not None


def schemas_for_name(node: Node, name: str, *, writer: bool) -> list[Node]:
    """The schemas a property ``name`` must satisfy under ``node`` (empty: anything).

    A pattern that does not compile in Python is read in the safe direction: ignored by a writer,
    applied (with ``additionalProperties`` too) by a reader.
    """
    words = node.keywords
    result: list[Node] = []
    declared = _dict(words.get("properties"))
    if name in declared:
        result.append(node.child(declared[name]))
    matched = unknown = False
    for pattern, schema in _dict(words.get("patternProperties")).items():
        hit = _matches(pattern, name)
        if hit or (hit is None and not writer):
            result.append(node.child(schema))
        matched = matched or bool(hit)
        unknown = unknown or hit is None
    if name not in declared and not matched and "additionalProperties" in words and not (unknown and writer):
        result.append(node.child(words["additionalProperties"]))
    return result


def _literal_prefix(pattern: str) -> str:
    if not pattern.startswith("^"):
        return ""
    prefix = ""
    for char in pattern[1:]:
        if char in ".^$*+?()[]{}|\\":
            if char in "*?{" and prefix:
                prefix = prefix[:-1]  # the last literal was made optional or repeated
            break
        prefix += char
    return prefix


def patterns_disjoint(a: str, b: str) -> bool:
    """Whether no name can match both patterns (proved only for distinct anchored literal prefixes)."""
    pa, pb = _literal_prefix(a), _literal_prefix(b)
    return bool(pa and pb and not pa.startswith(pb) and not pb.startswith(pa))


def _closed_message(name: str, declared_by_reader: bool) -> str:
    if declared_by_reader:
        return f"property {name} is forbidden by the reader but allowed by the writer"
    return f"property {name} allowed by the writer is rejected by the reader's closed content model"


def _summarize(nested: list[Incompatibility], where: str, lead: str) -> list[Incompatibility]:
    if not nested:
        return []
    first = nested[0]
    detail = first.message if first.path == where else str(first)
    return [Incompatibility(where, f"{lead}: {detail}")]


def check_objects(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    """Required names, declared/pattern/additional property schemas, counts, names, dependencies."""
    words = reader.keywords
    conjuncts = branch.conjuncts
    writer_words = [n.keywords for n in conjuncts]
    reasons: list[Incompatibility] = []
    w_required = {r for w in writer_words for r in _list(w.get("required")) if isinstance(r, str)}
    for name in _list(words.get("required")):
        if isinstance(name, str) and name not in w_required:
            reasons.append(
                Incompatibility(
                    property_path(path, name), f"property {name} is required by the reader but optional in the writer"
                )
            )
    r_declared = _dict(words.get("properties"))
    w_declared = {name for w in writer_words for name in _dict(w.get("properties"))}
    for name in dict.fromkeys([*r_declared, *(n for w in writer_words for n in _dict(w.get("properties")))]):
        w_nodes = [s for n in conjuncts for s in schemas_for_name(n, name, writer=True)]
        if any(s.schema is False for s in w_nodes):
            continue  # the writer never writes this property
        where = property_path(path, name)
        for r_node in schemas_for_name(reader, name, writer=False):
            if r_node.schema is False:
                reasons.append(Incompatibility(where, _closed_message(name, name in r_declared)))
                continue
            nested = recurse(r_node, w_nodes, where)
            if name in r_declared and name not in w_declared:
                lead = f"property {name} added to the reader is stricter than the writer's undeclared properties"
                reasons.extend(_summarize(nested, where, lead))
            elif name in w_declared and name not in r_declared:
                lead = f"property {name} removed from the reader falls under a schema that rejects some of its values"
                reasons.extend(_summarize(nested, where, lead))
            else:
                reasons.extend(nested)
    reasons.extend(_check_undeclared(reader, branch, path, recurse))
    reasons.extend(_check_counts(reader, branch, w_required, path))
    reasons.extend(_check_property_names(reader, branch, path, recurse))
    reasons.extend(_check_dependencies(reader, branch, w_required, path, recurse))
    return reasons


def _check_undeclared(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    """Properties no schema names: writer patterns and writer ``additionalProperties``."""
    words = reader.keywords
    reasons: list[Incompatibility] = []
    r_patterns = _dict(words.get("patternProperties"))
    w_patterns = list(dict.fromkeys(p for n in branch.conjuncts for p in _dict(n.keywords.get("patternProperties"))))
    r_extra = [q for q in r_patterns if q not in w_patterns]
    r_additional = reader.child(words["additionalProperties"]) if "additionalProperties" in words else None
    for pattern in w_patterns:
        w_nodes = [
            n.child(n.keywords["patternProperties"][pattern])
            for n in branch.conjuncts
            if pattern in _dict(n.keywords.get("patternProperties"))
        ]
        if any(s.schema is False for s in w_nodes):
            continue
        targets: list[Node] = []
        if pattern in r_patterns:
            targets.append(reader.child(r_patterns[pattern]))
        elif r_additional is not None:
            targets.append(r_additional)
        targets += [reader.child(r_patterns[q]) for q in r_extra if not patterns_disjoint(pattern, q)]
        where = pattern_path(path, pattern)
        for target in targets:
            if target.schema is False:
                reasons.append(
                    Incompatibility(
                        where, f"properties matching {pattern} are allowed by the writer but rejected by the reader"
                    )
                )
            else:
                reasons.extend(recurse(target, w_nodes, where))
    w_additional = [
        n.child(n.keywords["additionalProperties"]) for n in branch.conjuncts if "additionalProperties" in n.keywords
    ]
    if any(s.schema is False for s in w_additional):
        return reasons
    if r_additional is not None:
        where = additional_path(path)
        if r_additional.schema is False:
            reasons.append(
                Incompatibility(
                    where, "the writer allows undeclared properties but the reader's content model is closed"
                )
            )
        else:
            reasons.extend(recurse(r_additional, w_additional, where))
    for pattern in r_extra:
        target = reader.child(r_patterns[pattern])
        where = pattern_path(path, pattern)
        if target.schema is False:
            reasons.append(
                Incompatibility(
                    where, f"the writer allows undeclared properties matching {pattern}, the reader forbids them"
                )
            )
        else:
            nested = recurse(target, w_additional, where)
            reasons.extend(
                _summarize(
                    nested,
                    where,
                    f"patternProperties {pattern} added to the reader narrows the writer's undeclared properties",
                )
            )
    return reasons


def _writer_caps(branch: Branch) -> int | None:
    caps: list[int] = []
    for node in branch.conjuncts:
        words = node.keywords
        if _is_number(words.get("maxProperties")):
            caps.append(words["maxProperties"])
        if words.get("additionalProperties") is False and not _dict(words.get("patternProperties")):
            caps.append(sum(1 for s in _dict(words.get("properties")).values() if s is not False))
    return min(caps, default=None)


def _check_counts(reader: Node, branch: Branch, w_required: set[str], path: str) -> list[Incompatibility]:
    words = reader.keywords
    reasons: list[Incompatibility] = []
    w_min = max(
        [n.keywords["minProperties"] for n in branch.conjuncts if _is_number(n.keywords.get("minProperties"))]
        + [len(w_required)]
    )
    w_max = _writer_caps(branch)
    if _is_number(words.get("minProperties")) and words["minProperties"] > w_min:
        reasons.append(Incompatibility(path, f"minProperties raised from {w_min} to {words['minProperties']}"))
    if _is_number(words.get("maxProperties")) and (w_max is None or words["maxProperties"] < w_max):
        reasons.append(Incompatibility(path, f"maxProperties lowered from {_none(w_max)} to {words['maxProperties']}"))
    return reasons


def _check_property_names(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    words = reader.keywords
    if "propertyNames" not in words or words["propertyNames"] in (True, {}):
        return []
    names = reader.child(words["propertyNames"])
    w_names = [n.child(n.keywords["propertyNames"]) for n in branch.conjuncts if "propertyNames" in n.keywords]
    if w_names and not recurse(names, [*w_names, branch.conjuncts[0].synthetic({"type": "string"})], path):
        return []
    for node in branch.conjuncts:
        w = node.keywords
        if w.get("additionalProperties") is False and not _dict(w.get("patternProperties")):
            allowed = [k for k, s in _dict(w.get("properties")).items() if s is not False]
            if all(names.accepts(k, strict=True) for k in allowed):
                return []
    return [
        Incompatibility(path, "propertyNames added or changed: the writer allows property names the reader rejects")
    ]


def _dependencies(words: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    for keyword in ("dependencies", "dependentRequired", "dependentSchemas"):
        yield from _dict(words.get(keyword)).items()


def _check_dependencies(
    reader: Node, branch: Branch, w_required: set[str], path: str, recurse: Recurse
) -> list[Incompatibility]:
    reasons: list[Incompatibility] = []
    for trigger, dependency in _dependencies(reader.keywords):
        w_nodes = [s for n in branch.conjuncts for s in schemas_for_name(n, trigger, writer=True)]
        if any(s.schema is False for s in w_nodes):
            continue  # the writer never writes the trigger property
        w_deps = [d for n in branch.conjuncts for t, d in _dependencies(n.keywords) if t == trigger]
        where = property_path(path, trigger)
        if isinstance(dependency, list):
            implied = w_required | {x for d in w_deps if isinstance(d, list) for x in d}
            for name in dependency:
                if name not in implied:
                    reasons.append(
                        Incompatibility(
                            where, f"the reader requires property {name} when {trigger} is present, the writer does not"
                        )
                    )
        else:
            # A writer value that has the trigger satisfies the whole branch and the writer's own dependency schemas.
            writer_side = [
                *branch.conjuncts,
                *(
                    n.child(d)
                    for n in branch.conjuncts
                    for t, d in _dependencies(n.keywords)
                    if t == trigger and not isinstance(d, list)
                ),
            ]
            nested = recurse(reader.child(dependency), writer_side, path)
            reasons.extend(
                _summarize(nested, where, f"the reader's dependent schema for {trigger} rejects some writer values")
            )
    return reasons
