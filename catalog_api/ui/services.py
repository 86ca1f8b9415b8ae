"""What the UI reads: the services of the running server (never their stores), and the viewer's rights."""

from __future__ import annotations

from dataclasses import dataclass, field

from catalog_api.materialized.service import MaterializedService
from catalog_api.service import CatalogService
from catalog_api.ui.states import MaterializedStates
from catalog_api.views.service import ViewService
from registry.permissions import Access, Permission, Resource
from registry.service import RegistryService


@dataclass
class Services:
    """The services the pages are built from, and the list of materialized tables they share."""

    registry: RegistryService
    catalog: CatalogService
    views: ViewService
    materialized: MaterializedService
    materialized_states: MaterializedStates = field(init=False)

    def __post_init__(self) -> None:
        self.materialized_states = MaterializedStates(self.materialized)


def may_read(viewer: Access, namespace: str, group: str | None = None) -> bool:
    """Whether ``viewer`` may read the group (or table) ``group`` of ``namespace`` (or scope), or,
    without a group, something in the namespace."""
    if group is None:
        return viewer.allows_within(Permission.READ, Resource.of_namespace(namespace))
    return viewer.allows(Permission.READ, Resource.of_group(namespace, group))


def may_write(viewer: Access, namespace: str, group: str) -> bool:
    """Whether ``viewer`` may change the group (or table) ``group`` of ``namespace``."""
    return viewer.allows(Permission.WRITE, Resource.of_group(namespace, group))
