"""Server settings, read once from the environment and validated."""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from catalog_api.errors import LocationNotAllowed
from catalog_api.locations import parse_root
from catalog_api.materialized.model import DEFAULT_FRESHNESS_THRESHOLD_MS, parse_freshness
from registry.errors import StreamcatError

DEFAULT_PORT = 9092


class ConfigError(StreamcatError):
    """A setting has a value the server cannot run with."""

    code = "ConfigError"


def _default_database_url() -> str:
    return f"sqlite:///{Path('var/streamcat.db').absolute()}"


def _freshness(environ: Mapping[str, str], key: str, default: int) -> int:
    """Milliseconds of a duration such as ``30 minutes`` or ``90s`` (a bare number: seconds)."""
    raw = (environ.get(key) or "").strip()
    if not raw:
        return default
    try:
        return parse_freshness(raw + " seconds" if raw.isdigit() else raw)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None


def _int(environ: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = environ.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, not {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{key} must be between {low} and {high}, not {value}")
    return value


def _bool(environ: Mapping[str, str], key: str, default: bool) -> bool:
    raw = environ.get(key, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{key} must be true or false, not {raw!r}")


def _words(environ: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    # A comma list of lower-case words; unset or empty keeps the default.
    words = tuple(part.strip().lower() for part in environ.get(key, "").split(",") if part.strip())
    return words or default


#: The ways a client may authenticate (STREAMCAT_AUTH); "none" stands alone.
AUTH_METHODS = ("none", "basic", "oidc")
#: Service endpoints that STREAMCAT_PUBLIC_ENDPOINTS may open to callers without credentials.
PUBLIC_ENDPOINTS = ("health", "metrics", "openapi")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine can reach (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve to anything


def _roots(environ: Mapping[str, str], key: str) -> tuple[str, ...]:
    # Comma-separated; blanks around and between the commas are ignored.
    return tuple(part.strip() for part in environ.get(key, "").split(",") if part.strip())


@dataclass(frozen=True)
class Settings:
    """Everything the server needs to know about its environment."""

    database_url: str = field(default_factory=_default_database_url)
    warehouse: str = field(default_factory=lambda: str(Path("var/warehouse").absolute()))
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 2
    max_body_bytes: int = 8 * 1024 * 1024
    list_limit: int = 100
    access_log: bool = False
    #: roots under which a client may name a stream's location (besides the warehouse, which
    #: the server fills itself): absolute paths or URIs of pyarrow.fs filesystems
    allowed_locations: tuple[str, ...] = ()
    #: HTTPS: the server's PEM certificate (chain) and key; with a client CA, clients must present
    #: a certificate it signed (mutual TLS)
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    #: how clients authenticate: ``none``, or ``basic`` (users and API tokens kept in the database)
    #: and/or ``oidc`` (JWTs of an identity provider)
    auth: tuple[str, ...] = ("none",)
    #: serve without authentication on an address other machines reach (refused unless set)
    allow_anonymous: bool = False
    #: OIDC: the ``iss`` and ``aud`` tokens must carry, where the signing keys are (an https URL
    #: or a JWKS file), and the claim holding roles and grants
    oidc_issuer: str = ""
    oidc_audience: str = ""
    oidc_jwks: str = ""
    oidc_claim: str = "streamcat"
    #: service endpoints answered without credentials (``/ping`` and ``/health/live`` always are)
    public_endpoints: tuple[str, ...] = PUBLIC_ENDPOINTS
    #: freshness at or above which a materialized table in mode auto is refreshed in full
    freshness_threshold_ms: int = DEFAULT_FRESHNESS_THRESHOLD_MS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``STREAMCAT_*`` variables; unset ones keep their defaults."""
        env = os.environ if environ is None else environ
        base = cls()
        settings = replace(
            base,
            database_url=env.get("STREAMCAT_DATABASE_URL") or base.database_url,
            warehouse=env.get("STREAMCAT_WAREHOUSE") or base.warehouse,
            host=env.get("STREAMCAT_HOST") or base.host,
            port=_int(env, "STREAMCAT_PORT", base.port, 1, 65535),
            workers=_int(env, "STREAMCAT_WORKERS", base.workers, 1, 256),
            max_body_bytes=_int(env, "STREAMCAT_MAX_BODY_BYTES", base.max_body_bytes, 1024, 1 << 30),
            access_log=_bool(env, "STREAMCAT_ACCESS_LOG", base.access_log),
            allowed_locations=_roots(env, "STREAMCAT_ALLOWED_LOCATIONS"),
            tls_cert=env.get("STREAMCAT_TLS_CERT") or None,
            tls_key=env.get("STREAMCAT_TLS_KEY") or None,
            tls_client_ca=env.get("STREAMCAT_TLS_CLIENT_CA") or None,
            auth=_words(env, "STREAMCAT_AUTH", base.auth),
            allow_anonymous=_bool(env, "STREAMCAT_ALLOW_ANONYMOUS", base.allow_anonymous),
            oidc_issuer=env.get("STREAMCAT_OIDC_ISSUER") or base.oidc_issuer,
            oidc_audience=env.get("STREAMCAT_OIDC_AUDIENCE") or base.oidc_audience,
            oidc_jwks=env.get("STREAMCAT_OIDC_JWKS") or base.oidc_jwks,
            oidc_claim=env.get("STREAMCAT_OIDC_CLAIM") or base.oidc_claim,
            freshness_threshold_ms=_freshness(env, "STREAMCAT_FRESHNESS_THRESHOLD", base.freshness_threshold_ms),
            public_endpoints=tuple(
                w for w in _words(env, "STREAMCAT_PUBLIC_ENDPOINTS", base.public_endpoints) if w != "none"
            ),
        )
        settings.validate()
        return settings

    @classmethod
    def coerce(cls, config: Settings | Mapping[str, Any] | None) -> Settings:
        """``config`` as Settings: None reads the environment, a mapping overrides fields."""
        if config is None:
            return cls.from_env()
        if isinstance(config, Settings):
            config.validate()
            return config
        unknown = set(config) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"unknown settings: {', '.join(sorted(unknown))}")
        settings = replace(cls.from_env(), **dict(config))
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise ConfigError on a value the server cannot run with."""
        if "://" not in self.database_url:
            raise ConfigError(f"STREAMCAT_DATABASE_URL is not a database URL: {self.database_url!r}")
        scheme = self.database_url.split("://", 1)[0].split("+", 1)[0]
        if scheme not in ("sqlite", "postgresql"):
            raise ConfigError(f"STREAMCAT_DATABASE_URL must be sqlite:// or postgresql://, not {scheme}://")
        if not self.warehouse:
            raise ConfigError("STREAMCAT_WAREHOUSE must not be empty")
        for key, root in [("STREAMCAT_WAREHOUSE", self.warehouse)] + [
            ("STREAMCAT_ALLOWED_LOCATIONS", r) for r in self.allowed_locations
        ]:
            try:
                parse_root(root)
            except LocationNotAllowed as e:
                # The location rules apply to roots too: absolute, a known scheme, no '..'.
                raise ConfigError(f"{key}: {e.message}") from None
        self._validate_tls()
        self._validate_auth()

    @property
    def tls(self) -> bool:
        """Whether the server speaks HTTPS."""
        return self.tls_cert is not None

    def _validate_tls(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("STREAMCAT_TLS_CERT and STREAMCAT_TLS_KEY go together: set both or neither")
        if self.tls_client_ca and not self.tls_cert:
            raise ConfigError("STREAMCAT_TLS_CLIENT_CA (mutual TLS) needs STREAMCAT_TLS_CERT and STREAMCAT_TLS_KEY")
        for key, path in (("STREAMCAT_TLS_CERT", self.tls_cert), ("STREAMCAT_TLS_KEY", self.tls_key),
                          ("STREAMCAT_TLS_CLIENT_CA", self.tls_client_ca)):
            if path and not Path(path).is_file():
                raise ConfigError(f"{key} names {path}, which is not a file")
        if self.tls_cert and self.tls_key:
            # Load them now: a key that does not match or a bad PEM is then a clear error at start-up,
            # not a failed handshake on every connection.
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                context.load_cert_chain(self.tls_cert, self.tls_key)
            except (ssl.SSLError, OSError) as e:
                raise ConfigError(f"STREAMCAT_TLS_CERT / STREAMCAT_TLS_KEY do not load as a PEM certificate "
                                  f"and its key: {e}") from None
            try:
                if self.tls_client_ca:
                    context.load_verify_locations(cafile=self.tls_client_ca)
            except (ssl.SSLError, OSError) as e:
                raise ConfigError(f"STREAMCAT_TLS_CLIENT_CA does not load as PEM CA certificates: {e}") from None

    def _validate_auth(self) -> None:
        unknown = [m for m in self.auth if m not in AUTH_METHODS]
        if unknown or not self.auth:
            given = ",".join(self.auth)
            raise ConfigError(f"STREAMCAT_AUTH must be none, or a comma list of basic and oidc, not {given!r}")
        if "none" in self.auth and len(self.auth) > 1:
            raise ConfigError("STREAMCAT_AUTH=none cannot be combined with basic or oidc")
        closed = [e for e in self.public_endpoints if e not in PUBLIC_ENDPOINTS]
        if closed:
            raise ConfigError(
                f"STREAMCAT_PUBLIC_ENDPOINTS may name {', '.join(PUBLIC_ENDPOINTS)} (or none), not {', '.join(closed)}"
            )
        if "oidc" not in self.auth:
            return
        for key, value in (
            ("STREAMCAT_OIDC_ISSUER", self.oidc_issuer),
            ("STREAMCAT_OIDC_AUDIENCE", self.oidc_audience),
            ("STREAMCAT_OIDC_JWKS", self.oidc_jwks),
        ):
            if not value:
                raise ConfigError(f"STREAMCAT_AUTH=oidc needs {key}")
        if "://" in self.oidc_jwks:
            if not self.oidc_jwks.startswith("https://"):
                # Keys fetched over plain HTTP could be swapped on the way: every token would verify.
                raise ConfigError(f"STREAMCAT_OIDC_JWKS must be an https:// URL or a file, not {self.oidc_jwks!r}")
        elif not Path(self.oidc_jwks).is_file():
            raise ConfigError(f"STREAMCAT_OIDC_JWKS names {self.oidc_jwks}, which is not a file")

    @property
    def authenticates(self) -> bool:
        """Whether requests must carry credentials (STREAMCAT_AUTH is not ``none``)."""
        return "none" not in self.auth

    def validate_serving(self) -> None:
        """Raise ConfigError when serving on ``host`` would open the API to other machines without
        authentication (unless STREAMCAT_ALLOW_ANONYMOUS says so explicitly)."""
        if self.authenticates or self.allow_anonymous or is_loopback(self.host):
            return
        raise ConfigError(
            f"refusing to serve on {self.host} without authentication: anyone who reaches it could change or "
            "delete every group, policy and table. Set STREAMCAT_AUTH=basic (and/or oidc), bind to 127.0.0.1, "
            "or set STREAMCAT_ALLOW_ANONYMOUS=true to serve anonymously anyway"
        )
