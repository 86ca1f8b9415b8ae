"""Codecs transform serialized payloads (compression); a writer registers its codec type in the group.

The names are Pravega's codec type names, so events written here and by Pravega's Java
serializers name the same codecs.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from abc import ABC, abstractmethod

import cramjam
import zstandard

from registry.ids import CodecName
from registry.model import NO_CODEC, CodecType
from registry.serde.errors import SerdeError

GZIP = CodecName("application/x-gzip")
SNAPPY_FRAMED = CodecName("application/x-snappy-framed")
ZSTD = CodecName("application/x-zstd")

#: The chunk every snappy framed stream starts with.
_SNAPPY_STREAM_IDENTIFIER = b"\xff\x06\x00\x00sNaPpY"

#: What codec libraries raise on a payload that is not in their format.
DECODE_ERRORS: tuple[type[Exception], ...] = (
    OSError,  # gzip.BadGzipFile
    EOFError,  # a truncated gzip member
    zlib.error,
    zstandard.ZstdError,
    cramjam.DecompressionError,
    ValueError,
)


class Codec(ABC):
    """One payload transformation; ``name`` is the codec type name recorded with each encoding id."""

    name: CodecName

    @property
    def codec_type(self) -> CodecType:
        """The codec type a writer registers in its group."""
        return CodecType(self.name)

    @abstractmethod
    def encode(self, data: bytes) -> bytes:
        """The payload to store for the serialized record ``data``."""

    @abstractmethod
    def decode(self, data: bytes) -> bytes:
        """The serialized record that a stored payload stands for."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class NoCodec(Codec):
    """Payloads stored as serialized (Pravega's codec ``""``)."""

    name = NO_CODEC

    def encode(self, data: bytes) -> bytes:
        return data

    def decode(self, data: bytes) -> bytes:
        return data


class GzipCodec(Codec):
    """gzip members, as ``java.util.zip.GZIPOutputStream`` writes them."""

    name = GZIP

    def __init__(self, level: int = 6) -> None:
        # Level 6 is zlib's (and Java's) default; gzip.compress would default to a much slower 9.
        self.level = level

    def encode(self, data: bytes) -> bytes:
        # mtime=0 keeps output deterministic and takes CPython's one-shot zlib path.
        return gzip.compress(data, compresslevel=self.level, mtime=0)

    def decode(self, data: bytes) -> bytes:
        return gzip.decompress(data)


class SnappyFramedCodec(Codec):
    """Snappy in the framing format (stream identifier, checksummed chunks).

    Pravega's Java serializers register this name but write raw (unframed) snappy blocks, so
    payloads that do not open with the framing format's stream identifier are read as raw blocks.
    """

    name = SNAPPY_FRAMED

    def encode(self, data: bytes) -> bytes:
        return bytes(cramjam.snappy.compress(data))

    def decode(self, data: bytes) -> bytes:
        if not data or data[:10] == _SNAPPY_STREAM_IDENTIFIER:  # cramjam frames b"" as b""
            return bytes(cramjam.snappy.decompress(data))
        return bytes(cramjam.snappy.decompress_raw(data))


class ZstdCodec(Codec):
    """Zstandard frames."""

    name = ZSTD

    def __init__(self, level: int = 3) -> None:
        self.level = level
        # zstandard's contexts must not be shared between threads; keep one pair per thread.
        self._local = threading.local()

    def _compressor(self) -> zstandard.ZstdCompressor:
        found: zstandard.ZstdCompressor | None = getattr(self._local, "compressor", None)
        if found is None:
            found = self._local.compressor = zstandard.ZstdCompressor(level=self.level)
        return found

    def _decompressor(self) -> zstandard.ZstdDecompressor:
        found: zstandard.ZstdDecompressor | None = getattr(self._local, "decompressor", None)
        if found is None:
            found = self._local.decompressor = zstandard.ZstdDecompressor()
        return found

    def encode(self, data: bytes) -> bytes:
        return self._compressor().compress(data)

    def decode(self, data: bytes) -> bytes:
        try:
            return self._decompressor().decompress(data)
        except zstandard.ZstdError:
            # Streaming writers (zstd-jni's output stream, for one) leave the content size out
            # of the frame header, which the one-shot API needs; a decompressobj does without.
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)


class CodecRegistry:
    """Codecs by codec type name: what a writer may choose and what a reader can undo."""

    def __init__(self, codecs: tuple[Codec, ...] = ()) -> None:
        self._codecs: dict[str, Codec] = {}
        for codec in codecs:
            self.register(codec)

    def register(self, codec: Codec) -> None:
        """Add (or replace) the codec for ``codec.name``."""
        self._codecs[codec.name] = codec

    def get(self, name: str) -> Codec:
        """The codec for a codec type name; SerdeError if none is registered."""
        try:
            return self._codecs[name]
        except KeyError:
            known = ", ".join(repr(n) for n in sorted(self._codecs)) or "none"
            raise SerdeError(f"no codec for codec type {name!r} (known: {known})") from None

    def resolve(self, codec: Codec | str) -> Codec:
        """``codec`` itself, or the codec registered under that name."""
        return codec if isinstance(codec, Codec) else self.get(codec)

    def names(self) -> list[str]:
        """The codec type names this registry can handle."""
        return sorted(self._codecs)


def default_codecs() -> CodecRegistry:
    """A registry of the built-in codecs: none, gzip, framed snappy and zstd."""
    return CodecRegistry((NoCodec(), GzipCodec(), SnappyFramedCodec(), ZstdCodec()))



#: The built-in codecs, shared by serializers and deserializers not given a registry of their own.
DEFAULT_CODECS = default_codecs()
