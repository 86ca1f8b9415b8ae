"""The KMS the registry itself uses for shared KEKs: ``local-kms``, Confluent's local KMS (a
key derived from a secret with HKDF-SHA256, AES128-GCM as Tink writes it: 12-byte IV, then
ciphertext and tag). The secret is the KEK's ``secret`` KMS property. Other KMS types are the
clients' business: their KEKs cannot be shared here.

DEK key material is what Tink calls a key: the serialized ``AesGcmKey`` or ``AesSivKey``
(``key_value`` a random key of the algorithm's size), which is what the clients' ENCRYPT rules
read and write.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from registry.confluent.dek.model import Kek
from registry.confluent.errors import InvalidKey

LOCAL_KMS = "local-kms"
SECRET_PROPERTY = "secret"
#: Tink key protos of each algorithm: (field number of ``key_value``, key size in bytes).
_KEYS = {"AES128_GCM": (3, 16), "AES256_GCM": (3, 32), "AES256_SIV": (2, 64)}
_IV = 12


def _aead(kek: Kek) -> AESGCM:
    if kek.kms_type != LOCAL_KMS:
        raise InvalidKey(
            f"KEK {kek.name!r} is shared but the registry cannot use KMS type {kek.kms_type!r} (only "
            f"{LOCAL_KMS}); register it with shared=false, so that clients wrap their own DEKs"
        )
    secret = kek.kms_props.get(SECRET_PROPERTY)
    if not secret:
        raise InvalidKey(f"shared {LOCAL_KMS} KEK {kek.name!r} needs the kmsProps property {SECRET_PROPERTY!r}")
    key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=None).derive(secret.encode("utf-8"))
    return AESGCM(key)


def can_share(kek: Kek) -> None:
    """Raise InvalidKey unless the registry can use ``kek``'s KMS."""
    _aead(kek)


def new_key(algorithm: str) -> bytes:
    """Fresh key material of ``algorithm``: the serialized Tink key proto."""
    number, size = _KEYS[algorithm]
    return bytes([number << 3 | 2, size]) + os.urandom(size)


def wrap(kek: Kek, material: bytes) -> bytes:
    """``material`` encrypted with the KEK."""
    iv = os.urandom(_IV)
    return iv + _aead(kek).encrypt(iv, material, b"")


def unwrap(kek: Kek, wrapped: bytes) -> bytes:
    """The material ``wrapped`` holds; InvalidKey if the KEK did not wrap it."""
    try:
        return _aead(kek).decrypt(wrapped[:_IV], wrapped[_IV:], b"")
    except (InvalidTag, ValueError):
        raise InvalidKey(f"the DEK's key material was not wrapped by KEK {kek.name!r}") from None
