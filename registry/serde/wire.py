"""The event header: protocol version byte, then the encoding id as a big-endian int32.

```
byte 0      protocol version, 0x01
bytes 1..4  encoding id, int32 big-endian
bytes 5..   payload: the serialized record, transformed by the codec
```
"""

from __future__ import annotations

import struct

from registry.ids import EncodingId
from registry.serde.errors import SerdeError

#: The only protocol version there is (Pravega's serializers write the same byte).
PROTOCOL_VERSION = 0x01
#: Bytes before the payload.
HEADER_SIZE = 5

_HEADER = struct.Struct(">Bi")
_MAX_ID = 2**31 - 1


def encode_header(encoding_id: int) -> bytes:
    """The 5 header bytes of events written with ``encoding_id``."""
    if not 0 <= encoding_id <= _MAX_ID:
        raise SerdeError(f"encoding id {encoding_id} does not fit the header's int32")
    return _HEADER.pack(PROTOCOL_VERSION, encoding_id)


def check_header(event: bytes | bytearray | memoryview) -> None:
    """Raise SerdeError unless ``event`` starts with a header this code can read."""
    if len(event) < HEADER_SIZE:
        raise SerdeError(f"event of {len(event)} bytes is shorter than the {HEADER_SIZE}-byte header")
    if event[0] != PROTOCOL_VERSION:
        raise SerdeError(
            f"event header has protocol version 0x{event[0]:02x}; this serializer reads 0x{PROTOCOL_VERSION:02x}"
        )


def decode_header(event: bytes | bytearray | memoryview) -> EncodingId:
    """The encoding id in the header of ``event`` (checked)."""
    check_header(event)
    return EncodingId(_HEADER.unpack_from(event)[1])


def encoding_id_of_key(key: bytes) -> EncodingId:
    """The encoding id that the 4 raw header bytes ``key`` (event[1:5]) stand for."""
    return EncodingId(int.from_bytes(key, "big", signed=True))
