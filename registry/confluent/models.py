"""The Confluent API's wire models: its JSON bodies and query strings, declared once.

Field names are Confluent's (camelCase, ``is_compatible`` and ``error_code`` as Confluent spells
them). Unknown request fields are ignored (newer clients send more) and nulls mean absent, as
Confluent's clients expect of a server; values are not coerced (``"1"`` is not a number). Responses
leave out what Confluent leaves out: ``schemaType`` for Avro, empty ``references``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, RootModel
from pydantic.alias_generators import to_camel

from registry.api.wire import Flag, FromQueryText, Query, omitted
from registry.confluent import model as domain
from registry.confluent.service import ConfigView, SchemaRequest

_INT32 = 2**31 - 1


class Body(BaseModel):
    """Base of the Confluent bodies: camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        frozen=True,
        # No coercion ("1" is not a number, 0 not a boolean): the server takes what it documents.
        strict=True,
        json_schema_serialization_defaults_required=True,
    )


def _not_null(default: Any) -> Any:
    """A validator making ``null`` mean ``default`` (Java clients send absent fields as null)."""
    return BeforeValidator(lambda value: default if value is None else value)


class SchemaReference(Body):
    """A schema reference: the name the schema uses for another subject's version."""

    name: str = Field(max_length=1024)
    subject: str = Field(max_length=600)
    version: int = Field(ge=-1, le=_INT32)

    @classmethod
    def of(cls, reference: domain.SchemaReference) -> SchemaReference:
        """The wire form of ``reference``."""
        return cls.model_construct(name=reference.name, subject=reference.subject, version=reference.version)

    def to_domain(self) -> domain.SchemaReference:
        """The domain object."""
        return domain.SchemaReference(self.name, self.subject, self.version)


class RegisterSchemaRequest(Body):
    """A schema to register, look up or test: its text, type and references. ``id`` and
    ``version`` register under a given id and version in IMPORT mode. ``metadata`` and
    ``ruleSet`` (data contracts) are refused unless empty."""

    text: str = Field(alias="schema", max_length=16 * 1024 * 1024)
    schema_type: Annotated[str, _not_null("AVRO")] = Field("AVRO", max_length=32)
    references: Annotated[list[SchemaReference], _not_null([])] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None
    id: int | None = Field(None, ge=-1, le=2**63 - 1)
    version: int | None = Field(None, ge=-1, le=_INT32)

    def to_domain(self) -> SchemaRequest:
        """The request as the service takes it."""
        return SchemaRequest(
            self.text, self.schema_type, tuple(r.to_domain() for r in self.references), self.id, self.version
        )


class RegisterSchemaResponse(Body):
    """The id of a registered schema."""

    id: int


class ConfluentSchema(Body):
    """A subject version: where it is, its id, and the schema."""

    subject: str
    version: int
    id: int
    schema_type: str | None = omitted()
    text: str = Field(alias="schema")
    references: list[SchemaReference] | None = omitted()

    @classmethod
    def of(cls, found: domain.SubjectVersion, text: str, references: list[domain.SchemaReference]) -> ConfluentSchema:
        """The wire form of ``found``, its schema shown as ``text`` with ``references``."""
        schema = found.schema
        return cls.model_construct(
            subject=found.subject.qualified,
            version=found.number,
            id=schema.id,
            schema_type=None if schema.schema_type == "AVRO" else schema.schema_type,
            text=text,
            references=[SchemaReference.of(r) for r in references] or None,
        )


class SchemaString(Body):
    """A schema by id; ``maxId`` (the highest id given out) when asked for."""

    text: str = Field(alias="schema")
    schema_type: str | None = omitted()
    references: list[SchemaReference] | None = omitted()
    max_id: int | None = omitted()

    @classmethod
    def of(
        cls, schema: domain.StoredSchema, text: str, references: list[domain.SchemaReference], max_id: int | None
    ) -> SchemaString:
        """The wire form of ``schema``, shown as ``text`` with ``references``."""
        return cls.model_construct(
            text=text,
            schema_type=None if schema.schema_type == "AVRO" else schema.schema_type,
            references=[SchemaReference.of(r) for r in references] or None,
            max_id=max_id,
        )


class RawSchema(RootModel[str]):
    """A schema as its own text: the body is the schema itself (Avro or JSON Schema JSON,
    ``.proto`` text), not a JSON string holding it."""

    def model_dump_json(self, *args: Any, **kwargs: Any) -> str:
        return self.root


class SubjectVersion(Body):
    """A subject and one of its version numbers."""

    subject: str
    version: int


class CompatibilityCheck(Body):
    """Whether a schema is compatible; with ``verbose=true``, the reasons it is not."""

    model_config = ConfigDict(alias_generator=None)

    is_compatible: bool
    messages: list[str] | None = omitted()


class ConfigRequest(Body):
    """A configuration to set: the compatibility level (``compatibility``, or
    ``compatibilityLevel`` as some clients send it) and ``normalize``. Data-contract settings
    (default or override metadata and rule sets, compatibility groups) are refused unless empty."""

    compatibility: str | None = Field(None, max_length=64)
    compatibility_level: str | None = Field(None, max_length=64)
    normalize: bool | None = None
    compatibility_group: str | None = None
    default_metadata: dict[str, Any] | None = None
    override_metadata: dict[str, Any] | None = None
    default_rule_set: dict[str, Any] | None = None
    override_rule_set: dict[str, Any] | None = None


class ConfigUpdate(Body):
    """The configuration just set."""

    compatibility: str | None = omitted()
    normalize: bool | None = omitted()

    @classmethod
    def of(cls, view: ConfigView) -> ConfigUpdate:
        """The wire form of ``view``."""
        return cls.model_construct(compatibility=view.level or None, normalize=view.normalize)


class ConfluentConfig(Body):
    """A configuration as ``GET /config`` answers it."""

    compatibility_level: str
    normalize: bool | None = omitted()

    @classmethod
    def of(cls, view: ConfigView) -> ConfluentConfig:
        """The wire form of ``view``."""
        return cls.model_construct(compatibility_level=view.level, normalize=view.normalize)


class ConfluentMode(Body):
    """A mode: READWRITE, READONLY, READONLY_OVERRIDE or IMPORT."""

    mode: str | None = Field(None, max_length=64)


class ConfluentError(Body):
    """The body of every Confluent API error."""

    model_config = ConfigDict(alias_generator=None)

    error_code: int
    message: str


class Strings(RootModel[list[str]]):
    """A list of names (subjects, contexts, schema types)."""


class Numbers(RootModel[list[int]]):
    """A list of version numbers or schema ids."""


class Number(RootModel[int]):
    """One version number."""


class Schemas(RootModel[list[ConfluentSchema]]):
    """Subject versions with their schemas."""


class SubjectVersions(RootModel[list[SubjectVersion]]):
    """Subject versions, without schemas."""


# -- query strings ------------------------------------------------------------------------------

Offset = Annotated[int, Field(ge=-_INT32, le=_INT32), FromQueryText]
Limit = Annotated[int, Field(ge=-_INT32, le=_INT32), FromQueryText]


class PageQuery(Query):
    """``offset`` and ``limit`` of a listing (no limit, or a negative one: the server's maximum)."""

    offset: Offset = 0
    limit: Limit | None = None


class DeletedQuery(Query):
    """Whether soft-deleted versions count."""

    deleted: Flag = False


class SubjectsQuery(PageQuery, DeletedQuery):
    """Subjects whose names start with ``subjectPrefix`` (``:.ctx:`` for a context, ``:*:`` for
    all, the default); soft-deleted ones too, or only those."""

    subject_prefix: str | None = None
    deleted_only: Flag = Field(False, validation_alias=AliasChoices("deletedOnly", "deleted_only"))


class VersionsQuery(PageQuery, DeletedQuery):
    """A subject's versions: soft-deleted ones too, or only those."""

    deleted_only: Flag = Field(False, validation_alias=AliasChoices("deletedOnly", "deleted_only"))


class SchemasQuery(PageQuery, DeletedQuery):
    """Subject versions of subjects whose names start with ``subjectPrefix``; only the latest of
    each with ``latestOnly``."""

    subject_prefix: str | None = None
    latest_only: Flag = False


class FormatQuery(DeletedQuery):
    """How to show the schema: ``serialized`` (Protobuf as a base64 FileDescriptorProto),
    ``resolved`` (references resolved); soft-deleted versions count with ``deleted``."""

    format: str | None = None


class SchemaByIdQuery(Query):
    """``format`` as in :class:`FormatQuery`; ``fetchMaxId`` adds the highest id given out.
    ``subject`` is accepted and ignored: ids are global."""

    subject: str | None = None
    format: str | None = None
    fetch_max_id: Flag = False


class UsesQuery(PageQuery, DeletedQuery):
    """The subjects (or subject versions) of a schema, optionally of one subject."""

    subject: str | None = None


class LookupQuery(DeletedQuery):
    """``normalize`` the schema before looking it up (the subject's setting by default)."""

    normalize: Flag | None = None
    format: str | None = None


class RegisterQuery(Query):
    """``normalize`` the schema before registering it (the subject's setting by default)."""

    normalize: Flag | None = None


class CompatibilityQuery(Query):
    """``verbose`` lists the reasons; ``normalize`` as for registering."""

    verbose: Flag = False
    normalize: Flag | None = None


class PermanentQuery(Query):
    """Delete for good (after a soft delete) rather than softly."""

    permanent: Flag = False


class DefaultToGlobalQuery(Query):
    """Answer the inherited setting when the subject has none of its own."""

    default_to_global: Flag = False


class ForceQuery(Query):
    """Set IMPORT even though the subject or context holds versions."""

    force: Flag = False
