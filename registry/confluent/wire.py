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
from registry.confluent import contracts
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


_NAME = Field(max_length=1024)


class ContractMetadata(Body):
    """A schema's metadata (data contracts): tags of schema paths, properties, and the names of
    sensitive properties."""

    tags: dict[str, list[Annotated[str, _NAME]]] | None = omitted()
    properties: dict[str, Annotated[str, Field(max_length=64 * 1024)]] | None = omitted()
    sensitive: list[Annotated[str, _NAME]] | None = omitted()

    @classmethod
    def of(cls, metadata: contracts.Metadata) -> ContractMetadata:
        """The wire form of ``metadata``."""
        return cls.model_validate(metadata.to_json())

    def to_domain(self) -> contracts.Metadata:
        """The domain object."""
        return contracts.Metadata.of_json(self.model_dump(exclude_none=True))


class ContractRule(Body):
    """One rule: ``kind`` CONDITION or TRANSFORM, ``mode`` (WRITE, READ, WRITEREAD for domain and
    encoding rules; UPGRADE, DOWNGRADE, UPDOWN for migration rules), the ``type`` of executor
    clients run it with (CEL, CEL_FIELD, JSONATA, ENCRYPT, ...), the field ``tags`` it applies
    to, its ``params``, ``expr``, and the actions ``onSuccess`` and ``onFailure`` (NONE, ERROR,
    DLQ, or two comma-separated for WRITEREAD and UPDOWN)."""

    name: Annotated[str, _not_null("")] = Field("", max_length=256)
    doc: str | None = omitted(max_length=64 * 1024)
    kind: Annotated[str, _not_null("TRANSFORM")] = Field("TRANSFORM", max_length=32)
    mode: Annotated[str, _not_null("WRITEREAD")] = Field("WRITEREAD", max_length=32)
    type: Annotated[str, _not_null("")] = Field("", max_length=256)
    tags: list[Annotated[str, _NAME]] | None = omitted()
    params: dict[str, Annotated[str, Field(max_length=64 * 1024)]] | None = omitted()
    expr: str | None = omitted(max_length=1024 * 1024)
    on_success: str | None = omitted(max_length=256)
    on_failure: str | None = omitted(max_length=256)
    disabled: Annotated[bool, _not_null(False)] = False


class ContractRuleSet(Body):
    """A schema's rules (data contracts): migration rules between versions, domain rules on
    records, encoding rules on payload bytes."""

    migration_rules: list[ContractRule] | None = omitted()
    domain_rules: list[ContractRule] | None = omitted()
    encoding_rules: list[ContractRule] | None = omitted()

    @classmethod
    def of(cls, rule_set: contracts.RuleSet) -> ContractRuleSet:
        """The wire form of ``rule_set``."""
        return cls.model_validate(rule_set.to_json())

    def to_domain(self) -> contracts.RuleSet:
        """The domain object, validated as Confluent validates rule sets (42210 otherwise)."""
        return contracts.RuleSet.of_json(self.model_dump(exclude_none=True))


class RegisterSchemaRequest(Body):
    """A schema to register, look up or test: its text, type and references, and its data
    contract (``metadata``, ``ruleSet``). ``id`` and ``version`` register under a given id and
    version in IMPORT mode."""

    text: str = Field(alias="schema", max_length=16 * 1024 * 1024)
    schema_type: Annotated[str, _not_null("AVRO")] = Field("AVRO", max_length=32)
    references: Annotated[list[SchemaReference], _not_null([])] = Field(default_factory=list)
    metadata: ContractMetadata | None = None
    rule_set: ContractRuleSet | None = None
    id: int | None = Field(None, ge=-1, le=2**63 - 1)
    version: int | None = Field(None, ge=-1, le=_INT32)

    def to_domain(self) -> SchemaRequest:
        """The request as the service takes it."""
        contract = contracts.Contract(
            self.metadata.to_domain() if self.metadata is not None else None,
            self.rule_set.to_domain() if self.rule_set is not None else None,
        )
        return SchemaRequest(
            self.text, self.schema_type, tuple(r.to_domain() for r in self.references), self.id, self.version,
            contract,
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
    metadata: ContractMetadata | None = omitted()
    rule_set: ContractRuleSet | None = omitted()

    @classmethod
    def of(cls, found: domain.SubjectVersion, text: str, references: list[domain.SchemaReference]) -> ConfluentSchema:
        """The wire form of ``found``, its schema shown as ``text`` with ``references``."""
        schema = found.schema
        metadata, rule_set = _contract(schema.contract)
        return cls.model_construct(
            subject=found.subject.qualified,
            version=found.number,
            id=schema.id,
            schema_type=None if schema.schema_type == "AVRO" else schema.schema_type,
            text=text,
            references=[SchemaReference.of(r) for r in references] or None,
            metadata=metadata,
            rule_set=rule_set,
        )


def _contract(contract: contracts.Contract) -> tuple[ContractMetadata | None, ContractRuleSet | None]:
    return (ContractMetadata.of(contract.metadata) if contract.metadata else None,
            ContractRuleSet.of(contract.rule_set) if contract.rule_set else None)


class SchemaString(Body):
    """A schema by id; ``maxId`` (the highest id given out) when asked for."""

    text: str = Field(alias="schema")
    schema_type: str | None = omitted()
    references: list[SchemaReference] | None = omitted()
    metadata: ContractMetadata | None = omitted()
    rule_set: ContractRuleSet | None = omitted()
    max_id: int | None = omitted()

    @classmethod
    def of(
        cls, schema: domain.StoredSchema, text: str, references: list[domain.SchemaReference], max_id: int | None
    ) -> SchemaString:
        """The wire form of ``schema``, shown as ``text`` with ``references``."""
        metadata, rule_set = _contract(schema.contract)
        return cls.model_construct(
            text=text,
            schema_type=None if schema.schema_type == "AVRO" else schema.schema_type,
            references=[SchemaReference.of(r) for r in references] or None,
            metadata=metadata,
            rule_set=rule_set,
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
    ``compatibilityLevel`` as some clients send it), ``normalize``, and the data-contract
    settings: ``compatibilityGroup`` (the metadata property whose value names a major version:
    compatibility is checked among versions with the same value), default and override
    metadata and rule sets (merged into every registration). Fields left out keep their value."""

    compatibility: str | None = Field(None, max_length=64)
    compatibility_level: str | None = Field(None, max_length=64)
    normalize: bool | None = None
    compatibility_group: str | None = Field(None, max_length=255)
    default_metadata: ContractMetadata | None = None
    override_metadata: ContractMetadata | None = None
    default_rule_set: ContractRuleSet | None = None
    override_rule_set: ContractRuleSet | None = None

    def contracts(self) -> contracts.ContractConfig:
        """The data-contract settings given (None: left as they are)."""
        def metadata(value: ContractMetadata | None) -> contracts.Metadata | None:
            return None if value is None else value.to_domain()

        def rule_set(value: ContractRuleSet | None) -> contracts.RuleSet | None:
            return None if value is None else value.to_domain()

        return contracts.ContractConfig(
            self.compatibility_group or None, metadata(self.default_metadata), metadata(self.override_metadata),
            rule_set(self.default_rule_set), rule_set(self.override_rule_set),
        )


class ContractSettings(Body):
    """The data-contract settings of a configuration, as answered (those set)."""

    compatibility_group: str | None = omitted()
    default_metadata: ContractMetadata | None = omitted()
    override_metadata: ContractMetadata | None = omitted()
    default_rule_set: ContractRuleSet | None = omitted()
    override_rule_set: ContractRuleSet | None = omitted()

    @staticmethod
    def values(settings: contracts.ContractConfig) -> dict[str, Any]:
        """The fields of ``settings`` in wire form, by field name."""
        def metadata(value: contracts.Metadata | None) -> ContractMetadata | None:
            return None if value is None else ContractMetadata.of(value)

        def rule_set(value: contracts.RuleSet | None) -> ContractRuleSet | None:
            return None if value is None else ContractRuleSet.of(value)

        return {
            "compatibility_group": settings.compatibility_group,
            "default_metadata": metadata(settings.default_metadata),
            "override_metadata": metadata(settings.override_metadata),
            "default_rule_set": rule_set(settings.default_rule_set),
            "override_rule_set": rule_set(settings.override_rule_set),
        }


class ConfigUpdate(ContractSettings):
    """The configuration just set."""

    compatibility: str | None = omitted()
    normalize: bool | None = omitted()

    @classmethod
    def of(cls, view: ConfigView) -> ConfigUpdate:
        """The wire form of ``view``."""
        return cls.model_construct(compatibility=view.level or None, normalize=view.normalize,
                                   **cls.values(view.contracts))


class ConfluentConfig(ContractSettings):
    """A configuration as ``GET /config`` answers it."""

    compatibility_level: str
    normalize: bool | None = omitted()

    @classmethod
    def of(cls, view: ConfigView) -> ConfluentConfig:
        """The wire form of ``view``."""
        return cls.model_construct(compatibility_level=view.level, normalize=view.normalize,
                                   **cls.values(view.contracts))


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


class MetadataQuery(DeletedQuery):
    """The metadata properties a version must have (``key`` and ``value`` repeated, paired in
    order), and ``format`` as in :class:`FormatQuery`."""

    key: str | None = None
    value: str | None = None
    format: str | None = None


class PermanentQuery(Query):
    """Delete for good (after a soft delete) rather than softly."""

    permanent: Flag = False


class DefaultToGlobalQuery(Query):
    """Answer the inherited setting when the subject has none of its own."""

    default_to_global: Flag = False


class ForceQuery(Query):
    """Set IMPORT even though the subject or context holds versions."""

    force: Flag = False
