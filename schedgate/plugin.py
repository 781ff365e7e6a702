"""The schedgate pytest plugin (entry point ``pytest11: schedgate``).

Adds the options, validates the cluster definition and scheduler
configuration before any test runs, provides the fixtures in
:mod:`schedgate.fixtures`, fails a test during which a component died, and
prints what the scenarios measured.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest

from schedgate.errors import SchedgateError
from schedgate.fixtures import (  # noqa: F401  (fixtures)
    cluster,
    events,
    extender,
    extender_scheduler,
    ns,
    report,
    schedgate_session,
    schedulers,
)
from schedgate.fixtures.cluster import started_of
from schedgate.options import add_options, request_from
from schedgate.report import figures
from schedgate.scheduler import distinct
from schedgate.toolchain import pinned_kubernetes_version


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "schedgate: a scenario that runs on a schedgate cluster")
    try:
        request_from(config)
    except SchedgateError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    req = request_from(config)
    try:
        version = pinned_kubernetes_version()
    except SchedgateError:
        version = "unknown"
    binary = req.scheduler_binary or "built from go/ (pinned)"
    replaced = req.scheduler_config.effective(kubeconfig="<schedgate's kubeconfig>").replaced
    return [
        f"schedgate: provider={req.provider} kubernetes={version} "
        f"cluster={req.definition.source} ({len(req.definition.nodes())} nodes)",
        f"schedgate: scheduler config={req.scheduler_config.source} "
        f"profiles={','.join(req.scheduler_config.profile_names)} binary={binary}",
        *(f"schedgate: {req.scheduler_config.source}: {r}" for r in replaced),
    ]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    rep = outcome.get_result()
    started = started_of(item.config)
    if started is None or rep.when != "call":
        return
    dead = started.cluster.died()
    if dead and rep.passed:
        rep.outcome = "failed"
        rep.longrepr = "schedgate: a component died during the test: " + "; ".join(dead)
    if rep.failed:
        for s in distinct(started.cluster.schedulers):
            rep.sections.append((f"scheduler {s.name} log (last 25 lines; {s.log_path})",
                                 "\n".join(s.log_tail(25))))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    rows = []
    for key in ("passed", "failed"):
        for rep in terminalreporter.stats.get(key, []):
            if getattr(rep, "when", None) == "call":
                rows += [(rep.nodeid, k, v) for k, v in figures(rep.user_properties)]
    started = started_of(terminalreporter.config)
    if started is not None and started.reaped:
        terminalreporter.write_line(f"schedgate: removed what crashed runs left: {'; '.join(started.reaped)}")
    if started is not None:
        t = started.cluster.timings
        rows.append(("cluster start", "start to ready (s)", f"{t.get('total', 0):.2f}"))
    if rows:
        terminalreporter.section("schedgate figures")
        width = max(len(f"{n} :: {k}") for n, k, _ in rows)
        for n, k, v in rows:
            terminalreporter.write_line(f"{(n + ' :: ' + k).ljust(width)}  {v}")
    if started is not None and started.run_dir.exists() and terminalreporter.config.getoption("keep_cluster"):
        terminalreporter.write_line(f"schedgate: cluster kept running; export KUBECONFIG={started.cluster.kubeconfig}")
        terminalreporter.write_line(f"schedgate: stop it with: {sys.executable} -m schedgate down {started.run_dir}")
