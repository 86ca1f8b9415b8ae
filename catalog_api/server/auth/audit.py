"""The audit log: one JSON line per mutation and per refused request, on the ``streamcat.audit`` logger.

Each line says when (``time``), which request (``request_id``, also sent back as
``X-Request-Id``), who (``principal``: a user or token name, ``oidc:<sub>``, ``anonymous`` when
STREAMCAT_AUTH=none, ``-`` when the caller was not identified), what (``action``: the operation
id of the route, ``resource``: ``*``, ``namespace:NS``, ``group:NS/GROUP``) and how it ended
(``outcome``: the HTTP status). ``streamcat serve`` writes it to stderr with the other JSON logs
(observability.JsonFormatter); route the logger elsewhere with standard logging configuration.
"""

from __future__ import annotations

import logging

AUDIT = logging.getLogger("streamcat.audit")


def enable() -> None:
    """Log at INFO whatever the root logger's level: an audit log that a level setting can silence
    is not one."""
    AUDIT.setLevel(logging.INFO)


def record(principal: str, action: str, resource: str, outcome: int, method: str, path: str) -> None:
    """Write one audit line."""
    AUDIT.info(
        "%s %s %s -> %s",
        principal,
        action,
        resource,
        outcome,
        extra={
            "fields": {
                "principal": principal,
                "action": action,
                "resource": resource,
                "outcome": outcome,
                "method": method,
                "path": path,
            }
        },
    )
