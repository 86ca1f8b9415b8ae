"""Server settings, read once from the environment and validated."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from registry.errors import StreamcatError

DEFAULT_PORT = 9092


class ConfigError(StreamcatError):
    """A setting has a value the server cannot run with."""

    code = "ConfigError"


def _default_database_url() -> str:
    return f"sqlite:///{Path('var/streamcat.db').absolute()}"


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
