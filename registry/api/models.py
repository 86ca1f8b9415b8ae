"""The registry's wire models: every JSON body of the Pravega-style REST API, declared once.

Views validate request bodies with them, serialize responses with them, and the OpenAPI
document is generated from them; ``registry.client`` parses answers with them. Conversion to
and from the domain objects (``registry.model``) is here too: ``Model.of(domain)`` and
``model.to_domain()``; ``of`` does not validate (the domain objects are the server's own, and
the clients check what they send with ``registry.api.validation``). No Flask, werkzeug or
SQLAlchemy import, for the client's sake.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    model_validator,
)

from registry import ids
from registry import model as domain
from registry.api.wire import (
    FromQueryText,
    Int32,
    Name,
    NullMeansDefault,
    Query,
    StringMap,
    Wire,
    omitted,
)
from registry.errors import StreamcatError
from registry.formats import FORMAT_NAMES
from registry.formats.base import Incompatibility
from registry.ids import CodecName, SchemaId, TypeName, Version
from registry.pagination import TOKEN_PATTERN, check_token

if TYPE_CHECKING:
    FormatName = str
    PolicyName = str
else:
    # Built from the tuples the rest of the code uses, so the published enums cannot drift.
    FormatName = Literal[FORMAT_NAMES]
    PolicyName = Literal[domain.POLICIES]

#: Canonical (RFC 4648, padded) base64; the decoder checks exactly this, so what the
#: document publishes is what the server accepts.
_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_BASE64_RE = re.compile(_BASE64.replace("$", r"\Z"))


def _from_base64(value: Any) -> Any:
    if isinstance(value, str):
        if not _BASE64_RE.match(value):
            raise ValueError("schemaData is not valid base64")
        return base64.b64decode(value)
    return value


Base64Bytes = Annotated[
    bytes,
    BeforeValidator(_from_base64),
    PlainSerializer(lambda data: base64.b64encode(data).decode("ascii"), return_type=str),
    WithJsonSchema(
        {"type": "string", "contentEncoding": "base64", "pattern": _BASE64, "description": "base64 of the bytes"}
    ),
]


class SerializationFormat(Wire):
    """A format name; Custom formats add the full type name that tells them apart."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"serializationFormat": {"const": "Custom"}}},
            "then": {"required": ["fullTypeName"], "properties": {"fullTypeName": {"type": "string", "minLength": 1}}},
        }
    )

    serialization_format: FormatName
    full_type_name: str | None = omitted(max_length=255)

    @model_validator(mode="after")
    def _custom_needs_a_name(self) -> SerializationFormat:
        if self.serialization_format == "Custom" and not self.full_type_name:
            raise ValueError("serializationFormat Custom needs a fullTypeName")
        return self

    @classmethod
    def of(cls, fmt: domain.SerializationFormat) -> SerializationFormat:
        """The wire form of ``fmt`` (fullTypeName only when there is one)."""
        return cls.model_construct(serialization_format=fmt.name, full_type_name=fmt.full_type_name or None)

    def to_domain(self) -> domain.SerializationFormat:
        """The domain object; a fullTypeName sent with a non-Custom format is ignored."""
        name = self.serialization_format
        return domain.SerializationFormat(name, (self.full_type_name or "") if name == "Custom" else "")


class VersionInfo(Wire):
    """A schema's place in a group: type, version number and (global) schema id, all 32-bit."""

    type: str = Field(max_length=1024)
    version: Int32
    id: Int32

    @classmethod
    def of(cls, version: domain.VersionInfo) -> VersionInfo:
        """The wire form of ``version``."""
        return cls.model_construct(type=version.type, version=version.version, id=version.id)

    def to_domain(self) -> domain.VersionInfo:
        """The domain object."""
        return domain.VersionInfo(TypeName(self.type), Version(self.version), SchemaId(self.id))


class SchemaInfo(Wire):
    """A schema as clients send and receive it: type, format, bytes (base64), properties."""

    type: str = Field(max_length=1024)
    serialization_format: SerializationFormat
    schema_data: Base64Bytes
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)

    @classmethod
    def of(cls, info: domain.SchemaInfo) -> SchemaInfo:
        """The wire form of ``info``."""
        return cls.model_construct(
            type=info.type,
            serialization_format=SerializationFormat.of(info.format),
            schema_data=info.data,
            properties=dict(info.properties),
        )

    def to_domain(self) -> domain.SchemaInfo:
        """The domain object."""
        return domain.SchemaInfo(
            TypeName(self.type), self.serialization_format.to_domain(), self.schema_data, dict(self.properties)
        )


class SchemaWithVersion(Wire):
    """A schema together with where it sits in its group."""

    schema_info: SchemaInfo
    version_info: VersionInfo

    @classmethod
    def of(cls, found: domain.SchemaWithVersion) -> SchemaWithVersion:
        """The wire form of ``found``."""
        return cls.model_construct(schema_info=SchemaInfo.of(found.schema), version_info=VersionInfo.of(found.version))

    def to_domain(self) -> domain.SchemaWithVersion:
        """The domain object."""
        return domain.SchemaWithVersion(self.schema_info.to_domain(), self.version_info.to_domain())


class CodecType(Wire):
    """A codec (compression or encryption of payloads) a group's writers may use."""

    name: str = Field(max_length=255)
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)

    @classmethod
    def of(cls, codec: domain.CodecType) -> CodecType:
        """The wire form of ``codec``."""
        return cls.model_construct(name=codec.name, properties=dict(codec.properties))

    def to_domain(self) -> domain.CodecType:
        """The domain object."""
        return domain.CodecType(CodecName(self.name), dict(self.properties))


class EncodingInfo(Wire):
    """What an encoding id stands for (the id itself is in the URL)."""

    schema_info: SchemaInfo
    version_info: VersionInfo
    codec_type: CodecType

    @classmethod
    def of(cls, info: domain.EncodingInfo) -> EncodingInfo:
        """The wire form of ``info``."""
        return cls.model_construct(
            schema_info=SchemaInfo.of(info.schema),
            version_info=VersionInfo.of(info.version),
            codec_type=CodecType.of(info.codec),
        )

    def to_domain(self, encoding: ids.EncodingId) -> domain.EncodingInfo:
        """The domain object, given the id the URL named."""
        return domain.EncodingInfo(
            encoding, self.schema_info.to_domain(), self.version_info.to_domain(), self.codec_type.to_domain()
        )


# -- compatibility ------------------------------------------------------------------------------------

#: Suffix of a rule's name (``Backward`` + suffix) -> the domain Rule's scope.
_RULE_SCOPES = {"": "latest", "Transitive": "all", "Till": "till"}


class _Rule(Wire):
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"name": {"pattern": "Till$"}}},
            "then": {"required": ["versionInfo"], "properties": {"versionInfo": {"type": "object"}}},
        }
    )

    #: Backward or Forward: the rule's names are this, plus a suffix of _RULE_SCOPES.
    direction: ClassVar[str]

    name: str
    version_info: VersionInfo | None = omitted()

    @model_validator(mode="after")
    def _till_needs_a_version(self) -> _Rule:
        if self.name.endswith("Till") and self.version_info is None:
            raise ValueError(f"{self.name} needs a versionInfo")
        return self

    @classmethod
    def of(cls, rule: domain.Rule) -> Self:
        """The wire form of ``rule`` in this direction."""
        suffix = next(s for s, scope in _RULE_SCOPES.items() if scope == rule.scope)
        till = VersionInfo.of(rule.till) if rule.till is not None else None
        return cls.model_construct(name=cls.direction + suffix, version_info=till)

    def to_domain(self) -> domain.Rule:
        """The domain rule."""
        scope = _RULE_SCOPES[self.name.removeprefix(self.direction)]
        return domain.Rule(scope, self.version_info.to_domain() if self.version_info else None)


class BackwardRule(_Rule):
    """Which earlier versions a new schema must read: the latest, all, or all from a version on."""

    direction = "Backward"
    name: Literal["Backward", "BackwardTransitive", "BackwardTill"]


class ForwardRule(_Rule):
    """Which earlier versions must read a new schema: the latest, all, or all from a version on."""

    direction = "Forward"
    name: Literal["Forward", "ForwardTransitive", "ForwardTill"]


class BackwardPolicy(Wire):
    """Pravega's wrapper around the backward rule of an Advanced policy."""

    backward_policy: BackwardRule


class ForwardPolicy(Wire):
    """Pravega's wrapper around the forward rule of an Advanced policy."""

    forward_policy: ForwardRule


class BackwardAndForward(Wire):
    """The rules of an Advanced policy; at least one of the two."""

    backward_policy: BackwardPolicy | None = omitted()
    forward_policy: ForwardPolicy | None = omitted()


def _present(member: str) -> dict[str, Any]:
    return {"required": [member], "properties": {member: {"type": "object"}}}


class Compatibility(Wire):
    """A compatibility policy: a named one, or Advanced with its rules spelled out."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"policy": {"const": "Advanced"}}},
            "then": {
                "required": ["advanced"],
                "properties": {
                    "advanced": {"type": "object", "anyOf": [_present("backwardPolicy"), _present("forwardPolicy")]}
                },
            },
        }
    )

    policy: PolicyName
    advanced: BackwardAndForward | None = omitted()

    @model_validator(mode="after")
    def _advanced_needs_rules(self) -> Compatibility:
        rules = self.advanced
        empty = rules is None or (rules.backward_policy is None and rules.forward_policy is None)
        if self.policy == "Advanced" and empty:
            raise ValueError("compatibility policy Advanced needs advanced.backwardPolicy or advanced.forwardPolicy")
        return self

    @classmethod
    def of(cls, compatibility: domain.Compatibility) -> Compatibility:
        """The wire form (``advanced`` only for Advanced policies)."""
        if compatibility.policy != "Advanced":
            return cls.model_construct(policy=compatibility.policy)
        backward, forward = compatibility.backward, compatibility.forward
        rules = BackwardAndForward.model_construct(
            backward_policy=_backward(backward),
            forward_policy=_forward(forward),
        )
        return cls.model_construct(policy="Advanced", advanced=rules)

    def to_domain(self) -> domain.Compatibility:
        """The domain policy; ``advanced`` sent with a named policy is ignored."""
        if self.policy != "Advanced" or self.advanced is None:
            return domain.Compatibility.of(self.policy)
        backward, forward = self.advanced.backward_policy, self.advanced.forward_policy
        return domain.Compatibility(
            "Advanced",
            backward.backward_policy.to_domain() if backward else None,
            forward.forward_policy.to_domain() if forward else None,
        )


def _backward(rule: domain.Rule | None) -> BackwardPolicy | None:
    return BackwardPolicy.model_construct(backward_policy=BackwardRule.of(rule)) if rule else None


def _forward(rule: domain.Rule | None) -> ForwardPolicy | None:
    return ForwardPolicy.model_construct(forward_policy=ForwardRule.of(rule)) if rule else None


class GroupProperties(Wire):
    """A group's settings: accepted format, compatibility policy, multiple types, properties."""

    serialization_format: SerializationFormat
    compatibility: Compatibility
    allow_multiple_types: Annotated[bool, NullMeansDefault] = False
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)

    @classmethod
    def of(cls, properties: domain.GroupProperties) -> GroupProperties:
        """The wire form of ``properties``."""
        return cls.model_construct(
            serialization_format=SerializationFormat.of(properties.format),
            compatibility=Compatibility.of(properties.compatibility),
            allow_multiple_types=properties.allow_multiple_types,
            properties=dict(properties.properties),
        )

    def to_domain(self) -> domain.GroupProperties:
        """The domain object."""
        return domain.GroupProperties(
            self.serialization_format.to_domain(),
            self.compatibility.to_domain(),
            self.allow_multiple_types,
            dict(self.properties),
        )


# -- requests ----------------------------------------------------------------------------------------


class CreateGroupRequest(Wire):
    """``POST /v1/groups``."""

    group_name: Name
    group_properties: GroupProperties


class UpdateCompatibilityRequest(Wire):
    """``PUT .../compatibility``: the new policy, compare-and-set when the previous one is given."""

    compatibility: Compatibility
    previous_compatibility: Compatibility | None = None


class ValidateRequest(Wire):
    """``POST .../versions/validate``: a schema, and a policy other than the group's if given."""

    schema_info: SchemaInfo
    compatibility: Compatibility | None = None


class GetEncodingIdRequest(Wire):
    """``PUT .../encodings``: the version and codec whose encoding id is wanted."""

    version_info: VersionInfo
    codec_type: str


# -- responses ---------------------------------------------------------------------------------------


class Reason(Wire):
    """Why a schema is refused: where in the schema (``$.address.zip``) and what broke."""

    path: str
    message: str

    @classmethod
    def of(cls, reason: Incompatibility) -> Reason:
        """The wire form of ``reason``."""
        return cls.model_construct(path=reason.path, message=reason.message)

    def to_domain(self) -> Incompatibility:
        """The domain object."""
        return Incompatibility(self.path, self.message)


class ListGroupsResponse(Wire):
    """A page of groups by name, and the token of the next page."""

    groups: dict[str, GroupProperties]
    continuation_token: str


class SchemaVersionsList(Wire):
    """Schemas with their versions."""

    schemas: list[SchemaWithVersion]


class EncodingId(Wire):
    """The encoding id of a (version, codec) pair."""

    encoding_id: Int32


class CodecTypes(Wire):
    """The codec types of a group."""

    codec_types: list[CodecType]


class Valid(Wire):
    """Whether a schema would be accepted, and if not, why."""

    valid: bool
    reasons: list[Reason]


class CanRead(Wire):
    """Whether a schema can read all the group's data, and if not, why."""

    compatible: bool
    reasons: list[Reason]


class GroupHistoryRecord(Wire):
    """One schema added to a group: when, under which policy, whether since deleted, and
    ``schemaString`` (the schema as text) when the format can print it."""

    schema_info: SchemaInfo
    version_info: VersionInfo
    compatibility: Compatibility
    timestamp: int
    deleted: bool
    schema_string: str | None = omitted()

    @classmethod
    def of(cls, record: domain.HistoryRecord) -> GroupHistoryRecord:
        """The wire form of ``record``."""
        return cls.model_construct(
            schema_info=SchemaInfo.of(record.schema),
            version_info=VersionInfo.of(record.version),
            compatibility=Compatibility.of(record.compatibility),
            timestamp=record.timestamp,
            deleted=record.deleted,
            schema_string=record.schema_string,
        )


class GroupHistory(Wire):
    """Every schema added to a group, in order."""

    history: list[GroupHistoryRecord]


class AddedTo(Wire):
    """The groups holding a schema, with its version in each."""

    groups: dict[str, VersionInfo]


class ErrorDetail(Wire):
    """What went wrong: a stable code, a message naming the problem, and for refused schemas
    the reasons by field path."""

    code: str
    message: str
    reasons: list[Reason] | None = omitted()


class Error(Wire):
    """The body of every error response."""

    error: ErrorDetail

    @classmethod
    def of(cls, error: StreamcatError) -> Error:
        """The body for a domain error (with its reasons, when it has any)."""
        reasons = getattr(error, "reasons", None)
        listed = [Reason.of(r) for r in reasons] if reasons is not None else None
        detail = ErrorDetail.model_construct(code=error.code, message=error.message, reasons=listed)
        return cls.model_construct(error=detail)

    @classmethod
    def make(cls, code: str, message: str) -> Error:
        """The body for an error that is not a domain error (an HTTP one, or an unexpected one)."""
        return cls(error=ErrorDetail(code=code, message=message))


class Status(Wire):
    """The answer of the liveness endpoints."""

    status: str


class Readiness(Wire):
    """The answer of the readiness probe: ``ok``, or ``unavailable`` with the reason and,
    when the database is behind, the revisions it is at and should be at."""

    model_config = ConfigDict(extra="allow")

    status: Literal["ok", "unavailable"]
    reason: str | None = omitted()
    revision: list[str] | None = omitted()
    current: list[str] | None = omitted()
    head: list[str] | None = omitted()


class OpenApiDocument(Wire):
    """An OpenAPI 3.1 document (this API's own)."""

    model_config = ConfigDict(extra="allow")

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
    components: dict[str, Any]


# -- query strings -----------------------------------------------------------------------------------


class NamespaceQuery(Query):
    """The namespace a request works in (Pravega's ``?namespace=``); absent: the default one."""

    namespace: Name | None = None


ContinuationToken = Annotated[
    str, AfterValidator(check_token), WithJsonSchema({"type": "string", "pattern": TOKEN_PATTERN})
]


class PageQuery(Query):
    """A page of a listing: where to continue, and how many at most (the server's default when absent)."""

    continuation_token: ContinuationToken | None = None
    limit: Annotated[int, Field(ge=1, le=10_000), FromQueryText] | None = None


class ListGroupsQuery(PageQuery, NamespaceQuery):
    """A page of the namespace's groups."""


class TypeQuery(NamespaceQuery):
    """Restricts an answer to one schema type."""

    type: str | None = None


class FullTypeNameQuery(NamespaceQuery):
    """The full type name that completes a Custom format named in the path."""

    full_type_name: str | None = None
