"""Progress goes to the ``schedgate`` logger; whoever runs schedgate decides where it shows.

The command line shows it on stderr as ``schedgate: MESSAGE (12.3s)`` (:func:`show_on`); the pytest
plugin lets pytest capture it with each test's setup; a caller of the Python API may pass a stream.

Long work (a Go build, a node image, a cluster step, thousands of nodes) also says, while it runs, how
long it has taken and what is left (:func:`ticking`). Those records carry ``live``: the pytest plugin
writes them to the terminal past pytest's capture, so a first run is never silent for minutes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
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


LIVE = {"live": True}  # ``extra=`` of a record that should reach the terminal while tests are captured


def say_live(message: str) -> None:
    log.info(message, extra=LIVE)


@contextlib.contextmanager
def ticking(what: str, status: Callable[[], str] | None = None, every: float = 10.0,
            stall: float = 120.0) -> Iterator[None]:
    """While the block runs, every ``every`` seconds a live line: ``what``, the time so far, and
    ``status()`` (what is done, what is left). If ``status()`` has said the same for ``stall`` seconds the
    line says so: a phase that stalls is told apart from one that is slow."""
    done = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        last, since = (status() if status else ""), time.monotonic()
        while not done.wait(every):
            now = status() if status else ""
            if now != last:
                last, since = now, time.monotonic()
            quiet = time.monotonic() - since
            stalled = f"; no progress for {quiet:.0f}s" if status and quiet >= stall else ""
            say_live(f"{what}: {time.monotonic() - started:.0f}s so far{f', {now}' if now else ''}{stalled}")

    ticker = threading.Thread(target=tick, name=f"progress: {what}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
