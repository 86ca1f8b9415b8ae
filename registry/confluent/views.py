"""The Confluent Schema Registry REST API, at the server's root (``http://host:9092`` is a
Confluent URL): subjects, schemas by id, compatibility, config, mode, contexts.

Errors of these routes are Confluent's ``{"error_code": N, "message": ...}`` (the blueprint's own
handlers); answers are ``application/vnd.schemaregistry.v1+json`` unless the client accepts only
``application/vnd.schemaregistry+json`` or ``application/json``. Subject names with ``/`` arrive
percent-encoded, which the server decodes before routing: ``<path:subject>`` takes them whole.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from registry.api.operations import operation
from registry.confluent import models as m
from registry.confluent.errors import InvalidCompatibilityLevel, InvalidSchema, confluent_code, http_error_code
from registry.confluent.model import SCHEMA_TYPES, SubjectVersion
from registry.confluent.service import ConfluentService
from registry.errors import StreamcatError

log = logging.getLogger(__name__)

bp = Blueprint("confluent", __name__)

#: Where the application keeps the ConfluentService.
SERVICE_KEY = "streamcat.confluent"
#: Media types of the Confluent API, the preferred first.
MEDIA_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json")
_JSON = MEDIA_TYPES[0]
_SUBJECT = "/subjects/<path:subject>"
_VERSION = _SUBJECT + "/versions/<subject_version>"


def service() -> ConfluentService:
    """The ConfluentService of the running application."""
    found: ConfluentService = current_app.extensions[SERVICE_KEY]
    return found


# -- errors and media types -------------------------------------------------------------------------


def _error(status: int, code: int, message: str) -> Response:
    response = jsonify(m.Error(error_code=code, message=message).model_dump())
    response.status_code = status
    return response


@bp.errorhandler(StreamcatError)
def _domain_error(error: StreamcatError) -> Response:
    status, code = confluent_code(error)
    return _error(status, code, error.message)


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
            response.set_data(m.Error(error_code=http_error_code(response.status_code), message=message)
                              .model_dump_json())
    if response.mimetype in MEDIA_TYPES or response.is_json:
        accepted = request.accept_mimetypes
        chosen = next((t for t in MEDIA_TYPES if accepted.quality(t) > 0), _JSON) if accepted else _JSON
        response.mimetype = chosen
    return response


def _version(svc: ConfluentService, found: SubjectVersion, fmt: str | None) -> m.Schema:
    references = svc.references(found.schema, found.subject.namespace)
    return m.Schema.of(found, svc.text(found.schema, fmt), references)


def _schema(body: m.RegisterSchemaRequest) -> m.RegisterSchemaRequest:
    if body.metadata and any(body.metadata.values()):
        raise InvalidSchema("schema metadata (data contracts) is not supported by this registry")
    if body.rule_set and any(body.rule_set.values()):
        raise InvalidSchema("schema rule sets (data contracts) are not supported by this registry")
    return body


# -- subjects -----------------------------------------------------------------------------------------


@operation(bp, "GET", "/subjects", "confluentListSubjects", "Subjects (Confluent API)",
           query=m.SubjectsQuery, response=m.Strings, media_type=_JSON, errors=(422,))
def list_subjects(query: m.SubjectsQuery) -> m.Strings:
    return m.Strings(service().list_subjects(
        query.subject_prefix, deleted=query.deleted, deleted_only=query.deleted_only, offset=query.offset,
        limit=query.limit,
    ))


@operation(bp, "POST", _SUBJECT, "confluentLookUpSchema", "Version of a schema in a subject (Confluent API)",
           query=m.LookupQuery, body=m.RegisterSchemaRequest, response=m.Schema, media_type=_JSON,
           errors=(404, 422))
def look_up(subject: str, query: m.LookupQuery, body: m.RegisterSchemaRequest) -> m.Schema:
    svc = service()
    found = svc.lookup(svc.subject(subject), _schema(body).to_domain(), normalize=query.normalize,
                       deleted=query.deleted)
    return _version(svc, found, query.format)


@operation(bp, "DELETE", _SUBJECT, "confluentDeleteSubject", "Delete a subject (Confluent API)",
           query=m.PermanentQuery, response=m.Numbers, media_type=_JSON, errors=(404, 422))
def delete_subject(subject: str, query: m.PermanentQuery) -> m.Numbers:
    svc = service()
    return m.Numbers(svc.delete_subject(svc.subject(subject), permanent=query.permanent))


@operation(bp, "GET", _SUBJECT + "/versions", "confluentListVersions", "Versions of a subject (Confluent API)",
           query=m.VersionsQuery, response=m.Numbers, media_type=_JSON, errors=(404, 422))
def list_versions(subject: str, query: m.VersionsQuery) -> m.Numbers:
    svc = service()
    return m.Numbers(svc.versions(svc.subject(subject), deleted=query.deleted, deleted_only=query.deleted_only,
                                  offset=query.offset, limit=query.limit))


@operation(bp, "POST", _SUBJECT + "/versions", "confluentRegisterSchema", "Register a schema (Confluent API)",
           query=m.RegisterQuery, body=m.RegisterSchemaRequest, response=m.RegisterSchemaResponse,
           media_type=_JSON, errors=(409, 413, 422))
def register(subject: str, query: m.RegisterQuery, body: m.RegisterSchemaRequest) -> m.RegisterSchemaResponse:
    svc = service()
    schema_id, _number = svc.register(svc.subject(subject), _schema(body).to_domain(), query.normalize)
    return m.RegisterSchemaResponse(id=schema_id)


@operation(bp, "GET", _VERSION, "confluentGetVersion", "A version of a subject (Confluent API)",
           query=m.FormatQuery, response=m.Schema, media_type=_JSON, errors=(404, 422))
def get_version(subject: str, subject_version: str, query: m.FormatQuery) -> m.Schema:
    svc = service()
    found = svc.version(svc.subject(subject), subject_version, deleted=query.deleted)
    return _version(svc, found, query.format)


@operation(bp, "DELETE", _VERSION, "confluentDeleteVersion", "Delete a version (Confluent API)",
           query=m.PermanentQuery, response=m.Number, media_type=_JSON, errors=(404, 422))
def delete_version(subject: str, subject_version: str, query: m.PermanentQuery) -> m.Number:
    svc = service()
    return m.Number(svc.delete_version(svc.subject(subject), subject_version, permanent=query.permanent))


@operation(bp, "GET", _VERSION + "/schema", "confluentGetVersionSchema", "The schema of a version, as is",
           query=m.FormatQuery, response=m.RawSchema, media_type=_JSON, errors=(404, 422))
def get_version_schema(subject: str, subject_version: str, query: m.FormatQuery) -> m.RawSchema:
    svc = service()
    found = svc.version(svc.subject(subject), subject_version, deleted=query.deleted)
    return m.RawSchema(svc.text(found.schema, query.format))


@operation(bp, "GET", _VERSION + "/referencedby", "confluentReferencedBy", "Schemas referencing a version",
           query=m.PageQuery, response=m.Numbers, media_type=_JSON, errors=(404, 422))
def referenced_by(subject: str, subject_version: str, query: m.PageQuery) -> m.Numbers:
    svc = service()
    offset, limit = svc.page(query.offset, query.limit)
    return m.Numbers(svc.referenced_by(svc.subject(subject), subject_version)[offset : offset + limit])


# -- schemas --------------------------------------------------------------------------------------------


@operation(bp, "GET", "/schemas", "confluentListSchemas", "Versions of every subject (Confluent API)",
           query=m.SchemasQuery, response=m.Schemas, media_type=_JSON, errors=(422,))
def list_schemas(query: m.SchemasQuery) -> m.Schemas:
    svc = service()
    found = svc.list_schemas(query.subject_prefix, deleted=query.deleted, latest_only=query.latest_only,
                             offset=query.offset, limit=query.limit)
    return m.Schemas([_version(svc, v, None) for v in found])


@operation(bp, "GET", "/schemas/types", "confluentSchemaTypes", "Schema types (Confluent API)",
           response=m.Strings, media_type=_JSON, errors=())
def schema_types() -> m.Strings:
    return m.Strings(sorted(SCHEMA_TYPES))


def _schema_id(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else -1


@operation(bp, "GET", "/schemas/ids/<schema_id>", "confluentGetSchemaById", "A schema by its global id",
           query=m.SchemaByIdQuery, response=m.SchemaString, media_type=_JSON, errors=(404, 422))
def get_schema(schema_id: str, query: m.SchemaByIdQuery) -> m.SchemaString:
    svc = service()
    found = svc.schema_by_id(_schema_id(schema_id))
    references = svc.references(found, svc.context_of(found, query.subject))
    max_id = svc.max_id() if query.fetch_max_id else None
    return m.SchemaString.of(found, svc.text(found, query.format), references, max_id)


@operation(bp, "GET", "/schemas/ids/<schema_id>/schema", "confluentGetSchemaTextById", "A schema by id, as is",
           query=m.SchemaByIdQuery, response=m.RawSchema, media_type=_JSON, errors=(404, 422))
def get_schema_text(schema_id: str, query: m.SchemaByIdQuery) -> m.RawSchema:
    svc = service()
    return m.RawSchema(svc.text(svc.schema_by_id(_schema_id(schema_id)), query.format))


@operation(bp, "GET", "/schemas/ids/<schema_id>/subjects", "confluentSubjectsOfSchema", "Subjects of a schema",
           query=m.UsesQuery, response=m.Strings, media_type=_JSON, errors=(404, 422))
def subjects_of_schema(schema_id: str, query: m.UsesQuery) -> m.Strings:
    found = service().subjects_holding(_schema_id(schema_id), query.subject, deleted=query.deleted,
                                       offset=query.offset, limit=query.limit)
    return m.Strings([s.qualified for s in found])


@operation(bp, "GET", "/schemas/ids/<schema_id>/versions", "confluentVersionsOfSchema",
           "Subject versions of a schema", query=m.UsesQuery, response=m.SubjectVersions, media_type=_JSON,
           errors=(404, 422))
def versions_of_schema(schema_id: str, query: m.UsesQuery) -> m.SubjectVersions:
    uses = service().uses(_schema_id(schema_id), query.subject, deleted=query.deleted, offset=query.offset,
                          limit=query.limit)
    return m.SubjectVersions([m.SubjectVersion(subject=s.qualified, version=n) for s, n in uses])


# -- compatibility --------------------------------------------------------------------------------------


def _compatibility(subject: str, version: str | None, query: m.CompatibilityQuery,
                   body: m.RegisterSchemaRequest) -> m.CompatibilityCheck:
    svc = service()
    reasons = svc.test_compatibility(svc.subject(subject), version, _schema(body).to_domain(),
                                     normalize=query.normalize)
    return m.CompatibilityCheck(is_compatible=not reasons, messages=reasons if query.verbose else None)


@operation(bp, "POST", "/compatibility" + _VERSION, "confluentTestCompatibility",
           "Is a schema compatible with a version (Confluent API)", query=m.CompatibilityQuery,
           body=m.RegisterSchemaRequest, response=m.CompatibilityCheck, media_type=_JSON, errors=(404, 422))
def test_compatibility(subject: str, subject_version: str, query: m.CompatibilityQuery,
                       body: m.RegisterSchemaRequest) -> m.CompatibilityCheck:
    return _compatibility(subject, subject_version, query, body)


@operation(bp, "POST", "/compatibility" + _SUBJECT + "/versions", "confluentTestCompatibilityAll",
           "Is a schema compatible with a subject (Confluent API)", query=m.CompatibilityQuery,
           body=m.RegisterSchemaRequest, response=m.CompatibilityCheck, media_type=_JSON, errors=(404, 422))
def test_compatibility_all(subject: str, query: m.CompatibilityQuery,
                           body: m.RegisterSchemaRequest) -> m.CompatibilityCheck:
    return _compatibility(subject, None, query, body)


# -- config and mode ------------------------------------------------------------------------------------


def _config_request(body: m.ConfigRequest) -> tuple[str | None, bool | None]:
    unsupported = [name for name in ("compatibility_group", "default_metadata", "override_metadata",
                                     "default_rule_set", "override_rule_set") if getattr(body, name)]
    if unsupported:
        raise InvalidCompatibilityLevel(f"{', '.join(unsupported)} (data contracts) are not supported")
    return body.compatibility or body.compatibility_level, body.normalize


@operation(bp, "GET", "/config", "confluentGetConfig", "The registry's configuration",
           query=m.DefaultToGlobalQuery, response=m.Config, media_type=_JSON, errors=(422,))
def get_global_config() -> m.Config:
    return m.Config.of(service().get_config(service().subject("", context_only=True), default_to_global=True))


@operation(bp, "PUT", "/config", "confluentSetConfig", "Set the registry's configuration",
           body=m.ConfigRequest, response=m.ConfigUpdate, media_type=_JSON, errors=(422,))
def set_global_config(body: m.ConfigRequest) -> m.ConfigUpdate:
    level, normalize = _config_request(body)
    return m.ConfigUpdate.of(service().set_config(service().subject("", context_only=True), level, normalize))


@operation(bp, "DELETE", "/config", "confluentDeleteConfig", "Reset the registry's configuration",
           response=m.Config, media_type=_JSON, errors=(422,))
def delete_global_config() -> m.Config:
    return m.Config.of(service().delete_config(service().subject("", context_only=True)))


@operation(bp, "GET", "/config/<path:subject>", "confluentGetSubjectConfig", "A subject's configuration",
           query=m.DefaultToGlobalQuery, response=m.Config, media_type=_JSON, errors=(404, 422))
def get_config(subject: str, query: m.DefaultToGlobalQuery) -> m.Config:
    svc = service()
    return m.Config.of(svc.get_config(svc.subject(subject, context_only=True),
                                      default_to_global=query.default_to_global))


@operation(bp, "PUT", "/config/<path:subject>", "confluentSetSubjectConfig", "Set a subject's configuration",
           body=m.ConfigRequest, response=m.ConfigUpdate, media_type=_JSON, errors=(422,))
def set_config(subject: str, body: m.ConfigRequest) -> m.ConfigUpdate:
    level, normalize = _config_request(body)
    svc = service()
    return m.ConfigUpdate.of(svc.set_config(svc.subject(subject, context_only=True), level, normalize))


@operation(bp, "DELETE", "/config/<path:subject>", "confluentDeleteSubjectConfig",
           "Remove a subject's configuration", response=m.Config, media_type=_JSON, errors=(404, 422))
def delete_config(subject: str) -> m.Config:
    svc = service()
    return m.Config.of(svc.delete_config(svc.subject(subject, context_only=True)))


@operation(bp, "GET", "/mode", "confluentGetMode", "The registry's mode",
           response=m.Mode, media_type=_JSON, errors=())
def get_global_mode() -> m.Mode:
    return m.Mode(mode=service().get_mode(service().subject("", context_only=True), default_to_global=True))


@operation(bp, "PUT", "/mode", "confluentSetMode", "Set the registry's mode",
           query=m.ForceQuery, body=m.Mode, response=m.Mode, media_type=_JSON, errors=(422,))
def set_global_mode(query: m.ForceQuery, body: m.Mode) -> m.Mode:
    svc = service()
    return m.Mode(mode=svc.set_mode(svc.subject("", context_only=True), body.mode, force=query.force))


@operation(bp, "DELETE", "/mode", "confluentDeleteMode", "Reset the registry's mode",
           response=m.Mode, media_type=_JSON, errors=())
def delete_global_mode() -> m.Mode:
    return m.Mode(mode=service().delete_mode(service().subject("", context_only=True)))


@operation(bp, "GET", "/mode/<path:subject>", "confluentGetSubjectMode", "A subject's mode",
           query=m.DefaultToGlobalQuery, response=m.Mode, media_type=_JSON, errors=(404, 422))
def get_mode(subject: str, query: m.DefaultToGlobalQuery) -> m.Mode:
    svc = service()
    return m.Mode(mode=svc.get_mode(svc.subject(subject, context_only=True),
                                    default_to_global=query.default_to_global))


@operation(bp, "PUT", "/mode/<path:subject>", "confluentSetSubjectMode", "Set a subject's mode",
           query=m.ForceQuery, body=m.Mode, response=m.Mode, media_type=_JSON, errors=(422,))
def set_mode(subject: str, query: m.ForceQuery, body: m.Mode) -> m.Mode:
    svc = service()
    return m.Mode(mode=svc.set_mode(svc.subject(subject, context_only=True), body.mode, force=query.force))


@operation(bp, "DELETE", "/mode/<path:subject>", "confluentDeleteSubjectMode", "Remove a subject's mode",
           response=m.Mode, media_type=_JSON, errors=(422,))
def delete_mode(subject: str) -> m.Mode:
    svc = service()
    return m.Mode(mode=svc.delete_mode(svc.subject(subject, context_only=True)))


# -- contexts and what is not served --------------------------------------------------------------------


@operation(bp, "GET", "/contexts", "confluentListContexts", "Contexts (namespaces) holding subjects",
           query=m.PageQuery, response=m.Strings, media_type=_JSON, errors=())
def contexts(query: m.PageQuery) -> m.Strings:
    return m.Strings(service().contexts(query.offset, query.limit))


@operation(bp, "GET", "/associations/<path:rest>", "confluentAssociations",
           "Not served: answers 404, so clients fall back to topic-named subjects", response=m.Error,
           media_type=_JSON, errors=(404,))
def associations(rest: str) -> m.Error:
    raise _NotServed("associations are not supported by this registry")


class _NotServed(StreamcatError):
    """An endpoint of newer Confluent versions this registry does not serve."""

    status, code = 404, "NotFound"
