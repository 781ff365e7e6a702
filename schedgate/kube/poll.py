"""One poll helper for what offers no watch (Docker, kind, /metrics, a port that is not open yet).

    poll_until(lambda: container_running(c), "container c running", timeout=60)

It asks ``check()`` until it returns a true value, which it returns; between
tries it waits ``interval`` seconds on ``pause`` (by default an event nobody
sets; a caller may wait on the process it watches instead, so an exit is seen
at once). ``alive()`` may raise to end the wait early; the deadline is hard.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class PollTimeout(AssertionError):
    """What was polled for did not happen before the deadline."""


def poll_until(check: Callable[[], T | None], what: str, timeout: float, *, interval: float = 0.5,
               pause: Callable[[float], object] | None = None, alive: Callable[[], None] | None = None,
               error: type[Exception] = PollTimeout) -> T:
    """``check()``'s first true answer; raises ``error`` naming ``what`` once ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    wait = pause or threading.Event().wait
    while True:
        got = check()
        if got:
            return got
        if alive is not None:
            alive()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise error(f"{what}: not done after {timeout:.0f}s")
        wait(min(interval, remaining))
