"""Data contracts of the Confluent API: a schema's ``metadata`` and ``ruleSet``, as Confluent
defines them (docs/data-contracts.md).

Both are part of what a schema is: the same text with another rule set is another schema, with
another id (:func:`contract_key`). A registration's contract is Confluent's three-layer merge
(:func:`merged`): the configuration's default, then the request's own (or, when it gives none,
the subject's latest version's), then the configuration's override. The server stores and
answers rules; clients run them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from registry.confluent.errors import InvalidRuleSet

#: Properties of a version's SchemaInfo (the Pravega API's view of the same version) holding its data
#: contract's metadata and rule set, as Confluent's JSON.
METADATA_PROPERTY = "streamcat.metadata"
RULE_SET_PROPERTY = "streamcat.ruleSet"
KINDS = ("CONDITION", "TRANSFORM")
MIGRATION_MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN")
DOMAIN_MODES = ("WRITE", "READ", "WRITEREAD")
#: Longest rule name Confluent takes.
MAX_RULE_NAME = 64
#: The parameter of a rule with ``onFailure`` ``DLQ`` naming the Streamcat table (``scope.table``) that the
#: Python writers send its failing rows to (Kafka clients use the rule's ``dlq.topic``).
DLQ_TABLE_PARAM = "dlq.table"
_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,254}")
_RULE_NAME = re.compile(r"[^\W\d][\w\-]*")


@dataclass(frozen=True)
class Metadata:
    """Tags (schema paths to tag names), properties and sensitive property names."""

    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    sensitive: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Confluent's JSON form; empty parts left out."""
        out: dict[str, Any] = {}
        if self.tags:
            out["tags"] = {path: list(names) for path, names in sorted(self.tags.items())}
        if self.properties:
            out["properties"] = dict(sorted(self.properties.items()))
        if self.sensitive:
            out["sensitive"] = sorted(self.sensitive)
        return out

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> Metadata:
        """The metadata of Confluent's JSON form (as validated by the wire model)."""
        tags = {str(k): tuple(sorted(set(v or ()))) for k, v in (data.get("tags") or {}).items()}
        properties = {str(k): str(v) for k, v in (data.get("properties") or {}).items()}
        return cls(tags, properties, tuple(sorted(set(data.get("sensitive") or ()))))

    def __bool__(self) -> bool:
        return bool(self.tags or self.properties or self.sensitive)


@dataclass(frozen=True)
class Rule:
    """One rule: a CONDITION or TRANSFORM of a ``type`` (CEL, CEL_FIELD, JSONATA, ENCRYPT, ...)
    run by clients in a ``mode``, with what to do on success and on failure."""

    name: str
    kind: str = "TRANSFORM"
    mode: str = "WRITEREAD"
    type: str = ""
    doc: str | None = None
    tags: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=dict)
    expr: str | None = None
    on_success: str | None = None
    on_failure: str | None = None
    disabled: bool = False

    def to_json(self) -> dict[str, Any]:
        """Confluent's JSON form; absent parts left out."""
        out: dict[str, Any] = {"name": self.name}
        if self.doc is not None:
            out["doc"] = self.doc
        out.update(kind=self.kind, mode=self.mode, type=self.type)
        if self.tags:
            out["tags"] = list(self.tags)
        if self.params:
            out["params"] = dict(sorted(self.params.items()))
        for key, value in (("expr", self.expr), ("onSuccess", self.on_success), ("onFailure", self.on_failure)):
            if value is not None:
                out[key] = value
        out["disabled"] = self.disabled
        return out

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> Rule:
        """The rule of Confluent's JSON form (as validated by the wire model)."""
        return cls(
            name=str(data.get("name") or ""),
            kind=str(data.get("kind") or "TRANSFORM"),
            mode=str(data.get("mode") or "WRITEREAD"),
            type=str(data.get("type") or ""),
            doc=data.get("doc"),
            tags=tuple(sorted(set(data.get("tags") or ()))),
            params={str(k): str(v) for k, v in (data.get("params") or {}).items()},
            expr=data.get("expr"),
            on_success=data.get("onSuccess"),
            on_failure=data.get("onFailure"),
            disabled=bool(data.get("disabled") or False),
        )


@dataclass(frozen=True)
class RuleSet:
    """Migration rules (between versions), domain rules (on records) and encoding rules (on
    payload bytes), each list in the order clients run it."""

    migration_rules: tuple[Rule, ...] = ()
    domain_rules: tuple[Rule, ...] = ()
    encoding_rules: tuple[Rule, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Confluent's JSON form; empty lists left out."""
        out: dict[str, Any] = {}
        for key, rules in (("migrationRules", self.migration_rules), ("domainRules", self.domain_rules),
                           ("encodingRules", self.encoding_rules)):
            if rules:
                out[key] = [r.to_json() for r in rules]
        return out

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> RuleSet:
        """The rule set of Confluent's JSON form, validated as Confluent validates it
        (InvalidRuleSet, 42210, naming what is wrong)."""
        found = cls(
            tuple(Rule.of_json(r) for r in data.get("migrationRules") or ()),
            tuple(Rule.of_json(r) for r in data.get("domainRules") or ()),
            tuple(Rule.of_json(r) for r in data.get("encodingRules") or ()),
        )
        found.validate()
        return found

    def validate(self) -> None:
        """Confluent's checks: names unique and well formed, a type, each list only its modes,
        several actions only with WRITEREAD and UPDOWN."""
        names: set[str] = set()
        lists = (
            (self.migration_rules, MIGRATION_MODES, "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN"),
            (self.domain_rules, DOMAIN_MODES, "Domain rules can only be WRITE, READ, WRITEREAD"),
            (self.encoding_rules, DOMAIN_MODES, "Encoding rules can only be WRITE, READ, WRITEREAD"),
        )
        for rules, modes, wrong_mode in lists:
            for rule in rules:
                _validate_name(rule.name)
                if rule.name in names:
                    raise InvalidRuleSet(f"Found rule with duplicate name '{rule.name}'")
                names.add(rule.name)
                if not rule.type:
                    raise InvalidRuleSet(f"Missing rule type in rule '{rule.name}'")
                if rule.kind not in KINDS:
                    raise InvalidRuleSet(f"Invalid kind {rule.kind!r} in rule '{rule.name}': expected "
                                         f"{' or '.join(KINDS)}")
                if rule.mode not in modes:
                    raise InvalidRuleSet(wrong_mode + f" (rule '{rule.name}' is {rule.mode})")
                for action in (rule.on_success, rule.on_failure):
                    if action and "," in action and rule.mode not in ("WRITEREAD", "UPDOWN"):
                        raise InvalidRuleSet(
                            f"Multiple actions only valid with WRITEREAD and UPDOWN (rule '{rule.name}')"
                        )
                _validate_dlq_table(rule)

    def __bool__(self) -> bool:
        return bool(self.migration_rules or self.domain_rules or self.encoding_rules)


def dlq_table(text: str) -> tuple[str, str]:
    """The (scope, table) a ``dlq.table`` parameter names; ValueError saying what is wrong."""
    scope, dot, table = text.partition(".")
    if not dot or not _TABLE_NAME.fullmatch(scope) or not _TABLE_NAME.fullmatch(table):
        raise ValueError(f"{DLQ_TABLE_PARAM} {text!r} is not scope.table (one dot; names of letters, digits, "
                         "'_' and '-')")
    return scope, table


def _validate_dlq_table(rule: Rule) -> None:
    text = rule.params.get(DLQ_TABLE_PARAM)
    if text is None:
        return
    try:
        dlq_table(text)
    except ValueError as e:
        raise InvalidRuleSet(f"Invalid parameter in rule '{rule.name}': {e}") from None


def _validate_name(name: str) -> None:
    if not name:
        raise InvalidRuleSet("Missing rule name")
    if len(name) > MAX_RULE_NAME:
        raise InvalidRuleSet(f"Rule name too long: at most {MAX_RULE_NAME} characters")
    if not (name[0].isalpha() or name[0] == "_"):
        raise InvalidRuleSet(f"Illegal initial character in rule name: {name}")
    if not _RULE_NAME.fullmatch(name):
        raise InvalidRuleSet(f"Illegal character in rule name: {name}")


@dataclass(frozen=True)
class Contract:
    """A schema's metadata and rule set (either may be absent)."""

    metadata: Metadata | None = None
    rule_set: RuleSet | None = None

    def __bool__(self) -> bool:
        return bool(self.metadata) or bool(self.rule_set)

    def property(self, key: str) -> str | None:
        """The value of one metadata property, if set."""
        return None if self.metadata is None else self.metadata.properties.get(key)


@dataclass(frozen=True)
class ContractConfig:
    """What a configuration scope says about contracts: the compatibility group (a metadata
    property whose value splits a subject's versions into separately checked groups), default
    and override metadata and rule sets. None: not set there."""

    compatibility_group: str | None = None
    default_metadata: Metadata | None = None
    override_metadata: Metadata | None = None
    default_rule_set: RuleSet | None = None
    override_rule_set: RuleSet | None = None

    def __bool__(self) -> bool:
        return any(value is not None for value in self.to_json().values())

    def to_json(self) -> dict[str, str | None]:
        """The settings as stored, one JSON text (or None) per column."""
        def text(value: Metadata | RuleSet | None) -> str | None:
            return None if value is None else _canonical(value.to_json())

        return {
            "compatibility_group": self.compatibility_group,
            "default_metadata": text(self.default_metadata),
            "override_metadata": text(self.override_metadata),
            "default_rule_set": text(self.default_rule_set),
            "override_rule_set": text(self.override_rule_set),
        }

    @classmethod
    def of_columns(cls, group: str | None, default_metadata: str | None, override_metadata: str | None,
                   default_rule_set: str | None, override_rule_set: str | None) -> ContractConfig:
        """The settings as stored (:meth:`to_json`)."""
        def metadata(text: str | None) -> Metadata | None:
            return None if text is None else Metadata.of_json(json.loads(text))

        def rule_set(text: str | None) -> RuleSet | None:
            return None if text is None else RuleSet.of_json(json.loads(text))

        return cls(group, metadata(default_metadata), metadata(override_metadata), rule_set(default_rule_set),
                   rule_set(override_rule_set))

    @staticmethod
    def innermost(scopes: Sequence[ContractConfig]) -> ContractConfig:
        """Each setting from the innermost scope that sets it (scopes innermost first)."""
        def first(name: str) -> Any:
            return next((getattr(s, name) for s in scopes if getattr(s, name) is not None), None)

        return ContractConfig(first("compatibility_group"), first("default_metadata"), first("override_metadata"),
                              first("default_rule_set"), first("override_rule_set"))


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def contract_key(contract: Contract) -> str:
    """The contract's part of a schema's identity ("" for none): canonical JSON, so that the same
    metadata and rules written in another order are the same schema. Rule order is kept: it is
    the order clients run them in."""
    if not contract:
        return ""
    return _canonical({
        "metadata": contract.metadata.to_json() if contract.metadata else None,
        "ruleSet": contract.rule_set.to_json() if contract.rule_set else None,
    })


def contract_of_key(key: str) -> Contract:
    """The contract :func:`contract_key` wrote."""
    if not key:
        return Contract()
    data = json.loads(key)
    metadata = Metadata.of_json(data["metadata"]) if data.get("metadata") else None
    rule_set = RuleSet.of_json(data["ruleSet"]) if data.get("ruleSet") else None
    return Contract(metadata, rule_set)


def merge_metadata(old: Metadata | None, new: Metadata | None) -> Metadata | None:
    """Confluent's ``Metadata.mergeMetadata``: ``new``'s tags, properties and sensitive names
    over ``old``'s, key by key."""
    if old is None:
        return new
    if new is None:
        return old
    return Metadata({**old.tags, **new.tags}, {**old.properties, **new.properties},
                    tuple(sorted(set(old.sensitive) | set(new.sensitive))))


def _merge_rules(old: tuple[Rule, ...], new: tuple[Rule, ...]) -> tuple[Rule, ...]:
    if not old:
        return new
    if not new:
        return old
    names = {r.name for r in new}
    return tuple(r for r in old if r.name not in names) + new


def merge_rule_sets(old: RuleSet | None, new: RuleSet | None) -> RuleSet | None:
    """Confluent's ``RuleSet.mergeRuleSets``: per list, ``old``'s rules not named in ``new``,
    then ``new``'s."""
    if old is None:
        return new
    if new is None:
        return old
    return RuleSet(_merge_rules(old.migration_rules, new.migration_rules),
                   _merge_rules(old.domain_rules, new.domain_rules),
                   _merge_rules(old.encoding_rules, new.encoding_rules))


def merged(config: ContractConfig, requested: Contract, previous: Contract | None) -> Contract:
    """The contract a registration gets: ``merge(merge(default, specific), override)`` for the
    metadata and for the rule set, where ``specific`` is the request's own, or, when the request
    gives none, the subject's latest version's (``previous``)."""
    specific_metadata = requested.metadata if requested.metadata is not None else (
        previous.metadata if previous is not None else None)
    specific_rules = requested.rule_set if requested.rule_set is not None else (
        previous.rule_set if previous is not None else None)
    metadata = merge_metadata(merge_metadata(config.default_metadata, specific_metadata), config.override_metadata)
    rule_set = merge_rule_sets(merge_rule_sets(config.default_rule_set, specific_rules), config.override_rule_set)
    return Contract(metadata or None, rule_set or None)


#: No contract, and no contract settings (defaults of the objects that hold them).
NO_CONTRACT = Contract()
NO_SETTINGS = ContractConfig()
