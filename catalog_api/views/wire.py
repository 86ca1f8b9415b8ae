"""The wire models of ``/v1/scopes/{scope}/views``, declared once: the views read and answer with
them, and the OpenAPI document is generated from them. No Flask, werkzeug or SQLAlchemy."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from catalog_api.views import model as domain
from catalog_api.views.model import PutMode
from registry.api.wire import Int64, Name, NullMeansDefault, StringMap, Wire

#: A Spark data type in its JSON form: a name (``"integer"``) or an object (struct, array, map).
SparkType = str | dict[str, Any]
ColumnName = Annotated[str, Field(min_length=1, max_length=1024)]
#: The query text of a view; the request body limit bounds it too.
QueryText = Annotated[str, Field(min_length=1, max_length=1_048_576)]


def _finite(value: Any) -> Any:
    # Python's JSON reader takes NaN and Infinity, which are not JSON and which PostgreSQL refuses.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{item} is not a JSON number")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


class ViewColumn(Wire):
    """A column of a view: a Spark StructField in its JSON form (its comment in ``metadata``)."""

    name: ColumnName
    type: SparkType
    nullable: bool = True
    metadata: Annotated[dict[str, Any], NullMeansDefault] = Field(default_factory=dict)

    @field_validator("type", "metadata")
    @classmethod
    def _json_numbers(cls, value: Any) -> Any:
        return _finite(value)


class ViewSchema(Wire):
    """The columns of a view: a Spark StructType in its JSON form (``DataType.json()``)."""

    type: Literal["struct"]
    fields: list[ViewColumn]


class _ViewBody(Wire):
    """What a view is: the query and what Spark captured when it was created."""

    query_text: QueryText
    schema_: ViewSchema = Field(alias="schema")
    current_catalog: Annotated[str, Field(max_length=255)] | None = None
    current_namespace: Annotated[list[Annotated[str, Field(min_length=1, max_length=255)]], NullMeansDefault] = Field(
        default_factory=list
    )
    query_column_names: Annotated[list[ColumnName], NullMeansDefault] = Field(default_factory=list)
    sql_configs: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)
    schema_mode: Annotated[str, Field(max_length=64)] | None = None
    comment: Annotated[str, NullMeansDefault] = ""
    properties: Annotated[StringMap, NullMeansDefault] = Field(default_factory=dict)
    owner: Annotated[str, Field(max_length=255)] | None = None


class PutViewRequest(_ViewBody):
    """``PUT /v1/scopes/{scope}/views/{view}``. ``mode`` says what to do with an existing view:
    ``create`` refuses it (409 ViewAlreadyExists), ``replace`` needs one (404 ViewNotFound),
    ``createOrReplace`` (the default) takes either. With ``expectedVersion``, only the view at that
    version is replaced (409 WriteConflict otherwise)."""

    mode: PutMode = "createOrReplace"
    expected_version: Annotated[Int64, Field(ge=1)] | None = None

    def to_domain(self) -> domain.ViewDefinition:
        """The definition to store."""
        return domain.ViewDefinition(
            query_text=self.query_text,
            schema=self.schema_.model_dump(mode="json"),
            current_catalog=self.current_catalog,
            current_namespace=tuple(self.current_namespace),
            query_column_names=tuple(self.query_column_names),
            sql_configs=dict(self.sql_configs),
            schema_mode=self.schema_mode,
            comment=self.comment,
            properties=dict(self.properties),
            owner=self.owner,
        )


class RenameViewRequest(Wire):
    """``POST /v1/scopes/{scope}/views/{view}/rename``: the new name, in this scope or in ``scopeName``."""

    view_name: Name
    scope_name: Name | None = None


class View(Wire):
    """A view: its query, what Spark captured when it was created, and its version."""

    scope_name: str
    view_name: str
    query_text: str
    schema_: ViewSchema = Field(alias="schema")
    current_catalog: str | None
    current_namespace: list[str]
    query_column_names: list[str]
    sql_configs: StringMap
    schema_mode: str | None
    comment: str
    properties: StringMap
    owner: str | None
    #: bumped by every replace and rename
    version: int
    created_at: int
    updated_at: int

    @classmethod
    def of(cls, view: domain.View) -> View:
        """The wire form of ``view``."""
        d = view.definition
        return cls.model_construct(
            scope_name=view.scope,
            view_name=view.name,
            query_text=d.query_text,
            schema_=ViewSchema.model_construct(
                type="struct",
                fields=[
                    ViewColumn.model_construct(**{"nullable": True, "metadata": {}, **f}) for f in d.schema["fields"]
                ],
            ),
            current_catalog=d.current_catalog,
            current_namespace=list(d.current_namespace),
            query_column_names=list(d.query_column_names),
            sql_configs=dict(d.sql_configs),
            schema_mode=d.schema_mode,
            comment=d.comment,
            properties=dict(d.properties),
            owner=d.owner,
            version=view.version,
            created_at=view.created_at,
            updated_at=view.updated_at,
        )


class ViewList(Wire):
    """A page of views and the token of the next page."""

    views: list[View]
    continuation_token: str
