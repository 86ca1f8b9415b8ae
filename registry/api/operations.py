"""Per-route declarations: what a view reads and answers, kept with the view.

``@operation(bp, "POST", "/<group>/schemas", "addSchema", ..., body=SchemaInfo, response=VersionInfo,
status=201)`` mounts the view on the blueprint and records the declaration. The wrapper it
mounts reads the body and query string into their models (BadRequest if they do not fit) and
hands them to the view as ``body`` and ``query`` (the query is checked even when the view
takes no ``query`` argument: its arguments may be read elsewhere, like the namespace). The
view returns the response model (or None for an empty answer, or ``(model, status)`` when
the status varies), which the wrapper serializes. The OpenAPI builder reads the same
declarations, so the document says what the views do; and ``permission=Need("write", "group")``
says who may call it, which the application shell enforces before the view runs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response
from pydantic import BaseModel

from registry.api.requests import json_body, query_args
from registry.permissions import Need

View = Callable[..., Any]


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document.

    ``status`` is the usual success status, answered with ``response`` (no body when None);
    ``also`` lists other statuses answered with the same model; ``errors`` the statuses
    answered with the error model. ``response`` may instead be a raw JSON schema, for the
    answers that are not JSON (metrics).
    """

    operation_id: str
    summary: str
    status: int = 200
    response: type[BaseModel] | dict[str, Any] | None = None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    errors: tuple[int, ...] = (400, 404)
    also: tuple[int, ...] = ()
    media_type: str = "application/json"
    #: what the caller needs, on the resource the path names; None: nobody may call the route
    #: (the application shell refuses routes that declare no permission)
    permission: Need | None = None
    #: The name and type the document gives a path variable of this route, where the shared
    #: table (openapi.PATH_PARAMETERS) has none or another.
    path: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    #: The body of this route's error answers; None: the shared Error model.
    error_model: type[BaseModel] | None = None
    #: OpenAPI links of the success answer, by name: the ``operationId`` of a request it leads to,
    #: with that request's ``parameters`` (``path.x``, ``query.x``) and ``requestBody`` as runtime
    #: expressions (``$response.body#/id``). Clients and stateful tests follow them; on a
    #: namespace mirror they lead to the mirror's operations, in the same namespace.
    links: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_DECLARED: dict[View, Operation] = {}


@dataclass(frozen=True)
class Serialized:
    """A response body serialized already: the JSON bytes of a wire model, as a cache keeps them.

    A view may return one in place of its response model (registry.api.context.immutable_answer).
    """

    body: bytes


def declared(view: View) -> Operation | None:
    """The declaration of a mounted view function, if it was mounted by :func:`operation`."""
    return _DECLARED.get(view)


def _empty(op: Operation, status: int) -> Response:
    """An answer without a body: of the operation's media type (never Flask's default text/html), or, for a
    204, of none at all."""
    response = Response(status=status, mimetype=op.media_type)
    if status == 204:
        del response.headers["Content-Type"]
    return response


def _respond(op: Operation, result: Any) -> Response:
    status = op.status
    if isinstance(result, tuple):
        result, status = result
    if result is None:
        return _empty(op, status)
    if isinstance(result, Serialized):
        return Response(result.body, status=status, mimetype=op.media_type)
    if not isinstance(result, BaseModel):
        raise TypeError(f"view of {op.operation_id} returned {type(result).__name__}, not a wire model")
    return Response(result.model_dump_json(), status=status, mimetype=op.media_type)


def operation(
    bp: Blueprint,
    method: str,
    rule: str,
    operation_id: str,
    summary: str,
    **declaration: Any,
) -> Callable[[View], View]:
    """Mount the decorated view on ``bp`` at ``rule`` for ``method``, declared as ``operation_id``
    (the other :class:`Operation` fields as keywords)."""
    op = Operation(operation_id, summary, **declaration)

    def mount(view: View) -> View:
        wants_query = "query" in inspect.signature(view).parameters

        @functools.wraps(view)
        def endpoint(**path: Any) -> Response:
            if op.query is not None:
                query = query_args(op.query)
                if wants_query:
                    path["query"] = query
            if op.body is not None:
                path["body"] = json_body(op.body)
            return _respond(op, view(**path))

        _DECLARED[endpoint] = op
        bp.add_url_rule(rule, view_func=endpoint, methods=[method])
        return view

    return mount
