"""Serving the application with gunicorn, the production WSGI server."""

from __future__ import annotations

import ssl
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from prometheus_client import multiprocess

from catalog_api.server.app import create_app
from catalog_api.server.config import Settings


def _child_exit(_server: Any, worker: Any) -> None:
    # A dead worker's live gauges must leave the multiprocess metrics sum.
    multiprocess.mark_process_dead(worker.pid)


def tls_options(settings: Settings) -> dict[str, Any]:
    """gunicorn's HTTPS settings (none when the server speaks plain HTTP)."""
    if not settings.tls:
        return {}
    options: dict[str, Any] = {"certfile": settings.tls_cert, "keyfile": settings.tls_key}
    if settings.tls_client_ca:
        options.update(ca_certs=settings.tls_client_ca, cert_reqs=ssl.CERT_REQUIRED)
    return options


class GunicornServer(BaseApplication):  # type: ignore[misc]
    """gunicorn running ``create_app(settings)`` in each worker."""

    def __init__(self, settings: Settings, options: dict[str, Any] | None = None) -> None:
        self.settings = settings
        self.options = {
            "bind": f"{settings.host}:{settings.port}",
            "workers": settings.workers,
            "worker_class": "gthread",
            "threads": 4,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "info",
            "keepalive": 5,
            # several servers may run on one machine (tests, replicas); none uses gunicornc
            "control_socket_disable": True,
            "child_exit": _child_exit,
            **tls_options(settings),
            **(options or {}),
        }
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        # Each worker builds its own app (and database pool) after the fork.
        return create_app(self.settings)


def run(settings: Settings, options: dict[str, Any] | None = None) -> None:
    """Serve until interrupted."""
    GunicornServer(settings, options).run()
