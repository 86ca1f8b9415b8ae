"""The stream reader every client uses (``catalog_api.streams.reader.StreamReader``), over the services:
two stand-ins for its REST clients that answer the few calls it makes from the services in-process."""

from __future__ import annotations

from typing import Any, NoReturn

from catalog_api.api.models import Change
from catalog_api.client import CatalogClient
from catalog_api.streams.reader import StreamReader
from catalog_api.ui.services import Services
from registry.client import RegistryClient
from registry.ids import EncodingId, GroupName, Namespace
from registry.model import EncodingInfo, SchemaWithVersion

_NOWHERE = "http://in-process.invalid"


def _not_here(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise RuntimeError("the in-process client answers only what StreamReader asks of it")


class _Catalog(CatalogClient):
    """What StreamReader asks of the catalog, answered by the catalog service."""

    def __init__(self, services: Services) -> None:
        super().__init__(_NOWHERE)
        self.services = services

    _call = _not_here

    def get_stream(self, scope: str, name: str) -> dict[str, Any]:
        return {"location": self.services.catalog.get_stream(scope, name).location}

    def get_table(self, scope: str, name: str) -> dict[str, Any]:
        return {"properties": dict(self.services.catalog.get_table(scope, name).properties)}

    def snapshot(self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None,
                 after: int | None = None) -> tuple[int, list[Any]]:
        found = self.services.catalog.snapshot(scope, stream, cut, as_of_time, after)
        return found.cut, list(found.chunks)

    def changes(self, scope: str, stream: str, after: int = 0, to: int | None = None) -> list[dict[str, Any]]:
        found = self.services.catalog.changes(scope, stream, after, to)
        return [Change.of(c).model_dump(mode="json", by_alias=True) for c in found]


class _Registry(RegistryClient):
    """What StreamReader asks of the registry (in the table's namespace), answered by the registry service."""

    def __init__(self, services: Services, namespace: str) -> None:
        super().__init__(_NOWHERE, namespace)
        self.services = services

    _call = _not_here

    def latest_schemas(self, group: str, type_name: str | None = None) -> list[SchemaWithVersion]:
        return self.services.registry.latest(Namespace(self.namespace), GroupName(group), None)

    def encoding_info(self, group: str, encoding: EncodingId) -> EncodingInfo:
        return self.services.registry.encoding_info(Namespace(self.namespace), GroupName(group), encoding)


def reader_of(services: Services, scope: str, table: str) -> StreamReader:
    """A reader of ``scope.table`` whose catalog and registry are the services."""
    return StreamReader(_Catalog(services), _Registry(services, scope), scope, table)
