"""The DEK registry's rules: names and algorithms, repeated creates, shared KEKs.

A KEK that is not shared is only a name for a key in a KMS: clients make DEKs, wrap them with
the KMS themselves and store only the wrapped material here. For a shared KEK the registry makes
a DEK a client asks for without material, and answers the material with every read of it (so
that clients need no access to the KMS), as Confluent's DEK registry does.
"""

from __future__ import annotations

import base64
import binascii

from registry.confluent.dek import kms
from registry.confluent.dek.model import Dek, Kek, algorithm, kek_name
from registry.confluent.dek.store import SqlDekStore
from registry.confluent.errors import InvalidKey, KeyExists, KeyNotFound
from registry.confluent.model import Subject


def context_namespace(context: str | None) -> str:
    """The namespace of a ``context`` query argument (``.ctx`` or ``ctx``; absent or ``.``: the
    default context)."""
    if not context or context == ".":
        return ""
    return Subject.parse(f":{context if context.startswith('.') else '.' + context}:", context_only=True).namespace


def _base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidKey(f"{what} is not base64") from None


class DekService:
    """The DEK registry's operations; the DEK registry's REST views call these."""

    def __init__(self, store: SqlDekStore) -> None:
        self.store = store

    # -- KEKs -------------------------------------------------------------------------------

    def kek_names(self, context: str | None, *, deleted: bool) -> list[str]:
        """Names of the context's KEKs."""
        return self.store.kek_names(context_namespace(context), deleted=deleted)

    def kek(self, context: str | None, name: str, *, deleted: bool) -> Kek:
        """The KEK of that name in the context."""
        found = self.store.kek(context_namespace(context), name, deleted=deleted)
        if found is None:
            raise KeyNotFound(f"Key '{name}' not found")
        return found

    def create_kek(self, context: str | None, kek: Kek) -> Kek:
        """Register a KEK; registering the same one again answers it, another of that name 409."""
        wanted = Kek(context_namespace(context), kek_name(kek.name), kek.kms_type, kek.kms_key_id, kek.kms_props,
                     kek.doc, kek.shared)
        if not wanted.kms_type or not wanted.kms_key_id:
            raise InvalidKey(f"KEK {kek.name!r} needs a kmsType and a kmsKeyId")
        if wanted.shared:
            kms.can_share(wanted)
        found = self.store.create_kek(wanted)
        if found.deleted or not found.same_key(wanted):
            state = "a soft-deleted one" if found.deleted else "another key"
            raise KeyExists(f"Key '{wanted.name}' already exists as {state}")
        return found

    def update_kek(self, context: str | None, name: str, kms_props: dict[str, str] | None, doc: str | None,
                   shared: bool | None) -> Kek:
        """Change a KEK's KMS properties, doc or sharing."""
        namespace = context_namespace(context)
        if shared:
            current = self.kek(context, name, deleted=False)
            kms.can_share(Kek(namespace, name, current.kms_type, current.kms_key_id,
                              kms_props if kms_props is not None else current.kms_props))
        return self.store.update_kek(namespace, name, kms_props, doc, shared)

    def delete_kek(self, context: str | None, name: str, *, permanent: bool) -> None:
        """Soft-delete a KEK, or (after that) delete it for good."""
        self.store.delete_kek(context_namespace(context), name, permanent=permanent)

    def undelete_kek(self, context: str | None, name: str) -> None:
        """Bring back a soft-deleted KEK."""
        self.store.undelete_kek(context_namespace(context), name)

    # -- DEKs -------------------------------------------------------------------------------

    def dek_subjects(self, subject_context: str | None, name: str, *, deleted: bool) -> list[str]:
        """Subjects with DEKs under the KEK."""
        return self.store.dek_subjects(context_namespace(subject_context), name, deleted=deleted)

    @staticmethod
    def _shown(kek: Kek, dek: Dek) -> Dek:
        if not kek.shared:
            return dek
        material = kms.unwrap(kek, _base64(dek.encrypted_key_material, "encryptedKeyMaterial"))
        return Dek(dek.kek_name, dek.subject, dek.version, dek.algorithm, dek.encrypted_key_material, dek.ts,
                   dek.deleted, base64.b64encode(material).decode("ascii"))

    def create_dek(self, name: str, subject: str, version: int | None, algo: str | None,
                   encrypted: str | None) -> Dek:
        """Register version ``version`` (1 by default) of the subject's DEK under the KEK: wrapped
        material as given, or made by the registry for a shared KEK. The same DEK again answers
        it; other material for the same version is 409."""
        namespace = Subject.parse(subject).namespace
        chosen = algorithm(algo)
        number = version if version is not None else 1
        if number < 1:
            raise InvalidKey(f"invalid DEK version {number}: versions start at 1")
        generated = encrypted is None
        if encrypted is None:
            kek = self.store.kek(namespace, name, deleted=False)
            if kek is None:
                raise KeyNotFound(f"Key '{name}' not found")
            if not kek.shared:
                raise InvalidKey(f"KEK {name!r} is not shared: give the DEK's encryptedKeyMaterial")
            encrypted = base64.b64encode(kms.wrap(kek, kms.new_key(chosen))).decode("ascii")
        else:
            _base64(encrypted, "encryptedKeyMaterial")
        kek, dek, created = self.store.create_dek(namespace, Dek(name, subject, number, chosen, encrypted))
        if not created and not generated and dek.encrypted_key_material != encrypted:
            raise KeyExists(f"DEK version {number} of subject '{subject}' under key '{name}' exists already")
        return self._shown(kek, dek)

    def deks(self, name: str, subject: str, algo: str | None, *, deleted: bool) -> list[Dek]:
        """The subject's DEKs of the algorithm under the KEK, by version."""
        _kek, found = self.store.deks(Subject.parse(subject).namespace, name, subject, algorithm(algo),
                                      deleted=deleted)
        return found

    def dek(self, name: str, subject: str, version: int | None, algo: str | None, *, deleted: bool) -> Dek:
        """One version of the subject's DEK (None or -1: the latest), with its material for a shared KEK."""
        kek, found = self.store.deks(Subject.parse(subject).namespace, name, subject, algorithm(algo),
                                     deleted=deleted)
        chosen = found if version in (None, -1) else [d for d in found if d.version == version]
        if not chosen:
            raise KeyNotFound(f"Key '{name}' has no DEK of subject '{subject}'"
                              + ("" if version in (None, -1) else f" version {version}"))
        return self._shown(kek, chosen[-1])

    def delete_deks(self, name: str, subject: str, version: int | None, algo: str | None, *,
                    permanent: bool) -> None:
        """Soft-delete (or, after that, delete for good) one version of the subject's DEK, or all."""
        self.store.delete_deks(Subject.parse(subject).namespace, name, subject, algorithm(algo),
                               None if version is None else [version], permanent=permanent)

    def undelete_deks(self, name: str, subject: str, version: int | None, algo: str | None) -> None:
        """Bring back one soft-deleted version of the subject's DEK, or all."""
        self.store.undelete_deks(Subject.parse(subject).namespace, name, subject, algorithm(algo),
                                 None if version is None else [version])
