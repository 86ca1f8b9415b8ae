"""Numeric and string keywords: ``minimum``/``maximum`` (exclusive forms too), ``multipleOf``;
``minLength``/``maxLength``, ``pattern`` and ``format``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from registry.formats.base import Incompatibility
from registry.formats.jsonschema_rules._helpers import _is_number, _none
from registry.formats.jsonschema_rules.branches import Branch
from registry.formats.jsonschema_rules.nodes import Node

# --------------------------------------------------------------------------------------- numbers

_Bound = tuple[Fraction, bool]  # value, exclusive


def _lower(words: dict[str, Any]) -> _Bound | None:
    bound: _Bound | None = None
    exclusive, value = words.get("exclusiveMinimum"), words.get("minimum")
    if _is_number(value):
        bound = (Fraction(value), exclusive is True)
    if _is_number(exclusive):
        bound = _tighter_lower(bound, (Fraction(exclusive), True))
    return bound


def _upper(words: dict[str, Any]) -> _Bound | None:
    bound: _Bound | None = None
    exclusive, value = words.get("exclusiveMaximum"), words.get("maximum")
    if _is_number(value):
        bound = (Fraction(value), exclusive is True)
    if _is_number(exclusive):
        bound = _tighter_upper(bound, (Fraction(exclusive), True))
    return bound


def _tighter_lower(a: _Bound | None, b: _Bound | None) -> _Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return (a[0], a[1] or b[1])


def _tighter_upper(a: _Bound | None, b: _Bound | None) -> _Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] or b[1])


def _integer_lower(bound: _Bound | None) -> _Bound | None:
    if bound is None:
        return None
    value, exclusive = bound
    floor = value.numerator // value.denominator
    return (Fraction(floor + 1 if exclusive or floor < value else floor), False)


def _integer_upper(bound: _Bound | None) -> _Bound | None:
    if bound is None:
        return None
    value, exclusive = bound
    ceil = -((-value.numerator) // value.denominator)
    return (Fraction(ceil - 1 if exclusive or ceil > value else ceil), False)


def _show(bound: _Bound | None, inclusive: str, exclusive: str) -> str:
    if bound is None:
        return "none"
    value = bound[0]
    text = str(value.numerator) if value.denominator == 1 else str(float(value))
    return f"{exclusive if bound[1] else inclusive} {text}"


def check_numbers(reader: Node, branch: Branch, integers_only: bool, path: str) -> list[Incompatibility]:
    """Bounds and ``multipleOf``: the writer's must be at least as tight as the reader's."""
    words = reader.keywords
    writer_words = [n.keywords for n in branch.conjuncts]
    reasons: list[Incompatibility] = []
    r_low, r_high = _lower(words), _upper(words)
    w_low = w_high = None
    for w in writer_words:
        w_low, w_high = _tighter_lower(w_low, _lower(w)), _tighter_upper(w_high, _upper(w))
    if integers_only:
        r_low, r_high, w_low, w_high = (
            _integer_lower(r_low),
            _integer_upper(r_high),
            _integer_lower(w_low),
            _integer_upper(w_high),
        )
    if r_low is not None and not _at_least_as_tight(w_low, r_low, above=True):
        reasons.append(
            Incompatibility(path, f"minimum tightened from {_show(w_low, '>=', '>')} to {_show(r_low, '>=', '>')}")
        )
    if r_high is not None and not _at_least_as_tight(w_high, r_high, above=False):
        reasons.append(
            Incompatibility(path, f"maximum tightened from {_show(w_high, '<=', '<')} to {_show(r_high, '<=', '<')}")
        )
    step = words.get("multipleOf")
    if _is_number(step):
        steps = [w["multipleOf"] for w in writer_words if _is_number(w.get("multipleOf"))]
        if not any(_divides(step, s) for s in steps) and not (integers_only and step == 1):
            was = ", ".join(str(s) for s in steps) or "none"
            reasons.append(Incompatibility(path, f"multipleOf changed from {was} to {step}"))
    return reasons


def _at_least_as_tight(writer: _Bound | None, reader: _Bound, *, above: bool) -> bool:
    """Whether the writer's bound excludes everything the reader's bound excludes."""
    if writer is None:
        return False
    if writer[0] != reader[0]:
        return writer[0] > reader[0] if above else writer[0] < reader[0]
    return writer[1] or not reader[1]


def _divides(step: Any, writer_step: Any) -> bool:
    # jsonschema divides floats in floating point, so only exact integer arithmetic is trusted.
    if isinstance(step, int) and isinstance(writer_step, int) and step > 0:
        return writer_step % step == 0
    return bool(step == writer_step)


# --------------------------------------------------------------------------------------- strings


def check_strings(reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
    """Length limits, ``pattern`` (identical only) and ``format`` (identical only)."""
    words = reader.keywords
    writer_words = [n.keywords for n in branch.conjuncts]
    reasons: list[Incompatibility] = []
    w_min = max([w["minLength"] for w in writer_words if _is_number(w.get("minLength"))], default=0)
    w_max = min([w["maxLength"] for w in writer_words if _is_number(w.get("maxLength"))], default=None)
    if _is_number(words.get("minLength")) and words["minLength"] > w_min:
        reasons.append(Incompatibility(path, f"minLength raised from {w_min} to {words['minLength']}"))
    if _is_number(words.get("maxLength")) and (w_max is None or words["maxLength"] < w_max):
        reasons.append(Incompatibility(path, f"maxLength lowered from {_none(w_max)} to {words['maxLength']}"))
    for keyword in ("pattern", "format"):
        if isinstance(words.get(keyword), str):
            have = [w[keyword] for w in writer_words if isinstance(w.get(keyword), str)]
            if words[keyword] not in have:
                was = ", ".join(have) or "none"
                reasons.append(Incompatibility(path, f"{keyword} changed from {was} to {words[keyword]}"))
    return reasons
