"""What the registry's views take from the running application: its service and settings."""

from __future__ import annotations

from flask import current_app, g

from registry.errors import Forbidden
from registry.permissions import Access, Permission, Resource
from registry.service import RegistryService

#: Page size of listings when the request gives no ``limit`` and the app configures none.
DEFAULT_LIST_LIMIT = 100


def registry_service() -> RegistryService:
    """The RegistryService of the running application."""
    service: RegistryService = current_app.extensions["streamcat"].registry
    return service


def list_limit() -> int:
    """The page size of listings when the request gives no ``limit`` (``STREAMCAT_LIST_LIMIT``)."""
    return int(current_app.config.get("STREAMCAT_LIST_LIMIT", DEFAULT_LIST_LIMIT))


class _Nobody:
    """The access of a request the shell did not check: nothing (fail closed)."""

    def allows(self, permission: Permission, resource: Resource) -> bool:
        return False

    def allows_within(self, permission: Permission, resource: Resource) -> bool:
        return False


def use_access(access: Access) -> None:
    """Record what the caller of the current request may do (the shell calls this)."""
    g.streamcat_access = access


def access() -> Access:
    """What the caller of the current request may do: listings show what it ``allows`` reading."""
    found: Access = g.get("streamcat_access", _Nobody())
    return found


def require(permission: Permission, resource: Resource) -> None:
    """Forbidden unless the caller has ``permission`` on ``resource``: for the rare rule that depends
    on the body rather than the route (an ALTER TABLE that changes the group's policy)."""
    if not access().allows(permission, resource):
        raise Forbidden(f"this needs {permission} on {resource}")
