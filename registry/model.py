"""The registry's domain objects and their Pravega JSON shapes.

Request bodies are validated against the OpenAPI document before they reach
``from_json``, so these constructors only convert; they do not re-validate shapes.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from registry.errors import BadRequest
from registry.ids import CodecName, EncodingId, SchemaId, TypeName, Version

#: Pravega's name for "no codec": events are stored as serialized.
NO_CODEC = CodecName("")


@dataclass(frozen=True)
class SerializationFormat:
    """A format name, plus the full type name that tells Custom formats apart."""

    name: str
    full_type_name: str = ""

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SerializationFormat:
        """From ``{"serializationFormat": "Avro", "fullTypeName": ...}``."""
        name = body["serializationFormat"]
        full = body.get("fullTypeName") or ""
        if name == "Custom" and not full:
            raise BadRequest("serializationFormat Custom needs a fullTypeName")
        return cls(name, full if name == "Custom" else "")

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        out: dict[str, Any] = {"serializationFormat": self.name}
        if self.full_type_name:
            out["fullTypeName"] = self.full_type_name
        return out


@dataclass(frozen=True)
class SchemaInfo:
    """A schema as clients send and receive it: type, format, bytes, properties."""

    type: TypeName
    format: SerializationFormat
    data: bytes
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SchemaInfo:
        """From Pravega's SchemaInfo JSON; ``schemaData`` is base64."""
        try:
            data = base64.b64decode(body["schemaData"], validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest("schemaData is not valid base64") from None
        return cls(
            type=TypeName(body["type"]),
            format=SerializationFormat.from_json(body["serializationFormat"]),
            data=data,
            properties=dict(body.get("properties") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        return {
            "type": self.type,
            "serializationFormat": self.format.to_json(),
            "schemaData": base64.b64encode(self.data).decode("ascii"),
            "properties": dict(self.properties),
        }


@dataclass(frozen=True)
class VersionInfo:
    """A schema's place in a group: its type, version number and (global) schema id."""

    type: TypeName
    version: Version
    id: SchemaId

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> VersionInfo:
        """From ``{"type": ..., "version": ..., "id": ...}``."""
        return cls(TypeName(body["type"]), Version(body["version"]), SchemaId(body["id"]))

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        return {"type": self.type, "version": self.version, "id": self.id}


@dataclass(frozen=True)
class SchemaWithVersion:
    """A schema together with where it sits in its group."""

    schema: SchemaInfo
    version: VersionInfo

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        return {"schemaInfo": self.schema.to_json(), "versionInfo": self.version.to_json()}


@dataclass(frozen=True)
class CodecType:
    """A codec (compression or encryption of payloads) a group's writers may use."""

    name: CodecName
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> CodecType:
        """From ``{"name": ..., "properties": {...}}``."""
        return cls(CodecName(body["name"]), dict(body.get("properties") or {}))

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        return {"name": self.name, "properties": dict(self.properties)}


@dataclass(frozen=True)
class EncodingInfo:
    """What an encoding id stands for: a schema version and a codec."""

    id: EncodingId
    schema: SchemaInfo
    version: VersionInfo
    codec: CodecType

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form (without the id, which is in the URL)."""
        return {
            "schemaInfo": self.schema.to_json(),
            "versionInfo": self.version.to_json(),
            "codecType": self.codec.to_json(),
        }


#: Policies that name a fixed rule; "Advanced" spells its rules out.
SIMPLE_POLICIES = (
    "AllowAny",
    "DenyAll",
    "Backward",
    "Forward",
    "Full",
    "BackwardTransitive",
    "ForwardTransitive",
    "FullTransitive",
)
POLICIES = (*SIMPLE_POLICIES, "Advanced")


@dataclass(frozen=True)
class Rule:
    """Which earlier versions one direction (backward or forward) is checked against.

    ``scope`` is ``latest`` (the newest version), ``all`` (every version) or ``till``
    (every version from ``till`` on, as Pravega's BackwardTill / ForwardTill).
    """

    scope: str
    till: VersionInfo | None = None


_SIMPLE_RULES: dict[str, tuple[Rule | None, Rule | None]] = {
    "AllowAny": (None, None),
    "DenyAll": (None, None),
    "Backward": (Rule("latest"), None),
    "Forward": (None, Rule("latest")),
    "Full": (Rule("latest"), Rule("latest")),
    "BackwardTransitive": (Rule("all"), None),
    "ForwardTransitive": (None, Rule("all")),
    "FullTransitive": (Rule("all"), Rule("all")),
}
_RULE_NAMES = {"latest": "", "all": "Transitive", "till": "Till"}


@dataclass(frozen=True)
class Compatibility:
    """A group's compatibility policy, as the rules it implies for each direction."""

    policy: str
    backward: Rule | None = None
    forward: Rule | None = None

    @property
    def deny_all(self) -> bool:
        """Whether no schema may be added after the first of its type."""
        return self.policy == "DenyAll"

    @classmethod
    def of(cls, policy: str) -> Compatibility:
        """A simple (non-Advanced) policy by name."""
        backward, forward = _SIMPLE_RULES[policy]
        return cls(policy, backward, forward)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Compatibility:
        """From Pravega's Compatibility JSON, including the Advanced form."""
        policy = body["policy"]
        if policy != "Advanced":
            return cls.of(policy)
        advanced = body.get("advanced") or {}
        backward = _rule_from_json(advanced.get("backwardPolicy"), "backwardPolicy", "Backward")
        forward = _rule_from_json(advanced.get("forwardPolicy"), "forwardPolicy", "Forward")
        if backward is None and forward is None:
            raise BadRequest("compatibility policy Advanced needs advanced.backwardPolicy or advanced.forwardPolicy")
        return cls("Advanced", backward, forward)

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        if self.policy != "Advanced":
            return {"policy": self.policy}
        advanced: dict[str, Any] = {}
        if self.backward:
            advanced["backwardPolicy"] = {"backwardPolicy": _rule_to_json(self.backward, "Backward")}
        if self.forward:
            advanced["forwardPolicy"] = {"forwardPolicy": _rule_to_json(self.forward, "Forward")}
        return {"policy": "Advanced", "advanced": advanced}


def _rule_from_json(wrapper: dict[str, Any] | None, key: str, direction: str) -> Rule | None:
    if not wrapper:
        return None
    inner = wrapper[key]
    name = inner["name"]
    for scope, suffix in _RULE_NAMES.items():
        if name == direction + suffix:
            if scope != "till":
                return Rule(scope)
            if not inner.get("versionInfo"):
                raise BadRequest(f"advanced.{key}.{key}: {name} needs a versionInfo")
            return Rule(scope, VersionInfo.from_json(inner["versionInfo"]))
    expected = ", ".join(direction + s for s in _RULE_NAMES.values())
    raise BadRequest(f"advanced.{key}.{key}.name must be one of {expected}, not {name!r}")


def _rule_to_json(rule: Rule, direction: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": direction + _RULE_NAMES[rule.scope]}
    if rule.till is not None:
        out["versionInfo"] = rule.till.to_json()
    return out


@dataclass(frozen=True)
class GroupProperties:
    """A group's settings: accepted format, compatibility policy, multiple types, properties."""

    format: SerializationFormat
    compatibility: Compatibility
    allow_multiple_types: bool = False
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> GroupProperties:
        """From Pravega's GroupProperties JSON."""
        return cls(
            format=SerializationFormat.from_json(body["serializationFormat"]),
            compatibility=Compatibility.from_json(body["compatibility"]),
            allow_multiple_types=bool(body.get("allowMultipleTypes", False)),
            properties=dict(body.get("properties") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form."""
        return {
            "serializationFormat": self.format.to_json(),
            "compatibility": self.compatibility.to_json(),
            "allowMultipleTypes": self.allow_multiple_types,
            "properties": dict(self.properties),
        }


@dataclass(frozen=True)
class HistoryRecord:
    """One schema added to a group: when, under which policy, and what it says."""

    schema: SchemaInfo
    version: VersionInfo
    compatibility: Compatibility
    timestamp: int
    schema_string: str | None
    deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        """The Pravega JSON form (plus ``deleted``, which Pravega leaves implicit)."""
        out: dict[str, Any] = {
            "schemaInfo": self.schema.to_json(),
            "versionInfo": self.version.to_json(),
            "compatibility": self.compatibility.to_json(),
            "timestamp": self.timestamp,
            "deleted": self.deleted,
        }
        if self.schema_string is not None:
            out["schemaString"] = self.schema_string
        return out
