"""Base64 text of big-endian two's-complement integers (Debezium's precise decimals) as int64, column-wise.

Debezium's JSON converter writes a ``decimal`` column's unscaled value as the base64 of its minimal
big-endian two's-complement bytes. Decoding a column of them one value at a time costs more than
parsing the JSON they came in, so this decodes the whole Arrow string array with numpy: the text
is one buffer, every value a whole number of 4-character groups.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD = ord("=")
_SEXTETS = np.full(256, -1, np.int16)
_SEXTETS[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.int16)
_SEXTETS[_PAD] = 0


def unscaled_int64(text: pa.Array) -> pa.Array | None:
    """The int64 values of a string array of base64 texts (nulls stay null; an empty text is 0).

    None when a value is not strict base64 (a character outside the alphabet, a length that is not a
    multiple of 4, padding before the end) or has more than 8 bytes: the caller then decodes one by
    one, which says which value is wrong or keeps the wide ones exact.
    """
    if not pa.types.is_string(text.type):
        return None
    count = len(text)
    offsets_buffer, data_buffer = text.buffers()[1], text.buffers()[2]
    if count == 0 or offsets_buffer is None:
        return pa.array(np.zeros(count, np.int64), mask=np.ones(count, bool)) if count else pa.array([], pa.int64())
    offsets = np.frombuffer(offsets_buffer, np.int32)[text.offset:text.offset + count + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    chars = data[offsets[0]:offsets[-1]]
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    valid = text.is_valid().to_numpy(zero_copy_only=False)
    lengths = np.where(valid, lengths, 0)
    if (lengths % 4).any() or (offsets[-1] - offsets[0]) % 4:
        return None
    if not (valid | (np.diff(offsets) == 0)).all():
        return None  # a null slot with text behind it (arrays built by slicing): not this layout
    sextets = _SEXTETS[chars]
    if (sextets < 0).any():
        return None
    # '=' only as the last one or two characters of a value, and a second-to-last one only before another.
    padded = np.flatnonzero(chars == _PAD)
    if len(padded):
        owner = np.searchsorted(starts, padded, side="right") - 1
        from_end = starts[owner] + lengths[owner] - padded
        if (from_end > 2).any() or (chars[padded[from_end == 2] + 1] != _PAD).any():
            return None
    pads = np.zeros(count, np.int64)
    if len(padded):
        np.add.at(pads, owner, 1)
    groups = sextets.reshape(-1, 4).astype(np.uint32)
    triples = (groups[:, 0] << 18) | (groups[:, 1] << 12) | (groups[:, 2] << 6) | groups[:, 3]
    decoded = np.stack([(triples >> 16) & 255, (triples >> 8) & 255, triples & 255], axis=1).astype(np.uint8).ravel()
    widths = lengths // 4 * 3 - pads
    if (widths > 8).any():
        return None
    # Each value right-aligned in 8 bytes, sign-extended from its first byte, read as big-endian int64.
    first = starts // 4 * 3
    column = np.arange(8)
    inside = column[None, :] >= (8 - widths)[:, None]
    at = np.where(inside, first[:, None] + column[None, :] - (8 - widths)[:, None], 0)
    picked = decoded[np.minimum(at, max(len(decoded) - 1, 0))] if len(decoded) else np.zeros(at.shape, np.uint8)
    negative = (widths > 0) & (decoded[np.minimum(first, max(len(decoded) - 1, 0))] >= 128 if len(decoded)
                               else np.zeros(count, bool))
    fill = np.where(negative, 255, 0).astype(np.uint8)
    wide = np.where(inside, picked, fill[:, None]).astype(np.uint8)
    values = wide.view(">i8").ravel().astype(np.int64)
    return pa.array(values, pa.int64(), mask=~valid)
