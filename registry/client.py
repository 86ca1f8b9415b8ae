"""A Python client for every registry endpoint.

Answers that never change (schema by id, encoding info, an encoding id once given)
are cached for the life of the client. Errors are raised as the same typed errors
the server uses (``registry.errors``), so callers catch ``IncompatibleSchema``,
``GroupNotFound`` and so on.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import requests
from pydantic import BaseModel

from registry import errors
from registry.api import models as wire
from registry.api.validation import parse_json
from registry.credentials import ClientCert, Credentials
from registry.formats.base import Incompatibility
from registry.ids import CodecName, EncodingId, GroupName, SchemaId, TypeName, Version
from registry.model import (
    NO_CODEC,
    CodecType,
    Compatibility,
    EncodingInfo,
    GroupProperties,
    SchemaInfo,
    SchemaWithVersion,
    SerializationFormat,
    VersionInfo,
)

M = TypeVar("M", bound=BaseModel)


def _error_classes() -> dict[str, type[errors.StreamcatError]]:
    # Breadth first, in definition order: of the classes sharing a code, the one nearest
    # StreamcatError wins, so registry.errors' own come before a subclass some other API
    # (the Confluent one) defines with the same code.
    found: dict[str, type[errors.StreamcatError]] = {}
    pending: deque[type[errors.StreamcatError]] = deque([errors.StreamcatError])
    while pending:
        cls = pending.popleft()
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


_BY_STATUS: dict[int, type[errors.StreamcatError]] = {
    400: errors.BadRequest,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    409: errors.Conflict,
    412: errors.CodecNotRegistered,
    413: errors.PayloadTooLarge,
    417: errors.FormatMismatch,
}


def raise_for(response: requests.Response) -> None:
    """Raise the typed error a non-2xx response stands for."""
    if response.ok:
        return
    try:
        body = response.json()["error"]
        code, message = body["code"], body["message"]
    except (ValueError, KeyError, TypeError):
        body, code, message = {}, "", response.text or response.reason
    cls = _error_classes().get(code) or _BY_STATUS.get(response.status_code, errors.StreamcatError)
    if issubclass(cls, errors.IncompatibleSchema):
        reasons = [wire.Reason.model_validate(r, by_name=False).to_domain() for r in body.get("reasons", [])]
        raise cls(message, reasons)
    # Subclasses may take more constructor arguments; the message is what travels.
    error = cls.__new__(cls)
    errors.StreamcatError.__init__(error, message)
    error.status = response.status_code
    raise error


def read(model: type[M], body: Any) -> M:
    """An answer of the server as its wire model (pydantic's ValidationError if it is not one)."""
    return model.model_validate(body, by_name=False)


def write(model: BaseModel) -> Any:
    """A request body from its wire model, checked as the server will check it: BadRequest, with
    the server's message, for what the server would refuse."""
    body = model.model_dump(mode="json", exclude_unset=True)
    parse_json(type(model), body)
    return body


def _schema_versions(body: Any) -> list[SchemaWithVersion]:
    return [s.to_domain() for s in read(wire.SchemaVersionsList, body).schemas]


def _reasons(answer: wire.Valid | wire.CanRead) -> list[Incompatibility]:
    return [r.to_domain() for r in answer.reasons]


class RegistryClient:
    """Talks to a Streamcat (or Pravega) schema registry over REST.

    Credentials: ``token=`` (Bearer) or ``auth=(user, password)`` (Basic); TLS: ``verify=`` (a PEM
    CA bundle), ``cert=`` (a client certificate, for mutual TLS). See ``registry.credentials``.
    """

    def __init__(
        self,
        url: str,
        namespace: str | None = None,
        *,
        timeout: float = 30.0,
        session: requests.Session | None = None,
        token: str | None = None,
        auth: tuple[str, str] | None = None,
        verify: bool | str | None = None,
        cert: ClientCert | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.namespace = namespace or ""
        self.timeout = timeout
        # On the session, so that whatever shares it (a re-scoped client, the stream client) carries them.
        self.http = Credentials.of(token=token, auth=auth, verify=verify, cert=cert).session(session)
        self._lock = threading.Lock()
        self._schemas: dict[tuple[str, int], SchemaInfo] = {}
        self._global_schemas: dict[int, SchemaInfo] = {}
        self._encodings: dict[tuple[str, int], EncodingInfo] = {}
        self._encoding_ids: dict[tuple[str, VersionInfo, str], EncodingId] = {}

    # -- plumbing -----------------------------------------------------------------------------

    def _group_url(self, group: str, suffix: str = "") -> str:
        return f"{self.url}/v1/groups/{quote(group, safe='')}{suffix}"

    def _call(self, method: str, url: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        query = dict(params or {})
        if self.namespace:
            query["namespace"] = self.namespace
        response = self.http.request(method, url, json=body, params=query, timeout=self.timeout)
        raise_for(response)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    # -- groups ---------------------------------------------------------------------------------

    def list_groups(self, page_size: int = 100) -> Iterator[tuple[GroupName, GroupProperties]]:
        """Every group of the namespace, following continuation tokens."""
        token: str | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if token:
                params["continuationToken"] = token
            page = read(wire.ListGroupsResponse, self._call("GET", f"{self.url}/v1/groups", params=params))
            for name, props in page.groups.items():
                yield GroupName(name), props.to_domain()
            if len(page.groups) < page_size:
                return
            token = page.continuation_token

    def create_group(self, group: str, properties: GroupProperties) -> None:
        """Create a group; AlreadyExists if it does."""
        body = wire.CreateGroupRequest.model_construct(
            group_name=group, group_properties=wire.GroupProperties.of(properties)
        )
        self._call("POST", f"{self.url}/v1/groups", write(body))

    def get_group(self, group: str) -> GroupProperties:
        """A group's properties."""
        return read(wire.GroupProperties, self._call("GET", self._group_url(group))).to_domain()

    def delete_group(self, group: str) -> None:
        """Delete a group with all its schemas."""
        self._call("DELETE", self._group_url(group))

    def history(self, group: str) -> list[dict[str, Any]]:
        """The group's history records, as JSON."""
        body = self._call("GET", self._group_url(group, "/history"))
        read(wire.GroupHistory, body)
        return list(body["history"])

    def update_compatibility(
        self, group: str, compatibility: Compatibility, previous: Compatibility | None = None
    ) -> None:
        """Change the policy; with ``previous``, only if it is still the current one."""
        body = wire.UpdateCompatibilityRequest.model_construct(
            compatibility=wire.Compatibility.of(compatibility),
            previous_compatibility=wire.Compatibility.of(previous) if previous is not None else None,
        )
        self._call("PUT", self._group_url(group, "/compatibility"), write(body))

    # -- schemas ----------------------------------------------------------------------------------

    def add_schema(self, group: str, schema: SchemaInfo) -> VersionInfo:
        """Register a schema (idempotent); IncompatibleSchema carries the reasons."""
        body = self._call("POST", self._group_url(group, "/schemas"), write(wire.SchemaInfo.of(schema)))
        return read(wire.VersionInfo, body).to_domain()

    def latest_schemas(self, group: str, type_name: str | None = None) -> list[SchemaWithVersion]:
        """The latest schema of each type (or of ``type_name``)."""
        params = {"type": type_name} if type_name else None
        return _schema_versions(self._call("GET", self._group_url(group, "/schemas"), params=params))

    def versions(self, group: str, type_name: str | None = None) -> list[SchemaWithVersion]:
        """Every live version, oldest first."""
        params = {"type": type_name} if type_name else None
        return _schema_versions(self._call("GET", self._group_url(group, "/schemas/versions"), params=params))

    def find_version(self, group: str, schema: SchemaInfo) -> VersionInfo:
        """The version of ``schema`` in the group; SchemaNotFound if absent."""
        body = self._call("POST", self._group_url(group, "/schemas/versions/find"), write(wire.SchemaInfo.of(schema)))
        return read(wire.VersionInfo, body).to_domain()

    def validate(
        self, group: str, schema: SchemaInfo, compatibility: Compatibility | None = None
    ) -> list[Incompatibility]:
        """Why the schema would be refused (empty list: it would be accepted)."""
        body = wire.ValidateRequest.model_construct(
            schema_info=wire.SchemaInfo.of(schema),
            compatibility=wire.Compatibility.of(compatibility) if compatibility is not None else None,
        )
        answer = self._call("POST", self._group_url(group, "/schemas/versions/validate"), write(body))
        return _reasons(read(wire.Valid, answer))

    def can_read(self, group: str, schema: SchemaInfo) -> list[Incompatibility]:
        """Why the schema cannot read all the group's data (empty list: it can)."""
        body = write(wire.SchemaInfo.of(schema))
        answer = self._call("POST", self._group_url(group, "/schemas/versions/canRead"), body)
        return _reasons(read(wire.CanRead, answer))

    def schema_by_id(self, group: str, schema_id: SchemaId) -> SchemaInfo:
        """The schema with that id (cached: ids never change meaning)."""
        key = (group, schema_id)
        found = self._schemas.get(key)
        if found is None:
            body = self._call("GET", self._group_url(group, f"/schemas/schema/{schema_id}"))
            found = read(wire.SchemaInfo, body).to_domain()
            with self._lock:
                self._schemas[key] = found
        return found

    def schema_by_global_id(self, schema_id: SchemaId) -> SchemaInfo:
        """The schema a global id names, whatever group holds it (cached: ids never change meaning).

        The id Confluent-framed events carry, asked of the Confluent API (``GET /schemas/ids/{id}``,
        Protobuf as serialized descriptors); see ``registry.serde.confluent.schema_from_confluent``
        for how the answer becomes a SchemaInfo. SchemaNotFound if no schema has that id.
        """
        found = self._global_schemas.get(schema_id)
        if found is None:
            # Imported here: the serializers import this module.
            from registry.serde.confluent import schema_from_confluent

            def reference(subject: str, version: int) -> Any:
                return self._confluent(f"/subjects/{quote(subject, safe='')}/versions/{version}")

            found = schema_from_confluent(self._confluent(f"/schemas/ids/{int(schema_id)}"), reference)
            with self._lock:
                self._global_schemas[schema_id] = found
        return found

    def _confluent(self, path: str) -> Any:
        """A GET of the Confluent API (no namespace: its ids are global), Protobuf as descriptors."""
        response = self.http.get(f"{self.url}{path}", params={"format": "serialized"}, timeout=self.timeout)
        if response.status_code == 404:
            try:
                message = str(response.json()["message"])
            except (ValueError, KeyError, TypeError):
                message = response.text or response.reason
            raise errors.SchemaNotFound(message)
        raise_for(response)
        return response.json()

    def _version_url(self, group: str, fmt: SerializationFormat, type_name: str, version: Version) -> str:
        return self._group_url(group, f"/schemas/format/{fmt.name}/type/{quote(type_name, safe='')}/versions/{version}")

    def schema_by_version(self, group: str, fmt: SerializationFormat, type_name: str, version: Version) -> SchemaInfo:
        """The schema of a version."""
        params = {"fullTypeName": fmt.full_type_name} if fmt.full_type_name else None
        url = self._version_url(group, fmt, type_name, version)
        return read(wire.SchemaInfo, self._call("GET", url, params=params)).to_domain()

    def delete_by_id(self, group: str, schema_id: SchemaId) -> None:
        """Soft-delete by schema id."""
        self._call("DELETE", self._group_url(group, f"/schemas/schema/{schema_id}"))

    def delete_by_version(self, group: str, fmt: SerializationFormat, type_name: str, version: Version) -> None:
        """Soft-delete by version."""
        params = {"fullTypeName": fmt.full_type_name} if fmt.full_type_name else None
        self._call("DELETE", self._version_url(group, fmt, type_name, version), params=params)

    def added_to(self, schema: SchemaInfo) -> dict[GroupName, VersionInfo]:
        """The groups holding ``schema``, with its version in each."""
        body = self._call("POST", f"{self.url}/v1/schemas/addedTo", write(wire.SchemaInfo.of(schema)))
        return {GroupName(k): v.to_domain() for k, v in read(wire.AddedTo, body).groups.items()}

    # -- codecs and encodings -----------------------------------------------------------------------

    def codec_types(self, group: str) -> list[CodecType]:
        """Codec types registered in the group."""
        body = self._call("GET", self._group_url(group, "/codecTypes"))
        return [c.to_domain() for c in read(wire.CodecTypes, body).codec_types]

    def add_codec_type(self, group: str, codec: CodecType) -> None:
        """Register a codec type."""
        self._call("POST", self._group_url(group, "/codecTypes"), write(wire.CodecType.of(codec)))

    def encoding_id(self, group: str, version: VersionInfo, codec: CodecName = NO_CODEC) -> EncodingId:
        """Get or create the encoding id of (version, codec) (cached)."""
        key = (group, version, codec)
        found = self._encoding_ids.get(key)
        if found is None:
            request = wire.GetEncodingIdRequest.model_construct(
                version_info=wire.VersionInfo.of(version), codec_type=codec
            )
            body = self._call("PUT", self._group_url(group, "/encodings"), write(request))
            found = EncodingId(read(wire.EncodingId, body).encoding_id)
            with self._lock:
                self._encoding_ids[key] = found
        return found

    def encoding_info(self, group: str, encoding: EncodingId) -> EncodingInfo:
        """What an encoding id stands for (cached: encoding ids are immutable)."""
        key = (group, encoding)
        found = self._encodings.get(key)
        if found is None:
            body = self._call("GET", self._group_url(group, f"/encodings/{encoding}"))
            found = read(wire.EncodingInfo, body).to_domain(encoding)
            with self._lock:
                self._encodings[key] = found
        return found

    def ping(self) -> bool:
        """Whether the server answers."""
        return self.http.get(f"{self.url}/ping", timeout=self.timeout).ok


def schema_info(fmt: str, data: bytes | str, type_name: str = "", **properties: str) -> SchemaInfo:
    """A SchemaInfo from a format name and schema text or bytes (a convenience for callers)."""
    raw = data.encode() if isinstance(data, str) else data
    return SchemaInfo(TypeName(type_name), SerializationFormat(fmt), raw, dict(properties))
