"""The registry's storage interface. Every invariant that must hold across server
processes (unique versions, unique ids, ordered history) is the store's to keep."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from registry.formats.base import ParsedSchema
from registry.ids import CodecName, EncodingId, GroupName, Namespace, SchemaId, TypeName, Version
from registry.model import (
    CodecType,
    Compatibility,
    EncodingInfo,
    GroupProperties,
    SchemaInfo,
    SerializationFormat,
    VersionInfo,
)
from registry.policy import Needed


@dataclass(frozen=True)
class StoredVersion:
    """A version as stored: the schema, its place, the policy it passed, when, and whether deleted."""

    schema: SchemaInfo
    version: VersionInfo
    compatibility: Compatibility
    created_at: int
    deleted: bool


@dataclass(frozen=True)
class GroupPage:
    """One page of a group listing and the token that continues it."""

    groups: list[tuple[GroupName, GroupProperties]]
    continuation_token: str


@dataclass(frozen=True)
class AddContext:
    """What a new schema is judged against, read in one transaction (with the group locked, when adding)."""

    properties: GroupProperties
    #: the live versions of the new schema's type that the policy needs (``registry.policy.Needed``),
    #: oldest first
    live: Sequence[StoredVersion]
    #: types that have live versions in the group
    live_types: frozenset[str]


#: Called inside the adding transaction; raises to refuse the schema, and then
#: nothing is written.
AddCheck = Callable[[AddContext], None]


class RegistryStore(ABC):
    """Groups, schema versions, codecs and encoding ids, kept transactionally."""

    @abstractmethod
    def create_group(self, namespace: Namespace, name: GroupName, properties: GroupProperties) -> None:
        """Create a group; AlreadyExists if the name is taken in the namespace."""

    @abstractmethod
    def get_group(self, namespace: Namespace, name: GroupName) -> GroupProperties:
        """A group's properties; GroupNotFound if there is none."""

    @abstractmethod
    def list_groups(self, namespace: Namespace, token: str | None, limit: int) -> GroupPage:
        """Groups of a namespace in creation order, ``limit`` at a time from ``token``."""

    @abstractmethod
    def delete_group(self, namespace: Namespace, name: GroupName) -> None:
        """Delete a group with its versions, codecs and encodings; GroupNotFound if none."""

    @abstractmethod
    def count_groups(self, namespace: Namespace) -> int:
        """How many groups the namespace holds."""

    @abstractmethod
    def namespaces(self) -> list[tuple[Namespace, int]]:
        """Every namespace that holds a group, by name, with how many it holds."""

    @abstractmethod
    def recent_versions(self, limit: int) -> list[tuple[Namespace, GroupName, VersionInfo, int]]:
        """The newest ``limit`` versions added to any group, newest first, as (namespace, group,
        version, time added)."""

    @abstractmethod
    def find_groups(
        self, namespace: Namespace, text: str, after: str, limit: int
    ) -> list[tuple[GroupName, GroupProperties]]:
        """Groups of a namespace whose name contains ``text`` (any case), by name, from the first
        name past ``after``, ``limit`` at most."""

    @abstractmethod
    def group_names(self, namespace: Namespace, text: str, after: str, limit: int) -> list[GroupName]:
        """The names of the namespace's groups that contain ``text`` (any case; nothing else read), by name,
        from the first past ``after``, ``limit`` at most."""

    @abstractmethod
    def delete_namespace(self, namespace: Namespace) -> list[GroupName]:
        """Delete every group of the namespace (as ``delete_group`` does); returns their names."""

    @abstractmethod
    def update_compatibility(
        self,
        namespace: Namespace,
        name: GroupName,
        compatibility: Compatibility,
        previous: Compatibility | None,
    ) -> GroupProperties:
        """Set the policy; WriteConflict if ``previous`` is given and is not the current one."""

    @abstractmethod
    def add_schema(
        self, namespace: Namespace, name: GroupName, schema: ParsedSchema, info: SchemaInfo, check: AddCheck
    ) -> VersionInfo:
        """Register ``schema`` in the group, or return its live version if it is there already.

        ``check`` is given the live versions of the type that the group's policy needs
        (``registry.policy.needed``), not the whole history. The version number is one more than
        the type's highest, deleted ones included.
        """

    @abstractmethod
    def add_context(self, namespace: Namespace, name: GroupName, type_name: TypeName, needs: Needed) -> AddContext:
        """What a schema of ``type_name`` would be judged against now: the group's properties, the live
        versions of the type that ``needs`` names, and the group's live types."""

    @abstractmethod
    def live_versions(self, namespace: Namespace, name: GroupName, type_name: TypeName) -> list[StoredVersion]:
        """The live versions of one type, oldest first."""

    @abstractmethod
    def newest_of_types(self, namespace: Namespace, name: GroupName, type_name: TypeName | None) -> list[StoredVersion]:
        """The live version with the highest number of each type (of ``type_name`` only, if given), types
        in the order their oldest live versions were added."""

    @abstractmethod
    def latest_version(self, namespace: Namespace, name: GroupName) -> StoredVersion | None:
        """The most recently added live version of the group (any type), or None if it has none."""

    @abstractmethod
    def history(self, namespace: Namespace, name: GroupName) -> list[StoredVersion]:
        """Every version ever added to the group, deleted ones included, in order of addition."""

    @abstractmethod
    def find_version(self, namespace: Namespace, name: GroupName, schema: ParsedSchema) -> VersionInfo | None:
        """The live version of exactly this schema in the group, if any."""

    @abstractmethod
    def version_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> StoredVersion:
        """The group's version with that schema id (the latest, if re-added after a delete)."""

    @abstractmethod
    def version_by_number(
        self, namespace: Namespace, name: GroupName, fmt: SerializationFormat, type_name: TypeName, version: Version
    ) -> StoredVersion:
        """The version of a type by number; SchemaNotFound if none."""

    @abstractmethod
    def delete_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> None:
        """Soft-delete the group's live version with that schema id."""

    @abstractmethod
    def delete_by_number(
        self, namespace: Namespace, name: GroupName, fmt: SerializationFormat, type_name: TypeName, version: Version
    ) -> None:
        """Soft-delete a version by number."""

    @abstractmethod
    def codec_types(self, namespace: Namespace, name: GroupName) -> list[CodecType]:
        """The codec types registered in the group."""

    @abstractmethod
    def add_codec_type(self, namespace: Namespace, name: GroupName, codec: CodecType) -> None:
        """Register a codec type (idempotent)."""

    @abstractmethod
    def encoding_id(self, namespace: Namespace, name: GroupName, version: VersionInfo, codec: CodecName) -> EncodingId:
        """Get or create the encoding id of (version, codec); CodecNotRegistered if unknown."""

    @abstractmethod
    def encoding_info(self, namespace: Namespace, name: GroupName, encoding: EncodingId) -> EncodingInfo:
        """What an encoding id of the group stands for; EncodingNotFound if not the group's."""

    @abstractmethod
    def encodings(self, namespace: Namespace, name: GroupName) -> list[tuple[EncodingId, VersionInfo, CodecName]]:
        """Every encoding id of the group, in order of creation, with its version and codec."""

    @abstractmethod
    def encodings_of(self, namespace: Namespace, name: GroupName, ids: frozenset[int]) -> frozenset[EncodingId]:
        """Those of ``ids`` that are encoding ids of the group."""

    @abstractmethod
    def added_to(self, namespace: Namespace, schema: ParsedSchema) -> dict[GroupName, VersionInfo]:
        """Every group of the namespace holding ``schema`` live, with its version there."""
