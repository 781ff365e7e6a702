"""The cluster's first sync: a scheduler that exited before the barrier began (which waits on running
schedulers only) still fails the start, naming it, rather than leaving a test to find it gone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from schedgate.errors import ComponentError
from schedgate.providers.base import first_sync


def test_a_scheduler_dead_before_the_barrier_fails_the_start_in_one_line():
    synced: list[float] = []
    cluster = SimpleNamespace(sync_schedulers=synced.append,
                              died=lambda: ["pool-scheduler exited with code 3: my-scheduler: cannot load plugins"])
    req = SimpleNamespace(scheduler_config=SimpleNamespace(black_box=SimpleNamespace(start_timeout=60.0)))
    with pytest.raises(ComponentError, match=r"^pool-scheduler exited with code 3: my-scheduler: cannot load plugins "
                                             r"before it bound its probe pod$"):
        first_sync(cluster, req, 15)  # type: ignore[arg-type]
    assert synced == [60.0]


def test_all_alive_after_the_barrier_is_a_start():
    cluster = SimpleNamespace(sync_schedulers=lambda t: 0.1, died=lambda: [])
    first_sync(cluster, SimpleNamespace(scheduler_config=SimpleNamespace(black_box=None)), 15)  # type: ignore[arg-type]
