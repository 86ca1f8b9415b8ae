"""The domain objects of views (their JSON shapes are the wire models of catalog_api.views.wire)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

#: How a PUT treats an existing view: ``create`` refuses one, ``replace`` needs one,
#: ``createOrReplace`` takes either.
PutMode = Literal["create", "replace", "createOrReplace"]
PUT_MODES: tuple[PutMode, ...] = ("create", "replace", "createOrReplace")


@dataclass(frozen=True)
class ViewDefinition:
    """What Spark says about a view when it creates or replaces one.

    ``schema`` is the view's output schema as a Spark StructType in its JSON form (column names,
    types, nullability and, in each field's metadata, its comment); ``query_column_names`` are the
    names of the query's output columns the view's columns map to (empty when Spark gives none);
    ``current_catalog`` and ``current_namespace`` are the ones in force when the view was created,
    against which Spark resolves the query's unqualified names.
    """

    query_text: str
    schema: dict[str, Any]
    current_catalog: str | None = None
    current_namespace: tuple[str, ...] = ()
    query_column_names: tuple[str, ...] = ()
    sql_configs: dict[str, str] = field(default_factory=dict)
    schema_mode: str | None = None
    comment: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    owner: str | None = None


@dataclass(frozen=True)
class View:
    """A stored view: its definition, and the version every replace bumps."""

    scope: str
    name: str
    definition: ViewDefinition
    version: int = 1
    created_at: int = 0
    updated_at: int = 0
