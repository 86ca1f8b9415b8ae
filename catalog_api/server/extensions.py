"""The Flask extension that owns the database engine and wires stores and services together.

This is where the layers meet: the registry's store and service, and the catalog's store and
service over the same engine, with the catalog reaching the registry's groups inside its own
transactions (a registry service over a store bound to the catalog's session).
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from catalog_api.groups import SchemaGroups
from catalog_api.materialized.service import MaterializedService
from catalog_api.materialized.store import SqlMaterializedStore
from catalog_api.server.auth.store import PrincipalStore
from catalog_api.server.config import Settings
from catalog_api.service import CatalogService
from catalog_api.sql import SqlCatalogStore
from catalog_api.views.service import ViewService
from catalog_api.views.store import SqlViewStore
from registry.db import make_engine
from registry.service import RegistryService
from registry.store.sql import SqlRegistryStore


@dataclass
class Streamcat:
    """Everything a request handler needs: settings, engine, services, and who may call them."""

    settings: Settings
    engine: Engine
    registry: RegistryService
    catalog: CatalogService
    #: users, API tokens and grants (read on every authenticated request)
    principals: PrincipalStore
    #: views of the catalog's scopes (Spark's ViewCatalog)
    views: ViewService
    #: materialized tables: definitions, refresh state, the refresher's lease
    materialized: MaterializedService

    @classmethod
    def create(cls, settings: Settings) -> Streamcat:
        """The engine and services for ``settings``, outside any application (admin commands use this)."""
        engine = make_engine(settings.database_url)
        registry_store = SqlRegistryStore(engine)
        registry = RegistryService(registry_store)

        def groups_in(session: Session) -> SchemaGroups:
            # The same service (and caches) over a store that works inside the catalog's transaction.
            return registry.using(registry_store.bound(session))

        catalog = CatalogService(
            SqlCatalogStore(engine, groups_in), registry, settings.warehouse, settings.allowed_locations
        )
        principals = PrincipalStore(engine)
        views = ViewService(SqlViewStore(engine))
        # A scope that holds views is not empty: its deletion asks, inside its transaction.
        catalog.scope_holdings.append(views.scope_holding)
        materialized = MaterializedService(SqlMaterializedStore(engine), catalog, settings.freshness_threshold_ms)
        # Only a materialized table's refresher (holding its lease) commits to it.
        catalog.commit_guards.append(materialized.guard_commit)
        return cls(
            settings=settings, engine=engine, registry=registry, catalog=catalog, principals=principals, views=views,
            materialized=materialized,
        )

    @classmethod
    def init_app(cls, app: Flask, settings: Settings) -> Streamcat:
        """Build the engine and services for ``settings`` and attach them to ``app``."""
        ext = cls.create(settings)
        app.extensions["streamcat"] = ext
        app.config["STREAMCAT_LIST_LIMIT"] = settings.list_limit
        return ext

    def close(self) -> None:
        """Close the database connections."""
        self.engine.dispose()
