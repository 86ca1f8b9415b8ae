"""Codecs on their own: every byte string survives, and each writes its library's standard format."""

from __future__ import annotations

import gzip
import io

import cramjam
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from registry.serde import DEFAULT_CODECS, SerdeError, ZstdCodec
from registry.serde.codecs import GzipCodec, SnappyFramedCodec


@pytest.mark.parametrize("name", DEFAULT_CODECS.names())
@given(data=st.binary(max_size=5000))
def test_every_payload_survives_each_codec(name: str, data: bytes) -> None:
    codec = DEFAULT_CODECS.get(name)
    assert codec.decode(codec.encode(data)) == data


def test_the_codec_type_names_are_pravegas() -> None:
    assert DEFAULT_CODECS.names() == [
        "",
        "application/x-gzip",
        "application/x-snappy-framed",
        "application/x-zstd",
    ]


def test_gzip_payloads_are_standard_gzip() -> None:
    data = b"event " * 100
    assert gzip.decompress(GzipCodec().encode(data)) == data
    assert GzipCodec().decode(gzip.compress(data)) == data


def test_snappy_payloads_use_the_framing_format() -> None:
    data = b"event " * 100
    encoded = SnappyFramedCodec().encode(data)
    assert encoded.startswith(b"\xff\x06\x00\x00sNaPpY")
    assert bytes(cramjam.snappy.decompress(encoded)) == data
    with pytest.raises(cramjam.DecompressionError):
        cramjam.snappy.decompress_raw(encoded)


@given(data=st.binary(max_size=3000))
def test_snappy_also_reads_raw_blocks_as_pravegas_java_serializer_writes_them(data: bytes) -> None:
    assert SnappyFramedCodec().decode(bytes(cramjam.snappy.compress_raw(data))) == data


def test_zstd_reads_frames_without_a_content_size() -> None:
    data = b"event " * 100
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as writer:
        writer.write(data)
    assert ZstdCodec().decode(out.getvalue()) == data


def test_unknown_codec_names_are_refused() -> None:
    with pytest.raises(SerdeError, match="no codec for codec type 'application/x-lz4'"):
        DEFAULT_CODECS.get("application/x-lz4")
