"""The DEK registry's wire models: Confluent's JSON bodies and query strings."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from registry.api.wire import Flag, Query, omitted
from registry.confluent.dek import kms
from registry.confluent.dek.model import Dek, Kek
from registry.confluent.wire import Body

_PROPS = dict[Annotated[str, Field(max_length=255)], Annotated[str, Field(max_length=4096)]]


class CreateKekRequest(Body):
    """A KEK to register: its name, the KMS it lives in (``kmsType``: ``local-kms``,
    ``aws-kms``, ``azure-kms``, ``gcp-kms``, ``hcvault``) and its id there, KMS properties,
    a doc, and whether it is ``shared`` (the registry may use the KMS; ``local-kms`` only,
    with the ``secret`` property)."""

    name: str = Field(max_length=255)
    kms_type: str = Field(max_length=64)
    kms_key_id: str = Field(max_length=1024)
    kms_props: _PROPS | None = None
    doc: str | None = Field(None, max_length=64 * 1024)
    shared: bool | None = None

    def to_domain(self) -> Kek:
        """The KEK asked for (its context is the request's)."""
        return Kek("", self.name, self.kms_type, self.kms_key_id, dict(self.kms_props or {}), self.doc,
                   bool(self.shared))


class UpdateKekRequest(Body):
    """What to change of a KEK (fields left out stay)."""

    kms_props: _PROPS | None = None
    doc: str | None = Field(None, max_length=64 * 1024)
    shared: bool | None = None


class KekAnswer(Body):
    """A KEK as the DEK registry answers it. A shared ``local-kms`` KEK's ``secret`` property is
    never answered."""

    name: str
    kms_type: str
    kms_key_id: str
    kms_props: dict[str, str] | None = omitted()
    doc: str | None = omitted()
    shared: bool
    ts: int
    deleted: bool

    @classmethod
    def of(cls, kek: Kek) -> KekAnswer:
        """The wire form of ``kek``."""
        props = {k: v for k, v in kek.kms_props.items() if k != kms.SECRET_PROPERTY}
        return cls.model_construct(name=kek.name, kms_type=kek.kms_type, kms_key_id=kek.kms_key_id,
                                   kms_props=props or None, doc=kek.doc, shared=kek.shared, ts=kek.ts,
                                   deleted=kek.deleted)


class CreateDekRequest(Body):
    """A DEK to register for a subject: its version (1 by default), algorithm (AES256_GCM by
    default) and key material wrapped by the KEK (base64; left out under a shared KEK: the
    registry makes it)."""

    subject: str | None = Field(None, max_length=600)
    version: int | None = Field(None, ge=1, le=2**31 - 1)
    algorithm: str | None = Field(None, max_length=32)
    encrypted_key_material: str | None = Field(None, max_length=64 * 1024)


class DekAnswer(Body):
    """A DEK as the DEK registry answers it; ``keyMaterial`` (base64) only under a shared KEK."""

    kek_name: str
    subject: str
    version: int
    algorithm: str
    encrypted_key_material: str
    key_material: str | None = omitted()
    ts: int
    deleted: bool

    @classmethod
    def of(cls, dek: Dek) -> DekAnswer:
        """The wire form of ``dek``."""
        return cls.model_construct(kek_name=dek.kek_name, subject=dek.subject, version=dek.version,
                                   algorithm=dek.algorithm, encrypted_key_material=dek.encrypted_key_material,
                                   key_material=dek.key_material, ts=dek.ts, deleted=dek.deleted)


class KekQuery(Query):
    """The context of the KEK (``.ctx``; the default context when absent); soft-deleted KEKs
    count with ``deleted``."""

    context: str | None = Field(None, max_length=300)
    deleted: Flag = False


class KekDeleteQuery(Query):
    """The KEK's context; delete for good (after a soft delete) with ``permanent``."""

    context: str | None = Field(None, max_length=300)
    permanent: Flag = False


class DekQuery(Query):
    """The DEK's ``algorithm`` (AES256_GCM by default); soft-deleted DEKs count with ``deleted``."""

    algorithm: str | None = Field(None, max_length=32)
    deleted: Flag = False


class DekDeleteQuery(Query):
    """The DEK's ``algorithm``; delete for good (after a soft delete) with ``permanent``."""

    algorithm: str | None = Field(None, max_length=32)
    permanent: Flag = False


