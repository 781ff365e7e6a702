"""How ``pytest -n N`` hands tests to workers: one at a time, except scenario files that run on the same
extra cluster (another scheduler configuration or cluster definition than the session's), which go to
one worker together, so that cluster is started once in the run rather than once per worker. Units go
out longest first, by the durations record (:mod:`schedgate.pytest_plugin.durations`), after those of files
whose tests may have the machine alone (:mod:`schedgate.pytest_plugin.exclusive`): such a test waits for the
test beside it to end, and at the head of the queue that is no long test.

Used for xdist's default distribution (``load``); a ``--dist`` the user names is left as it is. The
controller collects nothing, so it reads a scenario file's cluster from the file named in the test id.
(xdist's own ``loadgroup`` would need an ``xdist_group`` mark, which under pytest 9 no longer reaches the
test id xdist groups by.)
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from schedgate.errors import SchedgateError
from schedgate.pytest_plugin.durations import longest_first, table, weigher
from schedgate.pytest_plugin.exclusive import MARKER
from schedgate.pytest_plugin.items import scenario_of
from schedgate.pytest_plugin.options import request_from
from schedgate.pytest_plugin.planes import cluster_group
from schedgate.scenarios.load import is_scenario_file


def cluster_scope(config: pytest.Config, path: str) -> str | None:
    """The work unit of the scenario file at ``path`` (relative to the rootdir): the extra cluster's
    scheduler configuration, or ``None`` for a file on the session's cluster and any other test."""
    file = Path(config.rootpath) / path
    if not is_scenario_file(file):
        return None
    try:
        group = cluster_group(scenario_of(config, file), request_from(config))
    except SchedgateError:
        return None  # the worker reports the file's problem when it collects it
    return None if group is None else "schedgate-cluster:" + group[0]


def alone_first(config: pytest.Config, path: str) -> bool:
    """Whether the file at ``path`` (relative to the rootdir) holds tests that may have the machine alone: a
    ``measurePerformance`` step or the exclusive mark in its first 4 MiB (as ``schedgate mutants`` asks)."""
    try:
        with open(Path(config.rootpath) / path, "rb") as f:
            text = f.read(4 << 20)
    except OSError:
        return False
    return b"measurePerformance" in text or MARKER.encode() in text


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling  # only called by xdist, so it is installed

    scope = cache(lambda path: cluster_scope(config, path))
    weigh = weigher(table(config))
    alone = cache(lambda path: alone_first(config, path))

    class ByCluster(LoadScopeScheduling):  # type: ignore[misc]
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid.split("::", 1)[0]) or nodeid

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the first unit handed out: the whole queue is known, order it once
                self.ordered = True
                units = longest_first(self.workqueue, weigh, lambda ids: any(
                    alone(t.split("::", 1)[0]) for t in ids))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return ByCluster(config, log)
