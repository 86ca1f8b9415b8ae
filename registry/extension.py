"""The Flask extension that owns the database engine and the services built on it."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask
from sqlalchemy import Engine

from catalog_api.service import CatalogService
from catalog_api.sql import SqlCatalogStore
from registry.config import Settings
from registry.db import make_engine
from registry.service import RegistryService
from registry.store.sql import SqlRegistryStore


@dataclass
class Streamcat:
    """Everything a request handler needs: settings, engine, services."""

    settings: Settings
    engine: Engine
    registry: RegistryService
    catalog: CatalogService

    @classmethod
    def init_app(cls, app: Flask, settings: Settings) -> Streamcat:
        """Build the engine and services for ``settings`` and attach them to ``app``."""
        engine = make_engine(settings.database_url)
        registry_store = SqlRegistryStore(engine)
        registry = RegistryService(registry_store)
        catalog = CatalogService(SqlCatalogStore(engine, registry_store), registry, settings.warehouse)
        ext = cls(settings=settings, engine=engine, registry=registry, catalog=catalog)
        app.extensions["streamcat"] = ext
        return ext
