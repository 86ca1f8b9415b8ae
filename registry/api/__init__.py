"""REST blueprints of the schema registry."""

from __future__ import annotations

from flask import current_app

from registry.service import RegistryService


def registry_service() -> RegistryService:
    """The RegistryService of the running application."""
    service: RegistryService = current_app.extensions["streamcat"].registry
    return service
