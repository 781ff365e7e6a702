"""Under ``pytest -n N``, a performance measurement has the machine to itself.

A scenario file with a ``measurePerformance`` step (or a test marked ``schedgate_exclusive``) compares
the scheduler under test with a baseline in the same run; another worker making 1000 nodes beside it
starves both on two cores: the ratio moves past its budget, or an API server slowed past a scheduler's
``renewDeadline`` costs it its lease. So every test holds a lock shared with the other workers' tests
(its setup, call and teardown), and an exclusive one holds it alone: it waits for the tests running
beside it to end, and none starts until it has. A turnstile in front keeps it from waiting forever
behind a stream of shared ones. The two lock files live in the run's pytest temporary folder, which
pytest itself removes a few runs later; without ``-n`` nothing is locked.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MARKER = "schedgate_exclusive"
MARKER_HELP = (f"{MARKER}: under pytest -n, the test runs with no other test beside it (a performance "
               "measurement; scenario files with a measurePerformance step are so without the marker)")


def is_exclusive(item: pytest.Item) -> bool:
    scenario = getattr(item, "scenario", None)
    if scenario is not None and any(s.kind == "measurePerformance" for s in scenario.steps):
        return True
    return item.get_closest_marker(MARKER) is not None


def lock_dir(config: pytest.Config) -> Path | None:
    """The folder all workers of this run share (the parent of each worker's basetemp), or None without -n."""
    if not hasattr(config, "workerinput"):
        return None
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory.getbasetemp().parent


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def turn(folder: Path, exclusive: bool) -> Iterator[None]:
    """Hold the run's machine lock: alone when ``exclusive``, else beside other shared holders."""
    gate, room = folder / "schedgate-exclusive.gate", folder / "schedgate-exclusive.room"
    if exclusive:
        with _flock(gate, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
        return
    fd = os.open(room, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _flock(gate, fcntl.LOCK_EX):  # the turnstile: waits while an exclusive test waits or runs
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    folder = lock_dir(item.config)
    if folder is None:
        return (yield)
    with turn(folder, is_exclusive(item)):
        return (yield)
