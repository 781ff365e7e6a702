"""Scenario files as pytest items: ``*.scenario.yaml`` anywhere pytest looks.

A file that does not validate is a collection error of one line (file, field,
line). Each valid file is one test. It runs on the session's cluster when its
scheduler configuration and control plane are the session's (its own nodes
replacing the session's for it); otherwise on a cluster started for it (kept
for other files that need the same one).
A scheduler configuration given on the command line replaces the file's, so a
scenario written for one profile runs against your build or a mutant.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schedgate.cluster import Ability, Cluster
from schedgate.cluster.apiserver import read_feature_gates
from schedgate.errors import SchedgateError
from schedgate.providers import provider
from schedgate.pytest_plugin.baseline import baseline_for
from schedgate.pytest_plugin.blackbox import skip_unmet
from schedgate.pytest_plugin.options import request_from, role_config
from schedgate.pytest_plugin.planes import on_session
from schedgate.pytest_plugin.state import item_state
from schedgate.report.figures import Report
from schedgate.runtime.scheduler import Scheduler
from schedgate.runtime.toolchain import pinned_kubernetes_version
from schedgate.scenarios.load import Scenario, is_scenario_file, load_scenario
from schedgate.scenarios.run import Run
from schedgate.spec.agent import kubelet_nodes
from schedgate.spec.features import skip_reason
from schedgate.spec.pattern import search
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.versions import KnownBug


def scenario_of(config: pytest.Config, path: Path) -> Scenario:
    """The scenario file at ``path`` as this session runs it: a ``--scheduler-config`` given on the command
    line replaces the file's, a role's name is that role's option."""
    override = request_from(config).scheduler_config if config.getoption("scheduler_config") else None
    return load_scenario(path, override, lambda name: role_config(config, name))


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        scenario = scenario_of(self.config, self.path)
        item = ScenarioItem.from_parent(self, name=scenario.name, callobj=_run)
        item.scenario = scenario
        yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str | Any:  # type: ignore[override]
        if isinstance(excinfo.value, SchedgateError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ScenarioItem(pytest.Function):
    scenario: Scenario

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str | Any:  # type: ignore[override]
        if isinstance(excinfo.value, AssertionError | SchedgateError):  # a verdict, or one line of what was wrong
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"scenario {self.scenario.name}"  # a line: a skip raised by a fixture is reported there


def _run(scenario_run: Run) -> None:
    scenario_run.run()


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_scenario_file(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


KNOWN_BUG = pytest.StashKey[KnownBug]()  # the file's known bug, on a version it affects


def judge_known_bug(item: pytest.Item, call: pytest.CallInfo[None], rep: pytest.TestReport) -> None:
    """A file failing as its known bug makes it fail is xfailed (pytest did that); one failing for another
    reason is a failure, naming what was expected."""
    bug = item.stash.get(KNOWN_BUG, None)
    if bug is None or rep.when != "call" or not hasattr(rep, "wasxfail") or call.excinfo is None:
        return
    said = str(call.excinfo.value)
    if not search(bug.fails_with, said):
        rep.outcome = "failed"
        del rep.wasxfail
        first = said.strip().splitlines()[0] if said.strip() else call.excinfo.typename
        rep.longrepr = (f"schedgate: failed, but not as known bug {bug.name} makes it fail "
                        f"(/{bug.fails_with}/ not in its message): {first}")


@pytest.fixture
def scenario_run(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> Iterator[Run]:
    """The scenario file's run: its cluster, a namespace of its own, schedulers it starts."""
    item = request.node
    scenario: Scenario = item.scenario
    name = request_from(pytestconfig).provider
    if scenario.unserved:
        under_test = request_from(pytestconfig).scheduler_config.source
        pytest.skip(f"schedgate: {scenario.source}: its own scheduler configuration serves "
                    f"{', '.join(map(repr, scenario.unserved))}, which {under_test}, replacing it in this run, "
                    "does not")
    refused = provider(name).cannot_run(scenario.definition)
    if refused:
        pytest.skip(f"schedgate: {refused}")
    here = provider(name).abilities
    kubelets = kubelet_nodes(scenario.definition)  # kind's workers: they register themselves, and admit
    if "adds" in scenario.node_objects and (kubelets or Ability.ADDS_NODES not in here):
        pytest.skip(f"schedgate: {scenario.source}: {scenario.node_objects['adds']} adds nodes; the {name} "
                    "provider's nodes are kubelets or a cluster's own (the local provider adds them)")
    if "overcommits" in scenario.node_objects and kubelets:
        pytest.skip(f"schedgate: {scenario.source}: {scenario.node_objects['overcommits']} needs a node the API "
                    f"server lets two schedulers overcommit; every {name} node runs a kubelet, whose admission "
                    "refuses a pod that does not fit (the local provider's nodes do not)")
    if scenario.has_devices and Ability.PUBLISHES_DEVICES not in here:
        pytest.skip(f"schedgate: {scenario.source} defines devices; the {name} provider's nodes are a cluster's "
                    "own, with its own DRA drivers (local publishes them, kind runs schedgate's driver)")
    needs = dict(scenario.needs)
    if scenario.has_devices:
        needs.setdefault("devices", "its cluster's devices")
    skip_unmet(scenario.scheduler or request_from(pytestconfig).scheduler_config, needs, scenario.source)
    turned_on = {name for name, value in scenario.definition.gates.feature_gates if value}
    if on_session(scenario, request_from(pytestconfig)):
        cluster: Cluster = request.getfixturevalue("cluster")
    else:  # a version too old for a feature skips before a cluster of the scenario's own definition starts,
        # and without starting the session's: a cluster schedgate makes runs the pinned version
        version = pinned_kubernetes_version() if Ability.MAKES_CLUSTERS in here else \
            request.getfixturevalue("cluster").kubernetes_version
        too_old = skip_reason(needs, version, scenario.source, on=turned_on)
        if too_old:
            pytest.skip(too_old)
        cluster = request.getfixturevalue("schedgate_extra_clusters").get(scenario)
    too_old = skip_reason(needs, cluster.kubernetes_version, scenario.source,
                          lambda: read_feature_gates(cluster.api), on=turned_on)
    if too_old:
        pytest.skip(too_old)
    bug = scenario.known_bug
    if bug is not None and bug.affects.holds(cluster.kubernetes_version):
        item.stash[KNOWN_BUG] = bug
        item.add_marker(pytest.mark.xfail(strict=not bug.race, reason=bug.reason(cluster.kubernetes_version)))
    state = item_state(item, cluster)
    ns = cluster.new_namespace(scenario.name)
    state.namespaces.append(ns)
    started: list[Scheduler] = []

    def start(config: SchedulerConfig) -> Scheduler:
        proc = cluster.start_scheduler(config)
        started.append(proc)
        return proc

    run = Run(scenario=scenario, cluster=cluster, ns=ns, start_scheduler=start,
              role_config=lambda role: role_config(pytestconfig, role), report=Report(item),
              transcript=state.transcript, baseline=baseline_for(pytestconfig))
    try:
        yield run
    finally:
        run.close()
        for proc in started:
            cluster.stop_scheduler(proc)
        ns.clean()


__all__ = ["ScenarioFile", "ScenarioItem", "collect_file", "judge_known_bug", "scenario_of", "scenario_run"]
