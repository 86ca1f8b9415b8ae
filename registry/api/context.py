"""What the registry's views take from the running application: its service and settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from flask import current_app, g, request
from pydantic import BaseModel

from registry.api.operations import Serialized
from registry.errors import Forbidden
from registry.permissions import Access, Permission, Resource
from registry.service import RegistryService

if TYPE_CHECKING:
    from flask.ctx import _AppCtxGlobals

#: Environ key of an immutable answer a view gave: its key in the answer cache, and the answer.
IMMUTABLE_ANSWER = "streamcat.immutable_answer"
#: Page size of listings when the request gives no ``limit`` and the app configures none.
DEFAULT_LIST_LIMIT = 100


def registry_service() -> RegistryService:
    """The RegistryService of the running application."""
    service: RegistryService = current_app.extensions["streamcat"].registry
    return service


def immutable_answer(key: tuple[object, ...], build: Callable[[], BaseModel]) -> Serialized:
    """The JSON of an answer that never changes once given (what a schema id or an encoding id of
    a group stands for), serialized once and then kept in the service's answer cache.

    ``key`` must start with the namespace and the group, as the service's own keys do: deleting
    the group (or a version for good, through the Confluent API) forgets it with them. The cache
    holds answers only: the shell checked the caller's permission before the view ran, and
    checks it again on every request it answers from the cache itself (catalog_api.server.answers).
    """
    answers = registry_service().answers
    found = answers.get(key)
    if not isinstance(found, Serialized):
        found = Serialized(build().model_dump_json().encode())
        answers.put(key, found)
    # The shell may answer the same request again from the cache while it holds this very answer.
    request.environ[IMMUTABLE_ANSWER] = (key, found)
    return found


def list_limit() -> int:
    """The page size of listings when the request gives no ``limit`` (``STREAMCAT_LIST_LIMIT``)."""
    return int(current_app.config.get("STREAMCAT_LIST_LIMIT", DEFAULT_LIST_LIMIT))


class _Nobody:
    """The access of a request the shell did not check: nothing (fail closed)."""

    def allows(self, permission: Permission, resource: Resource) -> bool:
        return False

    def allows_within(self, permission: Permission, resource: Resource) -> bool:
        return False


def use_access(access: Access, globals_: _AppCtxGlobals | None = None) -> None:
    """Record what the caller of the current request may do (the shell calls this, with the
    request's ``g`` itself when it has it at hand)."""
    (g if globals_ is None else globals_).streamcat_access = access


def access() -> Access:
    """What the caller of the current request may do: listings show what it ``allows`` reading."""
    found: Access = g.get("streamcat_access", _Nobody())
    return found


def require(permission: Permission, resource: Resource) -> None:
    """Forbidden unless the caller has ``permission`` on ``resource``: for the rare rule that depends
    on the body rather than the route (an ALTER TABLE that changes the group's policy)."""
    if not access().allows(permission, resource):
        raise Forbidden(f"this needs {permission} on {resource}")
