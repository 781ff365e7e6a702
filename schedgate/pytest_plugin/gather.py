"""What the run's summary prints, gathered where the summary is written.

Without pytest-xdist that is the one pytest process; with ``-n N`` it is the controller, while the
tests and their clusters live on the workers. So nothing the summary needs is kept only where a test
ran: a test's timings row, claims-and-gangs row and artifact folder travel as plain attributes of its
``call`` report (xdist carries a report's attributes to the controller), and a worker's cluster start
(start-to-ready, what it reaped, whether it was kept) travels in ``config.workeroutput``, which the
controller reads when the worker goes down.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pytest

from schedgate.providers import Started
from schedgate.pytest_plugin.options import worker_id

TIMINGS = "schedgate_timings"
ADMISSION = "schedgate_admission"
ARTIFACTS = "schedgate_artifacts"
_STARTED = "schedgate_started"


@dataclass
class StartFacts:
    """One worker's (or the run's) cluster start, as the summary prints it."""

    worker: str
    total: float
    reaped: list[str]
    kubeconfig: str
    run_dir: str
    alive: bool


@dataclass(eq=False)  # a plugin: pluggy keeps plugins in sets (a conftest.py in a sub-folder makes it do so)
class Gathered:
    """The summary's rows, in the order their reports arrived."""

    timings: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    admissions: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    starts: list[StartFacts] = field(default_factory=list)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        row = getattr(report, TIMINGS, None)
        if row:
            self.timings.append((report.nodeid, tuple(row)))
        admission = getattr(report, ADMISSION, None)
        if admission:
            self.admissions.append((report.nodeid, tuple(admission)))
        self.artifacts += list(getattr(report, ARTIFACTS, None) or [])

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist's controller: a worker finished; keep what its cluster start was."""
        facts = getattr(node, "workeroutput", {}).get(_STARTED)
        if facts:
            self.starts.append(StartFacts(**facts))


def gathered(config: pytest.Config) -> Gathered:
    plugin = config.pluginmanager.get_plugin("schedgate-gathered")
    assert isinstance(plugin, Gathered), "the schedgate plugin registers its gatherer at configure"
    return plugin


def register(config: pytest.Config) -> None:
    if config.pluginmanager.get_plugin("schedgate-gathered") is None:
        config.pluginmanager.register(Gathered(), "schedgate-gathered")


_FACTS = pytest.StashKey[StartFacts]()


def record_start(config: pytest.Config, started: Started) -> None:
    """This process's cluster start: for its own summary, and for the controller if it is a worker."""
    facts = StartFacts(worker=worker_id(config), total=started.cluster.timings.get("total", 0.0),
                       reaped=list(started.reaped), kubeconfig=str(started.cluster.kubeconfig),
                       run_dir=str(started.run_dir), alive=True)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_STARTED] = asdict(facts)
    else:
        gathered(config).starts.append(facts)
    config.stash[_FACTS] = facts


def record_stopped(config: pytest.Config, started: Started) -> None:
    """Whether the run folder outlived the session (``--keep-cluster``): the summary says how to stop it."""
    facts = config.stash[_FACTS]
    facts.alive = started.run_dir.exists()
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_STARTED] = asdict(facts)
