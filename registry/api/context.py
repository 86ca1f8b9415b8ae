"""What the registry's views take from the running application: its service and settings."""

from __future__ import annotations

from flask import current_app

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
