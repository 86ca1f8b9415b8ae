"""The Confluent API's domain: subjects and their contexts, versions, references, levels, modes.

A subject is a group: ``:.ctx:orders-value`` is group ``orders-value`` in namespace ``ctx``, and a
subject without a context is a group of the default namespace (""). Versions are the group's
versions, numbered from 1 by their order in the group (docs/confluent-api.md says how).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from registry.confluent.contracts import Contract, ContractConfig
from registry.confluent.errors import InvalidSubject
from registry.ids import GroupName, Namespace
from registry.model import Compatibility

#: Confluent's ``schemaType`` for each registry format (an absent schemaType means AVRO).
SCHEMA_TYPES = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "Json"}
#: The registry format's Confluent name.
TYPE_OF_FORMAT = {fmt: kind for kind, fmt in SCHEMA_TYPES.items()}

#: Confluent compatibility levels and the registry policy each one is.
LEVELS = {
    "BACKWARD": "Backward",
    "BACKWARD_TRANSITIVE": "BackwardTransitive",
    "FORWARD": "Forward",
    "FORWARD_TRANSITIVE": "ForwardTransitive",
    "FULL": "Full",
    "FULL_TRANSITIVE": "FullTransitive",
    "NONE": "AllowAny",
}
_LEVEL_OF_POLICY = {policy: level for level, policy in LEVELS.items()}
#: The level of a registry without any configuration.
DEFAULT_LEVEL = "BACKWARD"
#: Group property marking a group whose policy no one set: the Confluent API created it by registering a
#: schema, or removed the subject's level (DELETE /config/{subject}), so its policy is the one it inherited.
#: Every other group's policy was set (through the Pravega API, or by a table's creator): that subject's
#: configured level, whether or not it equals the inherited one.
INHERITED_POLICY = "streamcat.confluent.inheritedPolicy"

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
DEFAULT_MODE = "READWRITE"

#: Context names are namespace names.
_CONTEXT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}$")
#: ``subjectPrefix`` that lists every context.
ALL_CONTEXTS = ":*:"
#: Subject names are group names, which the database keeps up to this length.
MAX_SUBJECT = 255


def policy_of(level: str) -> Compatibility:
    """The registry policy of a Confluent level (one of :data:`LEVELS`)."""
    return Compatibility.of(LEVELS[level])


def level_of(policy: Compatibility) -> str:
    """The Confluent level of a registry policy. Policies Confluent has no level for show as the
    level that checks the same directions against every version (DenyAll: FULL_TRANSITIVE);
    registrations are still checked by the policy itself."""
    simple = _LEVEL_OF_POLICY.get(policy.policy)
    if simple is not None:
        return simple
    if policy.deny_all:
        return "FULL_TRANSITIVE"
    backward, forward = policy.backward is not None, policy.forward is not None
    if backward and forward:
        return "FULL_TRANSITIVE"
    if forward:
        return "FORWARD_TRANSITIVE"
    return "BACKWARD_TRANSITIVE" if backward else "NONE"


def same_policy(a: Compatibility, b: Compatibility) -> bool:
    """Whether two policies are the same rules (whatever their names)."""
    return (a.policy, a.backward, a.forward) == (b.policy, b.backward, b.forward)


@dataclass(frozen=True)
class Subject:
    """A subject: a group name in the namespace of its context."""

    namespace: Namespace
    name: GroupName

    @property
    def qualified(self) -> str:
        """The name the Confluent API shows: ``:.ctx:name``, or just ``name`` in the default context."""
        return f":.{self.namespace}:{self.name}" if self.namespace else str(self.name)

    @classmethod
    def parse(cls, text: str, *, context_only: bool = False) -> Subject:
        """The subject a Confluent subject name stands for (``:.ctx:name``, ``:.:name``, ``name``).

        ``context_only``: the name may be a context alone (``:.ctx:``), as in ``/config/:.ctx:``;
        the subject's name is then empty. InvalidSubject if the name is not a valid one.
        """
        namespace = ""
        name = text
        if text.startswith(":."):
            end = text.find(":", 2)
            if end < 0:
                raise InvalidSubject(f"invalid subject {text!r}: a context is written :.context:subject")
            namespace, name = text[2:end], text[end + 1 :]
            if namespace and not _CONTEXT.fullmatch(namespace):
                raise InvalidSubject(
                    f"invalid context {namespace!r}: use letters, digits, '_', '-' and '.', at most 255"
                )
        if not name and not context_only:
            raise InvalidSubject(f"invalid subject {text!r}: the subject name is empty")
        if len(name) > MAX_SUBJECT:
            raise InvalidSubject(f"invalid subject: names are at most {MAX_SUBJECT} characters")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
            raise InvalidSubject(f"invalid subject {text!r}: control characters are not allowed")
        return cls(Namespace(namespace), GroupName(name))


def reference_subject(text: str, context: Namespace) -> Subject:
    """The subject a reference names, seen from a schema registered in ``context``: a subject
    without a context of its own is in ``context``."""
    named = Subject.parse(text)
    return named if text.startswith(":.") else Subject(context, named.name)


def relative_name(subject: Subject, context: Namespace) -> str:
    """How a schema in ``context`` names ``subject`` in its references: without a context when
    it is the same one (so one reference has one spelling, and one schema one id)."""
    return str(subject.name) if subject.namespace == context else f":.{subject.namespace}:{subject.name}"


def shown_name(written: str, context: Namespace) -> str:
    """A reference's subject as answered for a schema registered in ``context``: with its context,
    so that clients, which resolve references themselves, find it."""
    if written.startswith(":.") or not context:
        return written
    return f":.{context}:{written}"


@dataclass(frozen=True)
class SchemaReference:
    """A reference as the Confluent API writes it: the name the schema uses, and the subject
    version it names."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class StoredSchema:
    """A schema as stored: its global id, registry format and type, the self-contained data, and,
    for a schema with references, the text as registered and the references."""

    id: int
    format: str
    type_name: str
    data: bytes
    registered: str | None = None
    references: list[SchemaReference] = field(default_factory=list)
    #: its data contract (part of what the schema is: another contract is another schema)
    contract: Contract = field(default_factory=Contract)

    @property
    def schema_type(self) -> str:
        """The Confluent ``schemaType``."""
        return TYPE_OF_FORMAT[self.format]


@dataclass(frozen=True)
class VersionEntry:
    """A version of a subject without its schema: its number, where it is stored, whether deleted."""

    number: int
    row_id: int
    schema_id: int
    deleted: bool


@dataclass(frozen=True)
class SubjectVersion:
    """A version of a subject with its schema."""

    subject: Subject
    number: int
    schema: StoredSchema
    deleted: bool


@dataclass(frozen=True)
class ConfigValues:
    """What one configuration scope (a subject, a context, the registry) sets; None: not set."""

    compatibility: str | None = None
    normalize: bool | None = None
    mode: str | None = None
    contracts: ContractConfig = field(default_factory=ContractConfig)


@dataclass(frozen=True)
class Configs:
    """The configuration scopes that apply to a subject, innermost first: the subject, its
    context, the registry (the default context)."""

    subject: ConfigValues
    context: ConfigValues
    registry: ConfigValues

    def inherited_level(self, *, include_subject: bool = False) -> str:
        """The level the subject gets from its context or the registry (its own too, if asked)."""
        scopes = (self.subject, self.context, self.registry) if include_subject else (self.context, self.registry)
        return next((s.compatibility for s in scopes if s.compatibility), DEFAULT_LEVEL)

    def normalize(self) -> bool | None:
        """Whether schemas registered under the subject are normalized by default (None: no scope says)."""
        scopes = (self.subject, self.context, self.registry)
        return next((s.normalize for s in scopes if s.normalize is not None), None)

    def contracts(self) -> ContractConfig:
        """The contract settings that apply: each from the innermost scope that sets it."""
        return ContractConfig.innermost([self.subject.contracts, self.context.contracts, self.registry.contracts])

    def mode(self) -> str:
        """The mode the subject is in: READONLY_OVERRIDE of the registry or context wins; otherwise
        the innermost mode set, READWRITE when none is."""
        for scope in (self.registry, self.context):
            if scope.mode == "READONLY_OVERRIDE":
                return "READONLY_OVERRIDE"
        return next((s.mode for s in (self.subject, self.context, self.registry) if s.mode), DEFAULT_MODE)
