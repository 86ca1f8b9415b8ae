"""Serving the application with gunicorn, the production WSGI server."""

from __future__ import annotations

from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from prometheus_client import multiprocess

from registry.app import create_app
from registry.config import Settings


def _child_exit(_server: Any, worker: Any) -> None:
    # A dead worker's live gauges must leave the multiprocess metrics sum.
    multiprocess.mark_process_dead(worker.pid)


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
