"""Continuation tokens of paginated listings: the key of the last item handed out."""

from __future__ import annotations

import re

from registry.errors import BadRequest

#: Keys are 32-bit.
_MAX_KEY = 2**31 - 1


def _decimal_at_most(limit: int) -> str:
    """A pattern of the decimal numbers from 0 to ``limit``, written in at most as many digits
    as ``limit`` (leading zeros allowed): a bound stated as a regular expression."""
    digits = str(limit)
    branches = [f"[0-9]{{1,{len(digits) - 1}}}"] if len(digits) > 1 else []
    for i, digit in enumerate(digits):
        rest = len(digits) - i - 1
        if digit != "0":
            below = "0" if digit == "1" else f"0-{int(digit) - 1}"
            branches.append(digits[:i] + f"[{below}]" + (f"[0-9]{{{rest}}}" if rest else ""))
    branches.append(digits)
    return "^(?:" + "|".join(branches) + ")$"


#: The tokens this server issues: a key, in decimal. The document publishes this pattern.
TOKEN_PATTERN = _decimal_at_most(_MAX_KEY)
_TOKEN = re.compile(TOKEN_PATTERN.replace("$", r"\Z"))


def check_token(token: str) -> str:
    """``token`` if this server could have issued it (it matches TOKEN_PATTERN); ValueError otherwise."""
    if not _TOKEN.match(token):
        raise ValueError(f"{token[:40]!r} is not a continuationToken this server issued")
    return token


def decode_token(token: str | None) -> int:
    """The position a ``continuationToken`` this server issued stands for (0 when absent)."""
    if not token:
        return 0
    try:
        return int(check_token(token))
    except ValueError as e:
        raise BadRequest(str(e)) from None
