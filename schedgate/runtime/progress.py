"""Progress goes to the ``schedgate`` logger; whoever runs schedgate decides where it shows.

The command line shows it on stderr as ``schedgate: MESSAGE (12.3s)`` (:func:`show_on`); the pytest
plugin lets pytest capture it with each test's setup; a caller of the Python API may pass a stream.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TextIO

log = logging.getLogger("schedgate")


class Elapsed(logging.Formatter):
    """``schedgate: MESSAGE (seconds since the handler was made)``."""

    def __init__(self) -> None:
        super().__init__()
        self.t0 = time.monotonic()

    def format(self, record: logging.LogRecord) -> str:
        return f"schedgate: {record.getMessage()} ({time.monotonic() - self.t0:.1f}s)"


def show_on(stream: TextIO) -> logging.Handler:
    """Show progress on ``stream`` from now on (once per stream); returns the handler."""
    for h in log.handlers:
        if isinstance(h, logging.StreamHandler) and h.stream is stream:
            return h
    handler = logging.StreamHandler(stream)
    handler.setFormatter(Elapsed())
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return handler


@contextlib.contextmanager
def shown_on(stream: TextIO | None) -> Iterator[None]:
    """Progress on ``stream`` while the block runs (nothing extra with ``None``)."""
    if stream is None:
        yield
        return
    had = set(log.handlers)
    handler = show_on(stream)
    try:
        yield
    finally:
        if handler not in had:
            log.removeHandler(handler)
