"""The schedgate pytest plugin's hooks (entry point ``pytest11: schedgate``).

Adds the options, validates the cluster definition and scheduler
configuration before any test runs, provides the fixtures in
:mod:`schedgate.fixtures`, fails a test during which a component died, and
prints what the scenarios measured.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from _pytest.junitxml import xml_key  # where pytest keeps its JUnit writer (no public name)

from schedgate.cluster import Ability
from schedgate.errors import NotHere, SchedgateError
from schedgate.objects.schedlog import read_logs
from schedgate.pytest_plugin import durations, exclusive
from schedgate.pytest_plugin.blackbox import MARKER_HELP
from schedgate.pytest_plugin.distribute import make_scheduler
from schedgate.pytest_plugin.fixtures import (  # noqa: F401  (fixtures)
    cluster,
    events,
    extender,
    extender_scheduler,
    ns,
    report,
    schedgate_session,
    schedulers,
    slow_api,
)
from schedgate.pytest_plugin.fixtures.cluster import started_of
from schedgate.pytest_plugin.gather import ADMISSION, ARTIFACTS, TIMINGS, gathered, register
from schedgate.pytest_plugin.items import ScenarioItem, collect_file, judge_known_bug, scenario_run  # noqa: F401
from schedgate.pytest_plugin.live import install as install_live_lines
from schedgate.pytest_plugin.options import add_options, asked_for, request_from
from schedgate.pytest_plugin.planes import group_by_cluster, release_unneeded, schedgate_extra_clusters  # noqa: F401
from schedgate.pytest_plugin.state import ItemState, state_of
from schedgate.report.admission import HEADER as ADMISSION_HEADER
from schedgate.report.admission import admission
from schedgate.report.artifacts import collect, folder_for
from schedgate.report.figures import attached_to, figures_of
from schedgate.report.timing import pod_timings, summary_row, wait_bound_pods_ready
from schedgate.runtime.binaries import describe
from schedgate.runtime.health import PANIC, crash_tail
from schedgate.runtime.progress import log
from schedgate.runtime.scheduler import distinct
from schedgate.runtime.toolchain import pinned_kubernetes_version


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    durations.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "schedgate: a test that runs on a schedgate cluster (`-m 'not schedgate'` "
                                       "deselects them)")
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", exclusive.MARKER_HELP)
    config.pluginmanager.register(exclusive, "schedgate-exclusive")
    log.setLevel(logging.INFO)  # progress is captured with each test's setup, shown on failure
    config.pluginmanager.register(JUnitFigures(config), "schedgate-junit-figures")
    register(config)
    durations.register(config)
    install_live_lines(config)
    if not asked_for(config):
        return  # inert: a session that names none of schedgate's options loads nothing until a test needs it
    try:
        request_from(config)
    except SchedgateError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not asked_for(config):
        return []
    req = request_from(config)
    try:
        version = pinned_kubernetes_version()
    except SchedgateError:
        version = "unknown"
    binary = req.scheduler_binary or "built from go/ (pinned)"
    try:
        sources = describe(req.bin_dir)
    except SchedgateError as e:
        sources = str(e)
    effective = req.scheduler_config.effective(kubeconfig="<schedgate's kubeconfig>",
                                               elect=req.provider == "existing")  # as its backend starts it
    replaced = effective.replaced
    return [
        f"schedgate: provider={req.provider} kubernetes={version} "
        f"cluster={req.definition.source} ({len(req.definition.nodes())} nodes)",
        f"schedgate: scheduler config={req.scheduler_config.source} "
        f"profiles={','.join(req.scheduler_config.profile_names)} binary={binary}",
        f"schedgate: binaries: {sources}",
        *([f"schedgate: cluster of --kubeconfig {req.kubeconfig}" + (f" --context {req.context}" * bool(req.context))]
          if req.kubeconfig else []),
        *(f"schedgate: {req.scheduler_config.source}: {r}" for r in replaced),
        *([f"schedgate: {req.scheduler_config.source} says nothing of "
           f"{'leader-election timing' if effective.elects else 'leader election'}; schedgate's: "
           f"{', '.join(effective.defaulted)} (kube-scheduler's own: leaderElect true, 15s, 10s, 2s)"]
          if effective.defaulted else []),
    ]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return collect_file(file_path, parent)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that runs on a schedgate cluster carries the ``schedgate`` marker; scenario files on one
    extra cluster run together (``group_by_cluster``)."""
    for item in items:
        if isinstance(item, ScenarioItem) or "schedgate_session" in getattr(item, "fixturenames", ()):
            item.add_marker("schedgate")
    if asked_for(config) or any(isinstance(item, ScenarioItem) for item in items):
        try:
            group_by_cluster(items, request_from(config))
        except SchedgateError as e:
            raise pytest.UsageError(str(e)) from None


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``pytest -n``'s default distribution, with scenario files of one extra cluster kept on one worker."""
    if config.getvalue("dist") != "load":
        return None
    return make_scheduler(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _skip_not_here())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _skip_not_here())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    try:
        return (yield)
    finally:
        release_unneeded(item, nextitem)


def _skip_not_here() -> Generator[None, None, None]:
    """A test that needs what this cluster cannot give (a capability, a node closed to edits) is skipped,
    with the reason, not failed: the same suite runs unchanged on every provider."""
    try:
        return (yield)
    except NotHere as e:
        pytest.skip(f"schedgate: {e}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    rep = outcome.get_result()
    judge_known_bug(item, call, rep)
    if rep.when == "call":
        rep.schedgate_figures = figures_of(item)  # a plain attribute: pytest-xdist carries it to the controller
    state = state_of(item)
    if state is None or rep.when != "call":
        return
    dead = state.cluster.died()
    if dead and rep.passed:
        rep.outcome = "failed"
        rep.longrepr = "schedgate: a component died during the test: " + "; ".join(dead)
    if rep.failed:
        for s in distinct(state.cluster.schedulers):
            tail = s.log_tail(400)
            what = "from its crash" if any(line.startswith(PANIC) for line in tail) else "last 25 lines"
            rep.sections.append((f"scheduler {s.name} log ({what}; {s.log_path})", "\n".join(crash_tail(tail))))
    _after_call(item, rep, state)


def _after_call(item: pytest.Item, rep: pytest.TestReport, state: ItemState) -> None:
    """Record the test's pod timings and, on failure (or --artifacts-on always), write its artifacts."""
    c = state.cluster
    if c.can(Ability.RUNS_PODS) and rep.passed:
        for namespace in state.namespaces:
            why = wait_bound_pods_ready(namespace, cut_off=c.nodes.stopped)
            if why:
                rep.sections.append(("schedgate timings", f"scheduled->Ready not measured: {why}"))
    created = {p.name: p.created_wall for namespace in state.namespaces for p in namespace.pods}
    per_namespace = {}
    if c.control_plane_down():
        rep.sections.append(("schedgate timings", "not read: the control plane is down"))
    else:
        try:
            per_namespace = {namespace.name: pod_timings(c.core, c.events_api, namespace.name, created)
                             for namespace in state.namespaces}
        except Exception as e:  # noqa: BLE001 — the API may be what failed; the test's own outcome stands
            rep.sections.append(("schedgate timings", f"not read: {type(e).__name__}: {e}"))
    timings = [t for ts in per_namespace.values() for t in ts]
    if timings:
        setattr(rep, TIMINGS, summary_row(timings))
        # the logs only where a pod had claims (their allocation time is the scheduler's): reading a log is
        # copying it first on kind, and parsing it all where the test made many pods
        logs = read_logs((s.log_path for s in distinct(c.schedulers)), namespaces=per_namespace.keys()) \
            if any(t.has_claims for t in timings) else {}
        claims_and_gangs = admission(per_namespace, logs)
        if claims_and_gangs:
            setattr(rep, ADMISSION, claims_and_gangs.row())
    when = item.config.getoption("artifacts_on")
    root = Path(item.config.invocation_params.dir) / item.config.getoption("artifacts")
    attached = attached_to(item)
    if not (when == "always" or (when == "failure" and rep.failed)):
        if attached and when != "never":
            dest = folder_for(root, item.nodeid)
            shutil.rmtree(dest, ignore_errors=True)
            _attach(rep, dest, attached)
        return
    started = started_of(item.config)
    kept = started is not None and item.config.getoption("keep_cluster") and started.cluster is c
    reach = ([f"cluster kept running: export KUBECONFIG={c.kubeconfig}",
              f"stop it with: {sys.executable} -m schedgate down {started.run_dir}"] if kept and started else
             ["cluster stopped at the end of the run; run again with --keep-cluster to look at it live"])
    failure = str(rep.longrepr) if rep.failed else ""
    dest = collect(folder_for(root, item.nodeid), c, [namespace.name for namespace in state.namespaces],
                   title=item.nodeid, transcript=state.transcript, created=created, failure=failure,
                   summary=[f"test: {item.nodeid}", f"outcome: {rep.outcome}", *reach, "", failure])
    if not kept:  # the run folder goes when the run ends: name the logs' copies, which stay
        _moved(rep, {str(x.log_path): str(dest / "schedulers" / f"{x.name}.log") for x in distinct(c.schedulers)
                     if x.log_path and (dest / "schedulers" / f"{x.name}.log").exists()})
    rep.sections.append(("schedgate artifacts", f"{dest} (open {dest / 'placement.html'})"))
    setattr(rep, ARTIFACTS, [str(dest)])
    if attached:
        _attach(rep, dest, attached)


def _moved(rep: pytest.TestReport, copies: dict[str, str]) -> None:
    """The failure's text and sections with each log path replaced by its copy's."""
    def swap(text: str) -> str:
        for was, now in copies.items():
            text = text.replace(was, now)
        return text

    if isinstance(rep.longrepr, str):
        rep.longrepr = swap(rep.longrepr)
    rep.sections = [(swap(title), body) for title, body in rep.sections]


def _attach(rep: pytest.TestReport, dest: Path, files: dict[str, str]) -> None:
    """A test's own files (a performance comparison's perf.html, ...) into its artifacts folder."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (dest / name).write_text(text)
    rep.sections.append(("schedgate files", ", ".join(str(dest / n) for n in files)))


def _table(reporter: pytest.TerminalReporter, title: str, head: tuple[str, ...],
           rows: list[tuple[str, ...]]) -> None:
    """A section of the terminal summary: the first column left-aligned, the figures right-aligned."""
    reporter.section(title)
    table = [head, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        reporter.write_line("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                      for i, (c, w) in enumerate(zip(r, widths, strict=True))))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The run's tables, figures and cluster lines, from what the reports carried (see ``gather``)."""
    g = gathered(terminalreporter.config)
    if g.timings:
        _table(terminalreporter, "schedgate pod timings",
               ("test", "pods", "scheduled", "create->scheduled median (s)", "max (s)", "max attempts",
                "scheduled->Ready median (s)"), [(n, *(str(x) for x in row)) for n, row in g.timings])
    if g.admissions:
        _table(terminalreporter, "schedgate claims and gangs", ADMISSION_HEADER, [(n, *row) for n, row in g.admissions])
    if g.artifacts and terminalreporter.config.getoption("explain"):
        terminalreporter.section("schedgate explain")
        for folder in g.artifacts:
            why = Path(folder) / "explain.txt"
            if why.is_file():
                terminalreporter.write_line(f"{why}:")
                terminalreporter.write(why.read_text())
    if len(g.artifacts) == 1:  # one test (schedgate repro): its own folder, whose name the test's id makes
        terminalreporter.write_line(f"schedgate: artifacts in {g.artifacts[0]} (placement.html there)")
    elif g.artifacts:
        terminalreporter.write_line(f"schedgate: artifacts of {len(g.artifacts)} test(s) under "
                                    f"{Path(g.artifacts[0]).parent} (placement.html in each)")
    rows = []
    for key in ("passed", "failed"):
        for rep in terminalreporter.stats.get(key, []):
            if getattr(rep, "when", None) == "call":
                rows += [(rep.nodeid, k, v) for k, v in getattr(rep, "schedgate_figures", [])]
    starts = sorted(g.starts, key=lambda s: s.worker)
    for s in starts:
        if s.reaped:
            terminalreporter.write_line(f"schedgate: removed what crashed runs left: {'; '.join(s.reaped)}")
        rows.append((f"cluster start{f' ({s.worker})' if s.worker else ''}", "start to ready (s)", f"{s.total:.2f}"))
    if rows:
        terminalreporter.section("schedgate figures")
        width = max(len(f"{n} :: {k}") for n, k, _ in rows)
        for n, k, v in rows:
            terminalreporter.write_line(f"{(n + ' :: ' + k).ljust(width)}  {v}")
    if terminalreporter.config.getoption("keep_cluster"):
        for s in starts:
            if s.alive:
                terminalreporter.write_line(f"schedgate: cluster kept running; export KUBECONFIG={s.kubeconfig}")
                terminalreporter.write_line(f"schedgate: stop it with: {sys.executable} -m schedgate down {s.run_dir}")


class JUnitFigures:
    """Writes each test's figures as properties of the JUnit test suite (where xunit2 allows them)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:  # noqa: F811 (pytest's own name)
        figures = getattr(report, "schedgate_figures", None)
        xml = self.config.stash.get(xml_key, None)
        if xml is not None and figures:
            for name, value in figures:
                xml.add_global_property(f"schedgate: {report.nodeid} :: {name}", value)
