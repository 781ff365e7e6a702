"""Interruptions held back while a cluster is put back."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ctrl-C (or SIGTERM) during the block waits until the block is done, then interrupts: for putting a
    cluster back, which a second interruption half-way would leave half-undone. Main thread only (where
    Python delivers signals); elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in saved:
        signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    if caught:
        raise KeyboardInterrupt(f"signal {signal.Signals(caught[0]).name}, deferred until the cluster was put back")
