"""Credentials made by the tests: signing keys, a JWKS file, JWTs, and servers that ask for them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.auth.credentials import hash_password
from catalog_api.server.auth.store import PrincipalStore
from catalog_api.server.config import Settings
from registry.db import make_engine
from tests.support.net import serve_in_thread

ISSUER = "https://idp.example.test/realms/streamcat"
AUDIENCE = "streamcat-api"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _rsa() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class SigningKeys:
    """An RSA and an EC (P-256) key of a pretend identity provider, and a key it never published."""

    rsa_key: rsa.RSAPrivateKey = field(default_factory=_rsa)
    ec_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    stranger_key: rsa.RSAPrivateKey = field(default_factory=_rsa)

    def jwks(self) -> dict[str, Any]:
        """The published keys: public halves only, each with its kid."""
        rsa_jwk = RSAAlgorithm.to_jwk(self.rsa_key.public_key(), as_dict=True)
        ec_jwk = ECAlgorithm.to_jwk(self.ec_key.public_key(), as_dict=True)
        return {"keys": [{**rsa_jwk, "kid": "rsa-1", "use": "sig"}, {**ec_jwk, "kid": "ec-1", "use": "sig"}]}

    def write_jwks(self, path: Path) -> Path:
        """The JWKS as a file the server reads."""
        path.write_text(json.dumps(self.jwks()))
        return path

    def claims(self, subject: str, **overrides: Any) -> dict[str, Any]:
        """Good claims for ``subject``, valid for five minutes; ``None`` overrides drop a claim."""
        now = int(time.time())
        claims: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 300}
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, subject: str, key: str = "rsa", **overrides: Any) -> str:
        """A JWT for ``subject`` signed by the provider's RSA (RS256) or EC (ES256) key."""
        claims = self.claims(subject, **overrides)
        if key == "ec":
            return jwt.encode(claims, self.ec_key, algorithm="ES256", headers={"kid": "ec-1"})
        signer = self.stranger_key if key == "stranger" else self.rsa_key
        return jwt.encode(claims, signer, algorithm="RS256", headers={"kid": "rsa-1"})

    def hs256_with_public_key(self, subject: str) -> str:
        """The classic confusion attack: HS256 "signed" with the published RSA key as the secret."""
        secret = self.rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
        payload = _b64(json.dumps(self.claims(subject)).encode())
        signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}"

    def unsigned(self, subject: str) -> str:
        """A token with ``alg: none`` and no signature."""
        header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode())
        return f"{header}.{_b64(json.dumps(self.claims(subject)).encode())}."


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for a bearer token."""
    return {"Authorization": f"Bearer {token}"}


def migrated(url: str) -> str:
    """``url``, migrated to head."""
    migrate.upgrade(url)
    return url


def add_user(database_url: str, name: str, password: str, role: str | None = None) -> None:
    """Store a user as ``streamcat users add`` does (the first admin comes from the admin host)."""
    engine = make_engine(database_url)
    try:
        PrincipalStore(engine).add_user(name, hash_password(password), role)
    finally:
        engine.dispose()


@contextmanager
def auth_server(settings: Settings, **auth: Any) -> Iterator[str]:
    """The application with the given auth settings, served on 127.0.0.1; yields its URL."""
    with serve_in_thread(create_app(replace(settings, **auth))) as url:
        yield url


class Api:
    """``requests`` against one server as one caller (HTTP Basic, a bearer token, or nothing)."""

    def __init__(self, base: str, auth: tuple[str, str] | None = None, token: str | None = None) -> None:
        self.base = base
        self.session = requests.Session()
        if auth is not None:
            self.session.auth = auth
        if token is not None:
            self.session.headers.update(bearer(token))

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """One request; ``path`` starts at the server's root."""
        return self.session.request(method, self.base + path, timeout=30, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request that must succeed; its JSON body (None when empty)."""
        response = self.call(method, path, **kwargs)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None


def unique(prefix: str) -> str:
    """A name no other test uses."""
    return f"{prefix}{uuid.uuid4().hex[:10]}"
