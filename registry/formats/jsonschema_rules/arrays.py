"""Array keywords: ``items``/``prefixItems``/``additionalItems``, ``minItems``/``maxItems``, ``uniqueItems``,
``contains`` with ``minContains``/``maxContains``.
"""

from __future__ import annotations

from registry.formats.base import Incompatibility
from registry.formats.jsonschema_rules._helpers import _is_number, _none
from registry.formats.jsonschema_rules.branches import Branch
from registry.formats.jsonschema_rules.nodes import Node, Recurse
from registry.formats.jsonschema_rules.paths import item_path


def _tuple_form(node: Node) -> tuple[list[Node], Node | None]:
    """Positional item schemas and the schema of every later item (None: unconstrained)."""
    words = node.keywords
    if isinstance(words.get("prefixItems"), list):
        rest = words.get("items")
        return [node.child(s) for s in words["prefixItems"]], None if rest is None else node.child(rest)
    items = words.get("items")
    if isinstance(items, list):
        rest = words.get("additionalItems")
        return [node.child(s) for s in items], None if rest is None else node.child(rest)
    return [], None if items is None else node.child(items)


def _item_at(form: tuple[list[Node], Node | None], index: int) -> Node | None:
    prefix, rest = form
    return prefix[index] if index < len(prefix) else rest


def check_arrays(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    """Item schemas (list, tuple and prefixItems forms), item counts, ``uniqueItems``, ``contains``."""
    words = reader.keywords
    writer_words = [n.keywords for n in branch.conjuncts]
    reasons: list[Incompatibility] = []
    r_prefix, r_rest = _tuple_form(reader)
    w_forms = [_tuple_form(n) for n in branch.conjuncts]
    caps = [w["maxItems"] for w in writer_words if _is_number(w.get("maxItems"))]
    caps += [len(prefix) for prefix, rest in w_forms if rest is not None and rest.schema is False]
    w_max = min(caps, default=None)
    w_min = max([w["minItems"] for w in writer_words if _is_number(w.get("minItems"))], default=0)
    positions = max([len(r_prefix), *(len(p) for p, _ in w_forms)])
    for index in range(positions):
        if w_max is not None and index >= w_max:
            break
        r_item = r_prefix[index] if index < len(r_prefix) else r_rest
        w_items = [item for item in (_item_at(form, index) for form in w_forms) if item is not None]
        if any(n.schema is False for n in w_items):
            break  # the writer's arrays stop before this position
        if r_item is None:
            continue
        if r_item.schema is False:
            reasons.append(
                Incompatibility(
                    item_path(path, index), f"the writer allows item {index}, the reader's tuple ends before it"
                )
            )
            break
        reasons.extend(recurse(r_item, w_items, item_path(path, index)))
    w_rest = [rest for _, rest in w_forms if rest is not None]
    if r_rest is not None and (w_max is None or w_max > positions) and not any(n.schema is False for n in w_rest):
        if r_rest.schema is False:
            reasons.append(
                Incompatibility(
                    item_path(path, None), f"the writer allows more than {positions} items, the reader does not"
                )
            )
        else:
            reasons.extend(recurse(r_rest, w_rest, item_path(path, None)))
    if _is_number(words.get("minItems")) and words["minItems"] > w_min:
        reasons.append(Incompatibility(path, f"minItems raised from {w_min} to {words['minItems']}"))
    if _is_number(words.get("maxItems")) and (w_max is None or words["maxItems"] < w_max):
        reasons.append(Incompatibility(path, f"maxItems lowered from {_none(w_max)} to {words['maxItems']}"))
    unique = any(w.get("uniqueItems") is True for w in writer_words) or (w_max is not None and w_max <= 1)
    if words.get("uniqueItems") is True and not unique:
        reasons.append(Incompatibility(path, "uniqueItems added: the writer allows duplicate items"))
    if "contains" in words:
        reasons.extend(_check_contains(reader, branch, w_forms, (w_min, w_max), path, recurse))
    return reasons


def _check_contains(
    reader: Node,
    branch: Branch,
    w_forms: list[tuple[list[Node], Node | None]],
    counts: tuple[int, int | None],
    path: str,
    recurse: Recurse,
) -> list[Incompatibility]:
    words = reader.keywords
    wanted = reader.child(words["contains"])
    at_least = words.get("minContains", 1)
    at_most = words.get("maxContains")
    w_min, w_max = counts
    reasons: list[Incompatibility] = []
    writer_contains = [(n, n.keywords) for n in branch.conjuncts if "contains" in n.keywords]
    if _is_number(at_least) and at_least > 0:
        proven = any(
            w.get("minContains", 1) >= at_least and not recurse(wanted, [n.child(w["contains"])], item_path(path, None))
            for n, w in writer_contains
        )
        if not proven and w_min >= at_least and all(not prefix for prefix, _ in w_forms):
            every_item = [rest for _, rest in w_forms if rest is not None]
            proven = not recurse(wanted, every_item, item_path(path, None))
        if not proven:
            reasons.append(
                Incompatibility(
                    path, f"contains added or changed: the writer's arrays need not have {at_least} such item(s)"
                )
            )
    if _is_number(at_most):
        proven = w_max is not None and w_max <= at_most
        proven = proven or any(
            _is_number(w.get("maxContains"))
            and w["maxContains"] <= at_most
            and not recurse(n.child(w["contains"]), [wanted], item_path(path, None))
            for n, w in writer_contains
        )
        if not proven:
            reasons.append(
                Incompatibility(path, f"maxContains {at_most} added: the writer's arrays may have more such items")
            )
    return reasons
