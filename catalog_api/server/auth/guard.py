"""The check in front of every request: authenticate, then hold the caller to the permission the
matched route declares; and the audit line after it.

Every route of the REST API declares its Need where it is mounted (``operation(..., permission=
Need("write", "group"))``); the resource comes from the request's path values (the registry's
blueprints put the namespace and group in ``flask.g``). A route that declares none is refused to
everyone (fails closed). The shell's own service endpoints are listed here: ``/ping`` and
``/health/live`` always answer; ``/health/ready``, ``/metrics`` and ``/v1/openapi.json`` answer
without credentials when STREAMCAT_PUBLIC_ENDPOINTS names them, and to any authenticated caller
otherwise.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from flask import Flask, Request, Response, current_app, g, request

from catalog_api.server.auth import audit
from catalog_api.server.auth.authenticate import Authenticator
from catalog_api.server.auth.principals import Principal
from catalog_api.server.auth.store import PrincipalStore
from catalog_api.server.config import Settings
from registry.api.context import use_access
from registry.api.operations import Operation, declared
from registry.errors import Forbidden
from registry.permissions import Need, Permission

if TYPE_CHECKING:
    from flask.ctx import _AppCtxGlobals

log = logging.getLogger(__name__)

#: Environ key: the permission and resource the caller of a request was held to, when its role or
#: grants met the route's declared need (catalog_api.server.answers holds later callers to the same).
CHECKED = "streamcat.checked"
#: Endpoints of the shell answered without credentials whatever the settings.
ALWAYS_OPEN = frozenset({"meta.ping", "health.live"})
#: Endpoints of the shell that STREAMCAT_PUBLIC_ENDPOINTS may open, by the word that opens them.
SERVICE_ENDPOINTS = {"health.ready": "health", "health.metrics": "metrics", "meta.openapi": "openapi"}


def _path_values(req: Request, globals_: _AppCtxGlobals) -> dict[str, str]:
    values = {key: str(value) for key, value in (req.view_args or {}).items()}
    # The registry's blueprints take the namespace and group out of the path values into g.
    for key in ("namespace", "group"):
        if key in globals_:
            values[key] = str(globals_.get(key))
    return values


class Guard:
    """Authentication and authorization of one application's requests.

    Both hooks run on every request, so they read the request and ``g`` through the objects
    themselves rather than Flask's context-local proxies (a lookup each time), and look up a
    route's declaration once per endpoint: routes are all registered before the first request.
    """

    def __init__(self, settings: Settings, store: PrincipalStore) -> None:
        self.authenticator = Authenticator(settings, store)
        self.public = frozenset(settings.public_endpoints)
        self._declarations: dict[str, tuple[Operation | None, Need | None]] = {}

    def _declaration(self, endpoint: str) -> tuple[Operation | None, Need | None]:
        found = self._declarations.get(endpoint)
        if found is None:
            view = current_app.view_functions.get(endpoint)
            op = declared(view) if view is not None else None
            found = self._declarations[endpoint] = (op, op.permission if op is not None else None)
        return found

    def _principal(self, req: Request, globals_: _AppCtxGlobals) -> Principal:
        principal = self.authenticator.authenticate(req.headers.get("Authorization"))
        globals_.principal = principal
        return principal

    def check(self) -> None:
        """Refuse the request (Unauthorized, Forbidden) unless its caller may call its route."""
        req: Request = request._get_current_object()  # type: ignore[attr-defined]
        globals_: _AppCtxGlobals = g._get_current_object()
        rule = req.url_rule
        if rule is None:
            # No such route: a 404 or 405 follows, but only for callers who may learn that much.
            self._principal(req, globals_)
            return
        endpoint = req.endpoint or ""
        if endpoint in ALWAYS_OPEN:
            return
        if endpoint in SERVICE_ENDPOINTS:
            if SERVICE_ENDPOINTS[endpoint] not in self.public:
                self._principal(req, globals_)
            return
        _, need = self._declaration(endpoint)
        if need is None:
            log.error("route %s (%s) declares no permission: refused", rule.rule, endpoint)
            raise Forbidden("this route declares no permission, so nobody may call it")
        try:
            resource = need.resource(_path_values(req, globals_))
        except KeyError as e:
            log.error("route %s declares %s but has no path value %s: refused", rule.rule, need, e)
            raise Forbidden("this route's permission names a resource its path does not have") from None
        globals_.resource = resource
        principal = self._principal(req, globals_)
        use_access(principal, globals_)
        if principal.allows(need.permission, resource):
            req.environ[CHECKED] = (need.permission, resource)
            return
        if need.listing and principal.allows_within(need.permission, resource):
            return
        raise Forbidden(f"{principal.name} may not {need.permission} {resource}")

    def record(self, response: Response) -> Response:
        """Write the audit line of a mutation, or of a refusal (401, 403)."""
        status = response.status_code
        req: Request = request._get_current_object()  # type: ignore[attr-defined]
        op, need = self._declaration(req.endpoint or "") if req.url_rule is not None else (None, None)
        mutation = need is not None and need.permission >= Permission.WRITE
        if mutation or status in (401, 403):
            principal = g.get("principal")
            audit.record(
                principal=principal.name if principal is not None else "-",
                action=op.operation_id if op is not None else (req.endpoint or "unmatched"),
                resource=str(g.get("resource", "-")),
                outcome=status,
                method=req.method,
                path=req.path,
            )
        return response


def init_app(app: Flask, settings: Settings, store: PrincipalStore) -> Guard:
    """Check every request of ``app`` (after the hooks registered before this) and audit them."""
    guard = Guard(settings, store)
    audit.enable()
    app.extensions["streamcat.auth"] = guard
    app.before_request(guard.check)
    app.after_request(guard.record)
    return guard
