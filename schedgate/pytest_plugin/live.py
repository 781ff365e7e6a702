"""Live progress lines past pytest's capture.

pytest captures what a fixture prints; a cluster's first start may build Go binaries or a node image
for minutes inside the first test's setup. The records that long work marks ``live``
(:func:`schedgate.runtime.progress.ticking`) are written here to the terminal as they happen, through a
copy of standard error taken at configure time, while pytest's own capture is suspended (so no
capture state is touched from the ticking thread). On a pytest-xdist worker the line names the worker.
Everything else stays captured with the test's setup, shown on failure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time

import pytest

from schedgate.pytest_plugin.options import worker_id
from schedgate.runtime.progress import log


class LiveLines(logging.Handler):
    def __init__(self, fd: int, worker: str) -> None:
        super().__init__(logging.INFO)
        self.fd = fd
        self.t0 = time.monotonic()
        self.prefix = f"[{worker}] " if worker else ""

    def emit(self, record: logging.LogRecord) -> None:
        if not getattr(record, "live", False):
            return
        line = f"\n{self.prefix}schedgate: {record.getMessage()} ({time.monotonic() - self.t0:.0f}s into the run)\n"
        with contextlib.suppress(OSError):
            os.write(self.fd, line.encode())


def install(config: pytest.Config) -> None:
    """From now on, live records reach the terminal (once per process; removed at unconfigure)."""
    if any(isinstance(h, LiveLines) for h in log.handlers):
        return
    try:
        fd = os.dup(2)  # capture is suspended at configure: this is the terminal (or CI's log)
    except OSError:
        return
    handler = LiveLines(fd, worker_id(config))
    log.addHandler(handler)

    def remove() -> None:
        log.removeHandler(handler)
        with contextlib.suppress(OSError):
            os.close(fd)

    config.add_cleanup(remove)
