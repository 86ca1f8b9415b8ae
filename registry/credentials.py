"""What a client presents to a Streamcat server: a token or a user's password, and its TLS trust.

Both clients (``registry.client.RegistryClient``, ``catalog_api.client.CatalogClient``) take
these as keyword arguments and keep them on their ``requests.Session``, so that everything
built on a client (the stream writer and reader, a registry client re-scoped to another
namespace) carries them without being told. Secrets never appear in a ``repr``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.auth import AuthBase, HTTPBasicAuth

#: A client certificate for mutual TLS: one PEM file holding certificate and key, or (certificate, key).
ClientCert = str | tuple[str, str]


class BearerAuth(AuthBase):
    """``Authorization: Bearer <token>``: an API token or an OIDC access token."""

    def __init__(self, token: str) -> None:
        if not token or any(c in token for c in "\r\n"):
            raise ValueError("a token must be a non-empty single line")
        self.token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BearerAuth) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)

    def __repr__(self) -> str:
        return "BearerAuth(token=***)"


class _Basic(HTTPBasicAuth):
    """HTTP Basic whose repr leaves the password out."""

    def __repr__(self) -> str:
        return f"HTTPBasicAuth(username={self.username!r}, password=***)"


class _Session(requests.Session):
    """A session whose own ``verify`` wins over ``$REQUESTS_CA_BUNDLE``.

    Plain requests lets the environment variable replace a session's CA bundle (requests
    issue 3829): a client told ``verify="ca.pem"`` would silently trust another bundle.
    """

    def merge_environment_settings(self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any) -> Any:
        merged = super().merge_environment_settings(url, proxies, stream, verify, cert)
        if verify is None and self.verify is not True:
            merged["verify"] = self.verify
        return merged


@dataclass(frozen=True)
class Credentials:
    """A token (Bearer) or user and password (Basic), plus the TLS settings of the connection.

    ``verify``: True (the system's CAs), False (no verification: tests only), or the path
    of a PEM CA bundle. ``cert``: a client certificate for servers that require one (mTLS).
    """

    token: str | None = field(default=None, repr=False)
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    verify: bool | str = True
    cert: ClientCert | None = None

    def __post_init__(self) -> None:
        if self.token and (self.user or self.password):
            raise ValueError("give a token or a user and password, not both")
        if bool(self.user) != bool(self.password):
            raise ValueError("a user needs a password, and a password a user")
        if isinstance(self.verify, str) and not os.path.exists(self.verify):
            raise ValueError(f"the CA bundle {self.verify} does not exist")
        paths = (self.cert,) if isinstance(self.cert, str) else (self.cert or ())
        for path in paths:
            if not os.path.exists(path):
                raise ValueError(f"the client certificate file {path} does not exist")

    @classmethod
    def of(
        cls,
        token: str | None = None,
        auth: tuple[str, str] | None = None,
        verify: bool | str | None = None,
        cert: ClientCert | None = None,
    ) -> Credentials:
        """From the clients' keyword arguments (``auth`` is ``(user, password)``, as in requests)."""
        user, password = auth if auth is not None else (None, None)
        return cls(token=token, user=user, password=password, verify=True if verify is None else verify, cert=cert)

    @property
    def auth(self) -> AuthBase | None:
        """The requests auth object, if any credentials were given."""
        if self.token:
            return BearerAuth(self.token)
        if self.user and self.password:
            return _Basic(self.user, self.password)
        return None

    def apply(self, session: requests.Session) -> requests.Session:
        """Set these on ``session`` (only what was given: a session's own settings stay otherwise)."""
        auth = self.auth
        if auth is not None:
            session.auth = auth
        if self.verify is not True:
            session.verify = self.verify
        if self.cert is not None:
            session.cert = self.cert
        return session

    def session(self, base: requests.Session | None = None) -> requests.Session:
        """``base`` presenting these credentials, or a new session that does."""
        return self.apply(base if base is not None else _Session())

    # -- as options of the Spark data source (the catalog shim passes them with these names) ----

    def to_options(self) -> dict[str, str]:
        """These credentials as data source options (the inverse of :meth:`from_options`)."""
        options: dict[str, str] = {}
        if self.token:
            options["token"] = self.token
        if self.user and self.password:
            options["user"], options["password"] = self.user, self.password
        if self.verify is False:
            raise ValueError("the Spark catalog always verifies the server's certificate: give a CA bundle")
        if isinstance(self.verify, str):
            options["ca-bundle"] = self.verify
        if isinstance(self.cert, str):
            options["client-cert"] = self.cert
        elif self.cert is not None:
            options["client-cert"], options["client-key"] = self.cert
        return options

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Credentials:
        """From (lower-cased) options: ``token``, or ``user`` and ``password``; ``ca-bundle`` (a PEM
        file of the CAs to trust); ``client-cert`` and ``client-key`` (PEM files) for mutual TLS."""
        cert_file, key_file = options.get("client-cert") or None, options.get("client-key") or None
        if key_file and not cert_file:
            raise ValueError("client-key needs client-cert")
        cert: ClientCert | None = (cert_file, key_file) if cert_file and key_file else cert_file
        return cls(token=options.get("token") or None, user=options.get("user") or None,
                   password=options.get("password") or None, verify=options.get("ca-bundle") or True, cert=cert)
