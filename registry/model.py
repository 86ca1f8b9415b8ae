"""The registry's domain objects.

Their JSON shapes (Pravega's) are the wire models of ``registry.api.models``, which convert to
and from these objects; nothing here knows JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.ids import CodecName, EncodingId, SchemaId, TypeName, Version

#: Group property naming what owns the group (a catalog table, say): such a group is deleted by
#: its owner only, never through the registry API, which would leave the owner without a schema.
OWNER_PROPERTY = "streamcat.owner"

#: Pravega's name for "no codec": events are stored as serialized.
NO_CODEC = CodecName("")


@dataclass(frozen=True)
class SerializationFormat:
    """A format name, plus the full type name that tells Custom formats apart."""

    name: str
    full_type_name: str = ""


@dataclass(frozen=True)
class SchemaInfo:
    """A schema as clients send and receive it: type, format, bytes, properties."""

    type: TypeName
    format: SerializationFormat
    data: bytes
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VersionInfo:
    """A schema's place in a group: its type, version number and (global) schema id."""

    type: TypeName
    version: Version
    id: SchemaId


@dataclass(frozen=True)
class SchemaWithVersion:
    """A schema together with where it sits in its group."""

    schema: SchemaInfo
    version: VersionInfo


@dataclass(frozen=True)
class CodecType:
    """A codec (compression or encryption of payloads) a group's writers may use."""

    name: CodecName
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EncodingInfo:
    """What an encoding id stands for: a schema version and a codec."""

    id: EncodingId
    schema: SchemaInfo
    version: VersionInfo
    codec: CodecType


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


@dataclass(frozen=True)
class GroupProperties:
    """A group's settings: accepted format, compatibility policy, multiple types, properties."""

    format: SerializationFormat
    compatibility: Compatibility
    allow_multiple_types: bool = False
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HistoryRecord:
    """One schema added to a group: when, under which policy, and what it says."""

    schema: SchemaInfo
    version: VersionInfo
    compatibility: Compatibility
    timestamp: int
    schema_string: str | None
    deleted: bool = False
