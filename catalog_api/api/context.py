"""What the catalog's views take from the running application: its service."""

from __future__ import annotations

from flask import current_app

from catalog_api.service import CatalogService


def catalog_service() -> CatalogService:
    """The CatalogService of the running application."""
    service: CatalogService = current_app.extensions["streamcat"].catalog
    return service
