"""The Confluent Schema Registry REST API, at the server's root (``http://host:9092`` is a
Confluent URL): subjects, schemas by id, compatibility, config, mode, contexts.

Errors of these routes are Confluent's ``{"error_code": N, "message": ...}`` (the blueprint's own
handlers); answers are ``application/vnd.schemaregistry.v1+json`` unless the client accepts only
``application/vnd.schemaregistry+json`` or ``application/json``. Subject names with ``/`` arrive
percent-encoded, which the server decodes before routing: ``<path:subject>`` takes them whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

from flask import Blueprint, Response, current_app, g, jsonify, request
from pydantic import Field
from werkzeug.exceptions import HTTPException
from werkzeug.routing import PathConverter

from registry.api.context import access, require
from registry.api.operations import View, operation
from registry.confluent import wire as m
from registry.confluent.contracts import ContractConfig
from registry.confluent.errors import (
    MalformedRequest,
    SchemaNotFound,
    confluent_code,
    http_error_code,
)
from registry.confluent.model import SCHEMA_TYPES, StoredSchema, Subject, SubjectVersion
from registry.confluent.service import ConfluentService
from registry.errors import StreamcatError
from registry.permissions import EVERYTHING, Need, Permission, Resource

log = logging.getLogger(__name__)

bp = Blueprint("confluent", __name__)

#: Where the application keeps the ConfluentService.
SERVICE_KEY = "streamcat.confluent"
#: Media types of the Confluent API, the preferred first.
MEDIA_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json")
_JSON = MEDIA_TYPES[0]
_SUBJECT = "/subjects/<subject:subject>"
_VERSION = _SUBJECT + "/versions/<subject_version>"


#: How the document names and types this API's path variables.
_PATH: dict[str, tuple[str, Any]] = {
    "subject": ("subject", Annotated[str, Field(min_length=1, description="a subject, :.context:subject in a "
                                                                           "context other than the default")]),
    "subject_version": ("version", Annotated[str, Field(pattern=r"^([1-9][0-9]{0,9}|latest|-1)$")]),
    "schema_id": ("id", Annotated[int, Field(ge=1, le=2**31 - 1)]),
    "rest": ("path", Annotated[str, Field(min_length=1)]),
    # the DEK registry (registry/confluent/dek/api.py)
    "kek": ("name", Annotated[str, Field(min_length=1, max_length=255)]),
    "dek_version": ("version", Annotated[str, Field(pattern=r"^([1-9][0-9]{0,9}|latest|-1)$")]),
}


def _op(method: str, rule: str, operation_id: str, summary: str, **declaration: Any) -> Callable[[View], View]:
    """:func:`operation` on this blueprint, with the Confluent media type, path names and error body
    (every route may answer 422: a query argument or subject name it cannot take; one with a body
    413: a body over the server's limit). Each route declares its ``permission``; one that does
    not is refused to everyone by the shell."""
    declaration.setdefault("media_type", _JSON)
    errors = {*declaration.get("errors", ()), 422}
    if declaration.get("body") is not None:
        errors.add(413)
    declaration["errors"] = tuple(sorted(errors))
    return operation(bp, method, rule, operation_id, summary, path=_PATH, error_model=m.ConfluentError, **declaration)


def service() -> ConfluentService:
    """The ConfluentService of the running application."""
    found: ConfluentService = current_app.extensions[SERVICE_KEY]
    return found


class SubjectConverter(PathConverter):
    """A subject name in a path: like ``<path:...>`` (slashes included, as clients percent-encode
    them and the server decodes them before routing), and any other character too, so that a
    name no route would match (a newline, say) still reaches the view and gets Confluent's error."""

    regex = "(?s:[^/].*?)"


#: What the routes need, on the subject's group (a context's configuration: on its namespace, as the
#: group with no name); listings and lookups by id filter what the caller may read.
READ, WRITE, ADMIN = Need("read", "group"), Need("write", "group"), Need("admin", "group")
LISTING, REGISTRY_ADMIN = Need("read", listing=True), Need("admin")


@bp.url_value_preprocessor
def _subject_names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    # The shell's guard finds the group a route's permission is on in g (as for the Pravega API).
    if values is not None and "subject" in values:
        subject = Subject.parse(str(values["subject"]), context_only=True)
        g.namespace, g.group = subject.namespace, subject.name


def _readable(subject: Subject) -> bool:
    return access().allows(Permission.READ, Resource.of_group(subject.namespace, subject.name))


def _scope(subject: str) -> Subject:
    """The subject, context or registry a config or mode path names; the registry's own (``:.:``)
    needs admin everywhere, as ``/config`` and ``/mode`` do."""
    found = service().subject(subject, context_only=True)
    if not found.name and not found.namespace and request.method != "GET":
        require(Permission.ADMIN, EVERYTHING)
    return found


# -- errors and media types -------------------------------------------------------------------------


def _error(status: int, code: int, message: str) -> Response:
    response = jsonify(m.ConfluentError(error_code=code, message=message).model_dump())
    response.status_code = status
    return response


@bp.errorhandler(StreamcatError)
def _domain_error(error: StreamcatError) -> Response:
    status, code = confluent_code(error)
    response = _error(status, code, error.message)
    response.headers.extend(getattr(error, "headers", ()))  # a 401's WWW-Authenticate challenges
    return response


@bp.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    if status == 413:
        limit = current_app.config.get("MAX_CONTENT_LENGTH")
        return _error(413, 413, f"the request body exceeds the limit of {limit} bytes")
    return _error(status, http_error_code(status), error.description or error.name)


@bp.after_request
def _confluent_answer(response: Response) -> Response:
    # Errors the application's own handlers answered (an unexpected one, a busy database) get
    # Confluent's shape too; then every JSON answer gets the media type the client accepts.
    if response.status_code >= 400 and response.is_json:
        body = response.get_json(silent=True)
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            message = str(body["error"].get("message", ""))
            response.set_data(m.ConfluentError(error_code=http_error_code(response.status_code), message=message)
                              .model_dump_json())
    if response.mimetype in MEDIA_TYPES or response.is_json:
        accepted = request.accept_mimetypes
        chosen = next((t for t in MEDIA_TYPES if accepted.quality(t) > 0), _JSON) if accepted else _JSON
        response.mimetype = chosen
    return response


def _version(svc: ConfluentService, found: SubjectVersion, fmt: str | None) -> m.ConfluentSchema:
    references = svc.references(found.schema, found.subject.namespace)
    return m.ConfluentSchema.of(found, svc.text(found.schema, fmt), references)


# -- subjects -----------------------------------------------------------------------------------------


@_op("GET", "/subjects", "confluentListSubjects", "Subjects (Confluent API)",
     query=m.SubjectsQuery, response=m.Strings, errors=(422,), permission=LISTING)
def list_subjects(query: m.SubjectsQuery) -> m.Strings:
    found = service().list_subjects(query.subject_prefix, deleted=query.deleted, deleted_only=query.deleted_only,
                                    offset=query.offset, limit=query.limit)
    return m.Strings([s.qualified for s in found if _readable(s)])


@_op("POST", _SUBJECT, "confluentLookUpSchema", "Version of a schema in a subject (Confluent API)",
     query=m.LookupQuery, body=m.RegisterSchemaRequest, response=m.ConfluentSchema,
     errors=(404, 422), permission=READ)
def look_up(subject: str, query: m.LookupQuery, body: m.RegisterSchemaRequest) -> m.ConfluentSchema:
    svc = service()
    found = svc.lookup(svc.subject(subject), body.to_domain(), normalize=query.normalize,
                       deleted=query.deleted)
    return _version(svc, found, query.format)


@_op("DELETE", _SUBJECT, "confluentDeleteSubject", "Delete a subject (Confluent API)",
     query=m.PermanentQuery, response=m.Numbers, errors=(404, 422), permission=ADMIN)
def delete_subject(subject: str, query: m.PermanentQuery) -> m.Numbers:
    svc = service()
    return m.Numbers(svc.delete_subject(svc.subject(subject), permanent=query.permanent))


@_op("GET", _SUBJECT + "/versions", "confluentListVersions", "Versions of a subject (Confluent API)",
     query=m.VersionsQuery, response=m.Numbers, errors=(404, 422), permission=READ)
def list_versions(subject: str, query: m.VersionsQuery) -> m.Numbers:
    svc = service()
    return m.Numbers(svc.versions(svc.subject(subject), deleted=query.deleted, deleted_only=query.deleted_only,
                                  offset=query.offset, limit=query.limit))


@_op("POST", _SUBJECT + "/versions", "confluentRegisterSchema", "Register a schema (Confluent API)",
     query=m.RegisterQuery, body=m.RegisterSchemaRequest, response=m.RegisterSchemaResponse,
     media_type=_JSON, errors=(409, 413, 422), permission=WRITE)
def register(subject: str, query: m.RegisterQuery, body: m.RegisterSchemaRequest) -> m.RegisterSchemaResponse:
    svc = service()
    schema_id, _number = svc.register(svc.subject(subject), body.to_domain(), query.normalize)
    return m.RegisterSchemaResponse(id=schema_id)


@_op("GET", _VERSION, "confluentGetVersion", "A version of a subject (Confluent API)",
     query=m.FormatQuery, response=m.ConfluentSchema, errors=(404, 422), permission=READ)
def get_version(subject: str, subject_version: str, query: m.FormatQuery) -> m.ConfluentSchema:
    svc = service()
    found = svc.version(svc.subject(subject), subject_version, deleted=query.deleted)
    return _version(svc, found, query.format)


@_op("GET", _SUBJECT + "/metadata", "confluentLatestWithMetadata",
     "The latest version with the given metadata properties (Confluent API)",
     query=m.MetadataQuery, response=m.ConfluentSchema, errors=(404, 422), permission=READ)
def latest_with_metadata(subject: str, query: m.MetadataQuery) -> m.ConfluentSchema:
    keys, values = request.args.getlist("key"), request.args.getlist("value")
    if len(keys) != len(values):
        raise MalformedRequest(f"give one value per key: {len(keys)} keys, {len(values)} values")
    svc = service()
    found = svc.latest_with_metadata(svc.subject(subject), dict(zip(keys, values, strict=True)),
                                     deleted=query.deleted)
    return _version(svc, found, query.format)


@_op("DELETE", _VERSION, "confluentDeleteVersion", "Delete a version (Confluent API)",
     query=m.PermanentQuery, response=m.Number, errors=(404, 422), permission=ADMIN)
def delete_version(subject: str, subject_version: str, query: m.PermanentQuery) -> m.Number:
    svc = service()
    return m.Number(svc.delete_version(svc.subject(subject), subject_version, permanent=query.permanent))


@_op("GET", _VERSION + "/schema", "confluentGetVersionSchema", "The schema of a version, as is",
     query=m.FormatQuery, response=m.RawSchema, errors=(404, 422), permission=READ)
def get_version_schema(subject: str, subject_version: str, query: m.FormatQuery) -> m.RawSchema:
    svc = service()
    found = svc.version(svc.subject(subject), subject_version, deleted=query.deleted)
    return m.RawSchema(svc.text(found.schema, query.format))


@_op("GET", _VERSION + "/referencedby", "confluentReferencedBy", "Schemas referencing a version",
     query=m.PageQuery, response=m.Numbers, errors=(404, 422), permission=READ)
def referenced_by(subject: str, subject_version: str, query: m.PageQuery) -> m.Numbers:
    svc = service()
    offset, limit = svc.page(query.offset, query.limit)
    return m.Numbers(svc.referenced_by(svc.subject(subject), subject_version)[offset : offset + limit])


# -- schemas --------------------------------------------------------------------------------------------


@_op("GET", "/schemas", "confluentListSchemas", "Versions of every subject (Confluent API)",
     query=m.SchemasQuery, response=m.Schemas, errors=(422,), permission=LISTING)
def list_schemas(query: m.SchemasQuery) -> m.Schemas:
    svc = service()
    found = svc.list_schemas(query.subject_prefix, deleted=query.deleted, latest_only=query.latest_only,
                             offset=query.offset, limit=query.limit)
    return m.Schemas([_version(svc, v, None) for v in found if _readable(v.subject)])


@_op("GET", "/schemas/types", "confluentSchemaTypes", "Schema types (Confluent API)",
     response=m.Strings, errors=(), permission=LISTING)
def schema_types() -> m.Strings:
    return m.Strings(sorted(SCHEMA_TYPES))


def _schema_id(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else -1


def _readable_schema(schema_id: int) -> StoredSchema:
    """The schema, if the caller may read a subject holding it (40403 otherwise, as for no schema)."""
    svc = service()
    found = svc.schema_by_id(schema_id)
    if access().allows(Permission.READ, EVERYTHING):
        return found
    holders = svc.subjects_holding(schema_id, None, deleted=True, offset=0, limit=None)
    if not any(_readable(s) for s in holders):
        raise SchemaNotFound(f"Schema {schema_id} not found")
    return found


@_op("GET", "/schemas/ids/<schema_id>", "confluentGetSchemaById", "A schema by its global id",
     query=m.SchemaByIdQuery, response=m.SchemaString, errors=(404, 422), permission=LISTING)
def get_schema(schema_id: str, query: m.SchemaByIdQuery) -> m.SchemaString:
    svc = service()
    found = _readable_schema(_schema_id(schema_id))
    references = svc.references(found, svc.context_of(found, query.subject))
    max_id = svc.max_id() if query.fetch_max_id else None
    return m.SchemaString.of(found, svc.text(found, query.format), references, max_id)


@_op("GET", "/schemas/ids/<schema_id>/schema", "confluentGetSchemaTextById", "A schema by id, as is",
     query=m.SchemaByIdQuery, response=m.RawSchema, errors=(404, 422), permission=LISTING)
def get_schema_text(schema_id: str, query: m.SchemaByIdQuery) -> m.RawSchema:
    svc = service()
    return m.RawSchema(svc.text(_readable_schema(_schema_id(schema_id)), query.format))


@_op("GET", "/schemas/ids/<schema_id>/subjects", "confluentSubjectsOfSchema", "Subjects of a schema",
     query=m.UsesQuery, response=m.Strings, errors=(404, 422), permission=LISTING)
def subjects_of_schema(schema_id: str, query: m.UsesQuery) -> m.Strings:
    found = service().subjects_holding(_schema_id(schema_id), query.subject, deleted=query.deleted,
                                       offset=query.offset, limit=query.limit)
    return m.Strings([s.qualified for s in found if _readable(s)])


@_op("GET", "/schemas/ids/<schema_id>/versions", "confluentVersionsOfSchema",
     "Subject versions of a schema", query=m.UsesQuery, response=m.SubjectVersions,
     errors=(404, 422), permission=LISTING)
def versions_of_schema(schema_id: str, query: m.UsesQuery) -> m.SubjectVersions:
    uses = service().uses(_schema_id(schema_id), query.subject, deleted=query.deleted, offset=query.offset,
                          limit=query.limit)
    return m.SubjectVersions([m.SubjectVersion(subject=s.qualified, version=n) for s, n in uses if _readable(s)])


# -- compatibility --------------------------------------------------------------------------------------


def _compatibility(subject: str, version: str | None, query: m.CompatibilityQuery,
                   body: m.RegisterSchemaRequest) -> m.CompatibilityCheck:
    svc = service()
    reasons = svc.test_compatibility(svc.subject(subject), version, body.to_domain(),
                                     normalize=query.normalize)
    return m.CompatibilityCheck(is_compatible=not reasons, messages=reasons if query.verbose else None)


@_op("POST", "/compatibility" + _VERSION, "confluentTestCompatibility",
     "Is a schema compatible with a version (Confluent API)", query=m.CompatibilityQuery,
     body=m.RegisterSchemaRequest, response=m.CompatibilityCheck, errors=(404, 422), permission=READ)
def test_compatibility(subject: str, subject_version: str, query: m.CompatibilityQuery,
                       body: m.RegisterSchemaRequest) -> m.CompatibilityCheck:
    return _compatibility(subject, subject_version, query, body)


@_op("POST", "/compatibility" + _SUBJECT + "/versions", "confluentTestCompatibilityAll",
     "Is a schema compatible with a subject (Confluent API)", query=m.CompatibilityQuery,
     body=m.RegisterSchemaRequest, response=m.CompatibilityCheck, errors=(404, 422), permission=READ)
def test_compatibility_all(subject: str, query: m.CompatibilityQuery,
                           body: m.RegisterSchemaRequest) -> m.CompatibilityCheck:
    return _compatibility(subject, None, query, body)


# -- config and mode ------------------------------------------------------------------------------------


def _config_request(body: m.ConfigRequest) -> tuple[str | None, bool | None, ContractConfig]:
    return body.compatibility or body.compatibility_level, body.normalize, body.contracts()


@_op("GET", "/config", "confluentGetConfig", "The registry's configuration",
     query=m.DefaultToGlobalQuery, response=m.ConfluentConfig, errors=(422,), permission=LISTING)
def get_global_config() -> m.ConfluentConfig:
    return m.ConfluentConfig.of(service().get_config(service().subject("", context_only=True), default_to_global=True))


@_op("PUT", "/config", "confluentSetConfig", "Set the registry's configuration",
     body=m.ConfigRequest, response=m.ConfigUpdate, errors=(422,), permission=REGISTRY_ADMIN)
def set_global_config(body: m.ConfigRequest) -> m.ConfigUpdate:
    level, normalize, contracts = _config_request(body)
    return m.ConfigUpdate.of(service().set_config(service().subject("", context_only=True), level, normalize,
                                                  contracts))


@_op("DELETE", "/config", "confluentDeleteConfig", "Reset the registry's configuration",
     response=m.ConfluentConfig, errors=(422,), permission=REGISTRY_ADMIN)
def delete_global_config() -> m.ConfluentConfig:
    return m.ConfluentConfig.of(service().delete_config(service().subject("", context_only=True)))


@_op("GET", "/config/<subject:subject>", "confluentGetSubjectConfig", "A subject's configuration",
     query=m.DefaultToGlobalQuery, response=m.ConfluentConfig, errors=(404, 422), permission=READ)
def get_config(subject: str, query: m.DefaultToGlobalQuery) -> m.ConfluentConfig:
    svc = service()
    return m.ConfluentConfig.of(svc.get_config(_scope(subject), default_to_global=query.default_to_global))


@_op("PUT", "/config/<subject:subject>", "confluentSetSubjectConfig", "Set a subject's configuration",
     body=m.ConfigRequest, response=m.ConfigUpdate, errors=(422,), permission=ADMIN)
def set_config(subject: str, body: m.ConfigRequest) -> m.ConfigUpdate:
    level, normalize, contracts = _config_request(body)
    svc = service()
    return m.ConfigUpdate.of(svc.set_config(_scope(subject), level, normalize, contracts))


@_op("DELETE", "/config/<subject:subject>", "confluentDeleteSubjectConfig",
     "Remove a subject's configuration", response=m.ConfluentConfig, errors=(404, 422), permission=ADMIN)
def delete_config(subject: str) -> m.ConfluentConfig:
    svc = service()
    return m.ConfluentConfig.of(svc.delete_config(_scope(subject)))


@_op("GET", "/mode", "confluentGetMode", "The registry's mode",
     response=m.ConfluentMode, errors=(), permission=LISTING)
def get_global_mode() -> m.ConfluentMode:
    return m.ConfluentMode(mode=service().get_mode(service().subject("", context_only=True), default_to_global=True))


@_op("PUT", "/mode", "confluentSetMode", "Set the registry's mode",
     query=m.ForceQuery, body=m.ConfluentMode, response=m.ConfluentMode, errors=(422,), permission=REGISTRY_ADMIN)
def set_global_mode(query: m.ForceQuery, body: m.ConfluentMode) -> m.ConfluentMode:
    svc = service()
    return m.ConfluentMode(mode=svc.set_mode(svc.subject("", context_only=True), body.mode, force=query.force))


@_op("DELETE", "/mode", "confluentDeleteMode", "Reset the registry's mode",
     response=m.ConfluentMode, errors=(), permission=REGISTRY_ADMIN)
def delete_global_mode() -> m.ConfluentMode:
    return m.ConfluentMode(mode=service().delete_mode(service().subject("", context_only=True)))


@_op("GET", "/mode/<subject:subject>", "confluentGetSubjectMode", "A subject's mode",
     query=m.DefaultToGlobalQuery, response=m.ConfluentMode, errors=(404, 422), permission=READ)
def get_mode(subject: str, query: m.DefaultToGlobalQuery) -> m.ConfluentMode:
    svc = service()
    return m.ConfluentMode(mode=svc.get_mode(_scope(subject), default_to_global=query.default_to_global))


@_op("PUT", "/mode/<subject:subject>", "confluentSetSubjectMode", "Set a subject's mode",
     query=m.ForceQuery, body=m.ConfluentMode, response=m.ConfluentMode, errors=(422,), permission=ADMIN)
def set_mode(subject: str, query: m.ForceQuery, body: m.ConfluentMode) -> m.ConfluentMode:
    svc = service()
    return m.ConfluentMode(mode=svc.set_mode(_scope(subject), body.mode, force=query.force))


@_op("DELETE", "/mode/<subject:subject>", "confluentDeleteSubjectMode", "Remove a subject's mode",
     response=m.ConfluentMode, errors=(422,), permission=ADMIN)
def delete_mode(subject: str) -> m.ConfluentMode:
    svc = service()
    return m.ConfluentMode(mode=svc.delete_mode(_scope(subject)))


# -- contexts and what is not served --------------------------------------------------------------------


@_op("GET", "/contexts", "confluentListContexts", "Contexts (namespaces) holding subjects",
     query=m.PageQuery, response=m.Strings, errors=(), permission=LISTING)
def contexts(query: m.PageQuery) -> m.Strings:
    found = service().contexts(query.offset, query.limit)
    visible = access()
    return m.Strings([c for c in found if visible.allows_within(Permission.READ, Resource.of_namespace(c[1:]))])


@_op("GET", "/associations/<subject:rest>", "confluentAssociations",
     "Not served: answers 404, so clients fall back to topic-named subjects", response=m.ConfluentError,
     media_type=_JSON, errors=(404,), permission=LISTING)
def associations(rest: str) -> m.ConfluentError:
    raise _NotServed("associations are not supported by this registry")


class _NotServed(StreamcatError):
    """An endpoint of newer Confluent versions this registry does not serve."""

    status, code = 404, "NotFound"
