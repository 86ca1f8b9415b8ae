"""What every record format's serializer provides (``registry.serde.record_formats`` finds one by name)."""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError, Message

from registry.formats.base import ParsedSchema

#: Turns a record into its serialized bytes (after a fixed prefix).
Encode = Callable[[Any], bytes]
#: Turns a serialized record back into a record.
Decode = Callable[[bytes], Any]
#: Reads one serialized record from a binary stream, from its current position to the record's end:
#: ``function(stream, *arguments)``. A function and its arguments rather than a closure over them,
#: because it is called per event and a closure would add a Python frame to every call.
ReadFrom = tuple[Callable[..., Any], tuple[Any, ...]]

#: What format libraries raise on bytes that are not a record of the schema they were given.
PAYLOAD_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # json.JSONDecodeError, UnicodeDecodeError, fastavro's resolution errors
    TypeError,
    EOFError,  # fastavro on a truncated record
    IndexError,
    KeyError,
    OverflowError,
    struct.error,
    DecodeError,
)


@dataclass(frozen=True)
class InPlace:
    """Appending events to a buffer from a caller's own per-record loop, without a Python call between
    it and the format's library (such a call costs a few percent of an Avro encode).

    Append ``head`` (the event's header), then call ``function(buffer, record, *arguments)``, which
    appends the serialized record. If it raises, cut the buffer back to where the event began and
    raise ``failure(error)`` from the error, or the error itself when ``failure`` gives None.
    """

    head: bytes
    function: Callable[..., Any]
    arguments: tuple[Any, ...]
    failure: Callable[[BaseException], Exception | None]


@dataclass(frozen=True)
class ReadOptions:
    """How a deserializer presents records.

    ``as_dict``: Protobuf messages as dicts (the proto3 JSON mapping with the schema's field
    names, every field present, int64 as int) instead of message objects.
    ``message_class``: decode Protobuf events into this (generated) message class.
    """

    as_dict: bool = False
    message_class: type[Message] | None = None


class RecordFormat(ABC):
    """Serializes records of one format under a schema, and reads them back."""

    #: The Pravega name of the format.
    name: str

    @abstractmethod
    def encoder(self, schema: ParsedSchema, *, validate: bool, prefix: bytes) -> Encode:
        """A function from a record to ``prefix`` + the record serialized under ``schema``.

        With ``validate``, records are checked against the schema first and a SerdeError names
        the first offending path. Records that cannot be serialized always raise SerdeError.
        """

    @abstractmethod
    def decoder(self, writer: ParsedSchema, reader: ParsedSchema | None, options: ReadOptions) -> Decode:
        """A function from bytes written under ``writer`` to a record, presented under ``reader`` if given.

        The caller has checked that ``reader`` can read ``writer``'s data.
        """

    def in_place(self, schema: ParsedSchema, *, prefix: bytes) -> InPlace | None:
        """How to append ``prefix`` and records serialized under ``schema`` straight to a buffer, for
        formats whose library writes into one (what :meth:`encoder` makes, without the bytes object
        of each record); None for the others."""
        return None

    def stream_decoder(
        self, writer: ParsedSchema, reader: ParsedSchema | None, options: ReadOptions
    ) -> ReadFrom | None:
        """Like :meth:`decoder`, reading the record where a binary stream stands (which it leaves at
        the record's end), for formats whose records delimit themselves; None for the others."""
        return None
