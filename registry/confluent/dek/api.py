"""The DEK registry's REST API, ``/dek-registry/v1/keks/...``, on the Confluent blueprint (the
same errors, media types and subject names as the rest of the Confluent API).

KEKs name keys in a KMS and hold no data: anyone who may read something may read them, anyone
who may write somewhere may register one (as a producer's ENCRYPT rule does on first use), and
only registry admins change or delete them. A DEK belongs to its subject: reading, creating and
deleting it need read, write and admin on the subject's group.
"""

from __future__ import annotations

from flask import current_app

from registry.confluent.api import ADMIN, LISTING, READ, REGISTRY_ADMIN, WRITE, _op
from registry.confluent.dek import wire as dm
from registry.confluent.dek.service import DekService
from registry.confluent.errors import InvalidKey
from registry.confluent.wire import Numbers, Strings
from registry.permissions import Need

#: Where the application keeps the DekService.
SERVICE_KEY = "streamcat.confluent.dek"
_KEKS = "/dek-registry/v1/keks"
_KEK = _KEKS + "/<kek>"
_DEKS = _KEK + "/deks/<subject:subject>"
_VERSION = _DEKS + "/versions/<dek_version>"
#: Registering a KEK: write on anything.
REGISTER_KEK = Need("write", listing=True)


def service() -> DekService:
    """The DekService of the running application."""
    found: DekService = current_app.extensions[SERVICE_KEY]
    return found


def _version(text: str) -> int | None:
    if text in ("latest", "-1"):
        return None
    if text.isascii() and text.isdigit() and len(text) <= 10 and 1 <= int(text) <= 2**31 - 1:
        return int(text)
    raise InvalidKey(f"invalid DEK version {text[:20]!r}: a number from 1, latest or -1")


# -- KEKs -----------------------------------------------------------------------------------------------


@_op("GET", _KEKS, "dekListKeks", "KEK names of a context (DEK registry)", query=dm.KekQuery,
     response=Strings, errors=(422,), permission=LISTING)
def list_keks(query: dm.KekQuery) -> Strings:
    return Strings(service().kek_names(query.context, deleted=query.deleted))


@_op("POST", _KEKS, "dekCreateKek", "Register a KEK (DEK registry)", query=dm.KekQuery,
     body=dm.CreateKekRequest, response=dm.KekAnswer, errors=(404, 409, 422), permission=REGISTER_KEK)
def create_kek(query: dm.KekQuery, body: dm.CreateKekRequest) -> dm.KekAnswer:
    return dm.KekAnswer.of(service().create_kek(query.context, body.to_domain()))


@_op("GET", _KEK, "dekGetKek", "A KEK (DEK registry)", query=dm.KekQuery, response=dm.KekAnswer,
     errors=(404, 422), permission=LISTING)
def get_kek(kek: str, query: dm.KekQuery) -> dm.KekAnswer:
    return dm.KekAnswer.of(service().kek(query.context, kek, deleted=query.deleted))


@_op("PUT", _KEK, "dekUpdateKek", "Change a KEK (DEK registry)", query=dm.KekQuery, body=dm.UpdateKekRequest,
     response=dm.KekAnswer, errors=(404, 422), permission=REGISTRY_ADMIN)
def update_kek(kek: str, query: dm.KekQuery, body: dm.UpdateKekRequest) -> dm.KekAnswer:
    return dm.KekAnswer.of(service().update_kek(query.context, kek, body.kms_props, body.doc, body.shared))


@_op("DELETE", _KEK, "dekDeleteKek", "Delete a KEK (DEK registry)", query=dm.KekDeleteQuery, status=204,
     errors=(404, 422), permission=REGISTRY_ADMIN)
def delete_kek(kek: str, query: dm.KekDeleteQuery) -> None:
    service().delete_kek(query.context, kek, permanent=query.permanent)


@_op("POST", _KEK + "/undelete", "dekUndeleteKek", "Undelete a KEK (DEK registry)", query=dm.KekQuery,
     status=204, errors=(404, 422), permission=REGISTRY_ADMIN)
def undelete_kek(kek: str, query: dm.KekQuery) -> None:
    service().undelete_kek(query.context, kek)


@_op("GET", _KEK + "/deks", "dekListSubjects", "Subjects with DEKs under a KEK (DEK registry)",
     query=dm.KekQuery, response=Strings, errors=(404, 422), permission=REGISTRY_ADMIN)
def list_dek_subjects(kek: str, query: dm.KekQuery) -> Strings:
    return Strings(service().dek_subjects(query.context, kek, deleted=query.deleted))


# -- DEKs -----------------------------------------------------------------------------------------------


@_op("POST", _DEKS, "dekCreateDek", "Register a subject's DEK (DEK registry)", body=dm.CreateDekRequest,
     response=dm.DekAnswer, errors=(404, 409, 422), permission=WRITE)
def create_dek(kek: str, subject: str, body: dm.CreateDekRequest) -> dm.DekAnswer:
    if body.subject is not None and body.subject != subject:
        raise InvalidKey(f"the body's subject {body.subject[:80]!r} is not the path's {subject[:80]!r}")
    found = service().create_dek(kek, subject, body.version, body.algorithm, body.encrypted_key_material)
    return dm.DekAnswer.of(found)


@_op("GET", _DEKS, "dekGetLatestDek", "The latest DEK of a subject (DEK registry)", query=dm.DekQuery,
     response=dm.DekAnswer, errors=(404, 422), permission=READ)
def get_latest_dek(kek: str, subject: str, query: dm.DekQuery) -> dm.DekAnswer:
    return dm.DekAnswer.of(service().dek(kek, subject, None, query.algorithm, deleted=query.deleted))


@_op("GET", _DEKS + "/versions", "dekListVersions", "DEK versions of a subject (DEK registry)",
     query=dm.DekQuery, response=Numbers, errors=(404, 422), permission=READ)
def list_dek_versions(kek: str, subject: str, query: dm.DekQuery) -> Numbers:
    return Numbers([d.version for d in service().deks(kek, subject, query.algorithm, deleted=query.deleted)])


@_op("GET", _VERSION, "dekGetDek", "A DEK version of a subject (DEK registry)", query=dm.DekQuery,
     response=dm.DekAnswer, errors=(404, 422), permission=READ)
def get_dek(kek: str, subject: str, dek_version: str, query: dm.DekQuery) -> dm.DekAnswer:
    found = service().dek(kek, subject, _version(dek_version), query.algorithm, deleted=query.deleted)
    return dm.DekAnswer.of(found)


@_op("DELETE", _DEKS, "dekDeleteDeks", "Delete a subject's DEKs (DEK registry)", query=dm.DekDeleteQuery,
     status=204, errors=(404, 422), permission=ADMIN)
def delete_deks(kek: str, subject: str, query: dm.DekDeleteQuery) -> None:
    service().delete_deks(kek, subject, None, query.algorithm, permanent=query.permanent)


@_op("DELETE", _VERSION, "dekDeleteDek", "Delete a DEK version (DEK registry)", query=dm.DekDeleteQuery,
     status=204, errors=(404, 422), permission=ADMIN)
def delete_dek(kek: str, subject: str, dek_version: str, query: dm.DekDeleteQuery) -> None:
    version = _version(dek_version)
    if version is None:
        raise InvalidKey("name the DEK version to delete, or delete the subject's DEKs")
    service().delete_deks(kek, subject, version, query.algorithm, permanent=query.permanent)


@_op("POST", _DEKS + "/undelete", "dekUndeleteDeks", "Undelete a subject's DEKs (DEK registry)",
     query=dm.DekQuery, status=204, errors=(404, 422), permission=ADMIN)
def undelete_deks(kek: str, subject: str, query: dm.DekQuery) -> None:
    service().undelete_deks(kek, subject, None, query.algorithm)


@_op("POST", _VERSION + "/undelete", "dekUndeleteDek", "Undelete a DEK version (DEK registry)",
     query=dm.DekQuery, status=204, errors=(404, 422), permission=ADMIN)
def undelete_dek(kek: str, subject: str, dek_version: str, query: dm.DekQuery) -> None:
    service().undelete_deks(kek, subject, _version(dek_version), query.algorithm)
