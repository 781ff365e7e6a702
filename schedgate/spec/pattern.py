"""Regular expressions a file gives, matched in time linear in the text (RE2).

A scenario file's patterns (``failsWith``, an outcome's ``message``, a log outcome's ``event``) are matched
against scheduler messages and log lines. Python's ``re`` backtracks: ``(a+)+$`` against a line of 30 ``a``
and one ``b`` takes minutes, and nothing interrupts it. RE2 (google-re2) never backtracks; it has no
backreferences and no lookaround, which is what a file is refused for (:func:`check`).

A Python scenario's own patterns (``unschedulable(message=...)``) may use all of Python's syntax: what
RE2 cannot compile is matched by ``re``, as the user's own code would.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # its parse errors would go to stderr, beside the one line schedgate prints
_OPTIONS.max_mem = 64 << 20


def check(text: str) -> str | None:
    """Why RE2 refuses ``text`` (one line), or ``None`` when it compiles."""
    try:
        re2.compile(text, options=_OPTIONS)
    except re2.error as e:
        why = e.args[0] if e.args else "refused"
        return why.decode(errors="replace") if isinstance(why, bytes) else str(why)
    except (TypeError, ValueError, OverflowError) as e:
        return str(e)
    return None


@lru_cache(maxsize=256)
def compiled(text: str) -> Any:
    """The pattern ``text`` compiled by RE2, else (a pattern only Python accepts) by ``re``: either has
    ``search``, ``fullmatch`` and ``pattern``."""
    if check(text) is None:
        return re2.compile(text, options=_OPTIONS)
    return re.compile(text)


def search(pattern: str, text: str) -> bool:
    return compiled(pattern).search(text) is not None
