"""Continuation tokens of paginated listings: the key of the last item handed out."""

from __future__ import annotations

import re

from registry.errors import BadRequest

_TOKEN = re.compile(r"[0-9]{1,10}")


def decode_token(token: str | None) -> int:
    """The position a ``continuationToken`` this server issued stands for (0 when absent)."""
    if not token:
        return 0
    if not _TOKEN.fullmatch(token) or int(token) > 2**31 - 1:
        raise BadRequest(f"continuationToken {token[:40]!r} is not one this server issued")
    return int(token)

