"""The UI's pages and actions. Each view checks what the viewer may read or change before it reads
(Forbidden otherwise), builds its page model from the services, and renders its template."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, current_app, g, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from catalog_api.ui.catalog_pages import scope_page, scopes, table_page
from catalog_api.ui.materialized_pages import every_table, materialized_page
from catalog_api.ui.overview import overview
from catalog_api.ui.registry_pages import check_schema, group_page, registry_page
from catalog_api.ui.services import Services, may_read, may_write
from catalog_api.ui.session import (
    SESSION_COOKIE,
    SESSION_SECONDS,
    Sessions,
    SignInRefused,
    Viewer,
    clear_cookie,
    set_cookie,
)
from registry.errors import BadRequest, Forbidden

bp = Blueprint("ui", __name__)

#: Characters of a candidate schema the check accepts.
MAX_SCHEMA_CHARS = 1_000_000


def _services() -> Services:
    services: Services = current_app.extensions["streamcat.ui"][0]
    return services


def _sessions() -> Sessions:
    sessions: Sessions = current_app.extensions["streamcat.ui"][1]
    return sessions


def _viewer() -> Viewer:
    viewer: Viewer = g.viewer
    return viewer


def _arg(name: str, required: bool = True) -> str:
    value = request.values.get(name)
    if value is None:
        if required:
            raise BadRequest(f"the query has no {name}")
        return ""
    return value


def _int_arg(name: str) -> int | None:
    value = request.values.get(name, "")
    if not value:
        return None
    if not value.isdigit() or len(value) > 18:
        raise BadRequest(f"{name} must be a number, not {value[:40]!r}")
    return int(value)


def _page(template: str, title: str, **values: object) -> str:
    return render_template(template, title=title, viewer=_viewer(), sessions=_sessions(), **values)


def _need_read(namespace: str, group: str | None = None) -> None:
    if not may_read(_viewer(), namespace, group):
        what = f"{namespace}/{group}" if group is not None else f"namespace {namespace!r}"
        raise Forbidden(f"{_viewer().name} may not read {what}")


# -- signing in ------------------------------------------------------------------------------------


def _safe_next(target: str) -> str:
    # Only a path of this UI: never another site (an open redirect).
    root = request.script_root + "/"
    return target if target.startswith(root) and not target.startswith("//") else root


@bp.get("/signin")
def sign_in_form() -> str:
    return render_template("signin.html", title="Sign in", next=_safe_next(request.args.get("next", "")), error="",
                           viewer=None, sessions=_sessions())


@bp.post("/signin")
def sign_in() -> Response | tuple[str, int]:
    target = _safe_next(request.form.get("next", ""))
    try:
        _principal, cookie = _sessions().sign_in(
            request.form.get("user", ""), request.form.get("password", ""), request.form.get("token", "")
        )
    except SignInRefused as e:
        page = render_template("signin.html", title="Sign in", next=target, error=str(e), viewer=None,
                               sessions=_sessions())
        return page, 401
    response = redirect(target, code=303)
    set_cookie(response, SESSION_COOKIE, cookie, max_age=SESSION_SECONDS)
    return response


@bp.post("/signout")
def sign_out() -> Response:
    response = redirect(url_for("ui.sign_in_form"), code=303)
    clear_cookie(response, SESSION_COOKIE)
    return response


# -- pages -------------------------------------------------------------------------------------------


@bp.get("/")
def home() -> str:
    return _page("overview.html", "Overview", page=overview(_services(), _viewer()))


@bp.get("/registry")
def registry() -> str:
    page = registry_page(_services(), _viewer(), request.args.get("namespace"), request.args.get("q", "")[:255],
                         request.args.get("after", "")[:255])
    return _page("registry.html", "Registry", page=page)


@bp.route("/registry/group", methods=["GET", "POST"])
def group() -> str:
    namespace, name = _arg("namespace", required=False), _arg("group")
    _need_read(namespace, name)
    check = None
    if request.method == "POST":
        text = _arg("schema")
        if len(text) > MAX_SCHEMA_CHARS:
            raise BadRequest(f"the schema is longer than {MAX_SCHEMA_CHARS:,} characters")
        check = check_schema(_services(), namespace, name, text)
    page = group_page(_services(), namespace, name, _int_arg("left"), _int_arg("right"), check)
    return _page("group.html", f"Group {name}", page=page)


@bp.get("/catalog")
def catalog() -> str:
    return _page("catalog.html", "Catalog", scopes=scopes(_services(), _viewer()))


@bp.get("/catalog/scope")
def scope() -> str:
    name = _arg("scope")
    _need_read(name)
    page = scope_page(_services(), _viewer(), name, request.args.get("token") or None)
    return _page("scope.html", f"Scope {name}", page=page)


@bp.get("/catalog/table")
def table() -> str:
    scope_name, name = _arg("scope"), _arg("table")
    _need_read(scope_name, name)
    page = table_page(_services(), scope_name, name, _int_arg("cut"), feed=request.args.get("feed") == "1")
    return _page("table.html", f"Table {scope_name}.{name}", page=page)


@bp.get("/materialized")
def materialized() -> str:
    return _page("materialized.html", "Materialized tables", tables=every_table(_services(), _viewer()))


@bp.get("/materialized/table")
def materialized_table() -> str:
    scope_name, name = _arg("scope"), _arg("table")
    _need_read(scope_name, name)
    page = materialized_page(_services(), _viewer(), scope_name, name)
    return _page("materialized_table.html", f"Materialized table {scope_name}.{name}", page=page)


#: The actions of a materialized table's page, by the operation id the audit log gives them.
ACTIONS = {"suspend": "uiSuspendMaterializedTable", "resume": "uiResumeMaterializedTable",
           "refresh": "uiRefreshMaterializedTable"}


@bp.post("/materialized/table")
def act_on_materialized() -> Response:
    scope_name, name, action = _arg("scope"), _arg("table"), _arg("action")
    if action not in ACTIONS:
        raise BadRequest(f"unknown action {action[:40]!r}; expected suspend, resume or refresh")
    viewer = _viewer()
    resource = f"group:{scope_name}/{name}"
    if not may_write(viewer, scope_name, name):
        _sessions().audit(viewer.name, ACTIONS[action], resource, 403, request.method, request.path)
        raise Forbidden(f"{viewer.name} may not write {scope_name}.{name}")
    services = _services()
    act = {"suspend": services.materialized.suspend, "resume": services.materialized.resume,
           "refresh": services.materialized.request_refresh}[action]
    act(scope_name, name)
    services.materialized_states.forget()
    _sessions().audit(viewer.name, ACTIONS[action], resource, 303, request.method, request.path)
    return redirect(url_for("ui.materialized_table") + "?" + urlencode({"scope": scope_name, "table": name}), code=303)
