"""``/v1/commits``: one commit across several tables (a batch and its dead letters, docs/data-contracts.md)."""

from __future__ import annotations

from flask import Blueprint

from catalog_api.api import models as m
from catalog_api.api.context import catalog_service
from registry.api.context import require
from registry.api.operations import operation
from registry.permissions import Need, Permission, Resource

bp = Blueprint("transactions", __name__)


@operation(
    bp,
    "POST",
    "",
    "commitTables",
    "Commit to several tables atomically: all of the commits, made at one time, or none (200: every one a "
    "repeated writer sequence, acknowledged)",
    body=m.CommitTablesRequest,
    response=m.CommitTablesAnswer,
    status=201,
    also=(200,),
    errors=(400, 403, 404, 409),
    # open to whoever may write somewhere; the view then requires write on every table the body names
    permission=Need("write", "*", listing=True),
)
def commit_tables(body: m.CommitTablesRequest) -> tuple[m.CommitTablesAnswer, int]:
    parts = body.to_domain()
    for part in parts:
        require(Permission.WRITE, Resource.of_group(part.scope, part.stream))
    made = catalog_service().commit_tables(parts)
    answer = m.CommitTablesAnswer(commits=[m.Commit.of(c) for c in made])
    return answer, 200 if all(c.duplicate for c in made) else 201
