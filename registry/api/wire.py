"""Building blocks of the wire models: their base classes and the constrained types they share.

Nothing here imports Flask, werkzeug or SQLAlchemy: the Python clients use the wire models
too, and must run without the server's dependencies.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, GetCoreSchemaHandler, StringConstraints
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUseDefault, core_schema

#: Names of groups, namespaces, scopes, streams and tables: letters, digits, ``_``, ``-`` and
#: ``.`` (not first), at most 255 characters.
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}$"
#: Ids and versions are 32-bit, as in Pravega.
MAX_INT32 = 2**31 - 1
#: Counts, sizes and times are stored as 64-bit integers.
MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)


class Wire(BaseModel):
    """Base of the JSON bodies: camelCase names on the wire, snake_case in Python, closed
    objects (unknown fields are errors) and no coercion (``"1"`` is not an integer)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        # Python code builds models by field name; request bodies are read by alias only
        # (requests.py passes by_name=False), so clients cannot send snake_case names.
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        strict=True,
        frozen=True,
        # Response schemas then list every field a response always carries as required.
        json_schema_serialization_defaults_required=True,
    )


class Query(BaseModel):
    """Base of the query-string models: values arrive as text, so the field types convert
    exactly what they accept; unknown arguments are ignored, as they always were."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="ignore",
        frozen=True,
    )


def _absent_if_null(value: Any) -> Any:
    if value is None:
        raise PydanticUseDefault()
    return value


class _NullMeansDefault:
    """Marks a field whose ``null`` means "absent": Java clients send absent optional fields as
    null. Validation uses the field's default; the published input schema allows null."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        inner = handler(source)
        return core_schema.no_info_before_validator_function(
            _absent_if_null, inner, json_schema_input_schema=core_schema.nullable_schema(inner)
        )


NullMeansDefault = _NullMeansDefault()


def _is_none(value: Any) -> bool:
    return value is None


def omitted(**constraints: Any) -> Any:
    """A field that defaults to None and is left out of the JSON when None (the response
    shapes omit some optional members rather than sending null)."""
    return Field(None, exclude_if=_is_none, **constraints)


def _whole(value: Any) -> Any:
    # JSON Schema counts 3.0 as an integer, and so did the server's checks before the models.
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: Accepts a float without a fraction as the integer it is: ``Annotated[int, ..., WholeNumber]``.
WholeNumber = BeforeValidator(_whole)

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
StringMap = dict[str, str]
Int32 = Annotated[int, Field(ge=0, le=MAX_INT32), WholeNumber]
Int64 = Annotated[int, Field(ge=MIN_INT64, le=MAX_INT64), WholeNumber]


_INTEGER = re.compile(r"-?[0-9]{1,20}")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _query_int(value: Any) -> Any:
    # Only what JSON Schema calls an integer, written in ASCII digits: no "1.0", "1e3", "+1", "²".
    if isinstance(value, str):
        if not _INTEGER.fullmatch(value):
            raise ValueError(f"must be an integer, not {value[:40]!r}")
        return int(value)
    return value


def _query_flag(value: Any) -> Any:
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"must be true or false, not {value[:40]!r}")
    return value


#: Reads an integer query argument: ``Annotated[int, Field(ge=..., le=...), FromQueryText]`` (the
#: bounds inside, so that the published schema carries them).
FromQueryText = BeforeValidator(_query_int)
#: A boolean query argument: ``true``/``false``, ``1``/``0``, ``yes``/``no``, any case.
Flag = Annotated[bool, BeforeValidator(_query_flag)]
