"""Column-wise base64 integers (Debezium's precise decimals) against the standard library's decoding."""

from __future__ import annotations

import base64

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog_api.streams.base64_ints import unscaled_int64


def minimal(value: int) -> str:
    """Debezium's encoding (Java's ``BigInteger.toByteArray``): the fewest big-endian two's-complement bytes
    that hold the value, in base64."""
    width = ((value + 1 if value < 0 else value).bit_length() + 8) // 8
    return base64.b64encode(value.to_bytes(width, "big", signed=True)).decode()


@given(st.lists(st.none() | st.integers(-(2**63), 2**63 - 1)), st.integers(0, 3))
def test_decodes_as_the_standard_library_does(values: list[int | None], skip: int) -> None:
    texts = pa.array([None if v is None else minimal(v) for v in values], pa.string()).slice(min(skip, len(values)))
    expected = [None if t is None else int.from_bytes(base64.b64decode(t), "big", signed=True)
                for t in texts.to_pylist()]
    decoded = unscaled_int64(texts)
    assert decoded is not None
    assert decoded.to_pylist() == expected


@given(st.lists(st.binary(min_size=0, max_size=8), min_size=1))
def test_any_byte_string_up_to_eight_bytes(raw: list[bytes]) -> None:
    """Not only minimal encodings: leading zero or sign bytes decode to the same number."""
    decoded = unscaled_int64(pa.array([base64.b64encode(b).decode() for b in raw]))
    assert decoded is not None
    assert decoded.to_pylist() == [int.from_bytes(b, "big", signed=True) for b in raw]


@pytest.mark.parametrize("texts", [
    ["AQ=A"],            # padding before the end
    ["A==="],            # three padding characters
    ["AQ"],              # not a multiple of four characters
    ["AQ==", "AQ!="],    # a character outside the alphabet
    ["=AQA"],
    [base64.b64encode(b"\x01" * 9).decode()],  # nine bytes: wider than an int64
])
def test_refuses_what_it_cannot_decode_exactly(texts: list[str]) -> None:
    """The caller then decodes one value at a time, which names the bad value or keeps a wide one exact."""
    assert unscaled_int64(pa.array(texts)) is None
