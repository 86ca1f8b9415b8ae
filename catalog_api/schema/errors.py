"""The error raised when a schema format cannot carry a Spark type."""

from __future__ import annotations

from registry.errors import BadRequest


class UnsupportedType(BadRequest):
    """A column's type has no faithful form in the target format (or in Spark, when reading).

    ``path`` is the column path in Spark's notation (``m.key``, ``items.element.price``,
    backquoted names where needed); the message starts with it so that a client sees
    which column to change.
    """

    code = "UnsupportedType"

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"column {path}: {message}" if path else message)
        self.path = path
