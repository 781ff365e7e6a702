"""Which scenario files share a control plane (schedgate.pytest_plugin.planes): a file whose plane would be
started as the session's runs on the session's cluster, its nodes (and on kind its scheduler) in place of the
session's; on kind, whose plane takes half a minute to start, every scheduler configuration of one gate set
shares one plane and the scheduler under test is replaced in it; on local each configuration has its own.
No cluster is started."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from schedgate.errors import SchedgateError
from schedgate.providers import ClusterRequest
from schedgate.pytest_plugin.planes import (
    ExtraClusters,
    cluster_group,
    group_by_cluster,
    on_session,
    session_as,
    set_session,
)
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = "e2e/conformance/fit-cpu-equal-edge-fits.scenario.yaml"  # the default profile, small clusters
RACKS = "e2e/scenarios/spread-racks-hard.scenario.yaml"  # gpu-packing-scheduler on clusters/racks.yaml
EARLY_PERMIT = "e2e/fuzz/gang-early-permit.scenario.yaml"  # a profile of its own
GATED = "e2e/scenarios/native-podgroup-gang.scenario.yaml"  # GenericWorkload on


def request(provider: str) -> ClusterRequest:
    return ClusterRequest(provider, load_definition(ROOT / "clusters/inference.yaml"),
                          load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml"))


def test_on_kind_every_file_of_the_sessions_gate_set_runs_on_the_session_cluster_on_local_only_its_configuration():
    kind, local = request("kind"), request("local")
    conformance, racks, early, gated = (load_scenario(ROOT / p) for p in (CONFORMANCE, RACKS, EARLY_PERMIT, GATED))
    assert [on_session(s, kind) for s in (conformance, racks, early, gated)] == [True, True, True, False]
    assert [on_session(s, local) for s in (conformance, racks, early, gated)] == [False, True, False, False]
    assert cluster_group(racks, local) is None and cluster_group(early, kind) is None
    assert len({cluster_group(s, local)[0] for s in (conformance, early, gated)}) == 3
    kubelets = replace(kind, definition=load_definition(ROOT / "clusters/dra-kubelets.yaml"))
    assert not on_session(racks, kubelets), "a kubelet is not replaced by a file's node"
    existing = ClusterRequest("existing", kind.definition, kind.scheduler_config)
    assert not on_session(racks, existing), "a cluster schedgate did not make keeps its nodes"


def test_the_session_cluster_is_given_a_files_nodes_only_where_they_replace_the_sessions(tmp_path):
    kind = request("kind")
    racks = load_scenario(ROOT / RACKS)
    assert session_as(_Item(racks, "racks"), kind) == (racks.definition, racks.scheduler)
    # A cluster schedgate did not make runs a file of its definition as it is: the gate its requires: turns on
    # where schedgate starts the cluster is not one to replace the nodes with there (the file skips instead).
    needs = tmp_path / "needs-gate.scenario.yaml"
    needs.write_text(f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: needs-gate
cluster: {ROOT}/clusters/inference.yaml
requires: [GenericWorkload]
steps:
  - apply:
      manifest: {{apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {{name: pair}},
                 spec: {{schedulingPolicy: {{gang: {{minCount: 2}}}}}}}}
""")
    gated = load_scenario(needs)
    existing = ClusterRequest("existing", kind.definition, kind.scheduler_config)
    assert on_session(gated, existing) and gated.definition != existing.definition
    assert session_as(_Item(gated, "gated"), existing) == (existing.definition, existing.scheduler_config)
    assert session_as(_Item(None, "test_x.py::test_y"), kind) == (kind.definition, kind.scheduler_config)


def test_gated_files_of_one_plane_run_together_by_configuration_then_by_definition():
    req = request("kind")
    gated = load_scenario(ROOT / GATED)
    other = replace(load_scenario(ROOT / "e2e/scenarios/native-podgroup-too-big.scenario.yaml"),
                    scheduler=load_scenario(ROOT / EARLY_PERMIT).scheduler)
    rack = "e2e/scenarios/native-podgroup-one-rack.scenario.yaml"  # another gate set
    items: list[Any] = [_Item(gated, "gated"), _Item(load_scenario(ROOT / RACKS), "racks"),
                        _Item(load_scenario(ROOT / rack), "rack"), _Item(other, "other"),
                        _Item(load_scenario(ROOT / "e2e/scenarios/native-podgroup-min-raised.scenario.yaml"), "min")]
    group_by_cluster(items, req)
    assert [i.nodeid for i in items] == ["gated", "min", "other", "racks", "rack"]


@dataclass
class _Item:
    scenario: Any
    nodeid: str


@dataclass
class _Nodes:
    calls: list[str]

    def reset(self) -> bool:
        self.calls.append("nodes put back")
        return False


@dataclass
class _Cluster:
    """What ExtraClusters asks of a cluster: its schedulers by profile, start, stop, nodes replaced."""

    schedulers: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    definition: Any = None
    refuses: str = ""  # a lease name whose scheduler does not start

    def __post_init__(self) -> None:
        self.nodes = _Nodes(self.calls)

    def can(self, ability: Any) -> bool:
        return True

    def redefine(self, definition: Any) -> None:
        self.calls.append(f"nodes of {definition.name}")
        self.definition = definition

    def start_scheduler(self, config: Any) -> str:
        self.calls.append(f"start {config.profile_names}")
        if config.lease_name == self.refuses:
            raise SchedgateError("refused its configuration")
        for p in config.profile_names:
            self.schedulers[p] = f"proc {config.lease_name}"
        return f"proc {config.lease_name}"

    def stop_scheduler(self, proc: str) -> None:
        self.calls.append(f"stop {proc}")
        self.schedulers = {p: s for p, s in self.schedulers.items() if s != proc}

    def sync_schedulers(self, timeout: float = 15.0) -> float:
        self.calls.append("sync")
        return 0.0

    def died(self) -> list[str]:
        return []

    def catch_up(self) -> list[str]:
        return []


@dataclass
class _Started:
    cluster: _Cluster
    stopped: int = 0
    reconfigure: Any = None  # kind's: the running control plane given another gate set


    def stop(self) -> None:
        self.stopped += 1


def _reconfigures(s: _Started) -> _Started:
    s.reconfigure = lambda d: s.cluster.calls.append(f"gates {d.gates.feature_gates}")
    return s


def test_a_file_of_another_configuration_replaces_the_scheduler_under_test_not_the_plane(monkeypatch):
    started: list[_Started] = []

    def start(req: ClusterRequest) -> _Started:
        s = _Started(_Cluster())
        s.cluster.start_scheduler(req.scheduler_config)
        started.append(s)
        return s

    monkeypatch.setattr("schedgate.pytest_plugin.planes.start_cluster", start)
    extra = ExtraClusters(request("kind"))
    conformance, racks = load_scenario(ROOT / CONFORMANCE), load_scenario(ROOT / RACKS)
    first = extra.get(conformance)
    assert extra.get(racks) is first and len(started) == 1
    old, new = conformance.scheduler.lease_name, racks.scheduler.lease_name
    assert first.calls == [f"start {conformance.scheduler.profile_names}", "nodes of racks", f"stop proc {old}",
                           f"start {racks.scheduler.profile_names}", "sync"]
    assert set(first.schedulers.values()) == {f"proc {new}"}
    first.calls.clear()
    assert extra.get(load_scenario(ROOT / "e2e/scenarios/spread-racks-soft.scenario.yaml")) is first
    assert first.calls == ["nodes of racks"], "the same configuration: nothing restarted"
    extra.get(load_scenario(ROOT / GATED))  # another gate set: a plane of its own, the last one stopped first
    assert len(started) == 2 and started[0].stopped == 1


def test_on_kind_the_next_gate_set_reconfigures_the_running_plane_unless_a_file_needs_kubelets(monkeypatch):
    started: list[_Started] = []

    def start(req: ClusterRequest) -> _Started:
        s = _reconfigures(_Started(_Cluster()))
        s.cluster.start_scheduler(req.scheduler_config)
        started.append(s)
        return s

    monkeypatch.setattr("schedgate.pytest_plugin.planes.start_cluster", start)
    extra = ExtraClusters(request("kind"))
    gated = load_scenario(ROOT / GATED)
    rack = load_scenario(ROOT / "e2e/scenarios/native-podgroup-one-rack.scenario.yaml")
    first = extra.get(gated)
    first.calls.clear()
    assert extra.reconfigurable_for(rack)
    assert extra.get(rack) is first and len(started) == 1 and started[0].stopped == 0
    lease = gated.scheduler.lease_name if gated.scheduler else extra.base.scheduler_config.lease_name
    config = rack.scheduler or extra.base.scheduler_config
    # The nodes put back (a stopped heartbeat given back) while the old agent runs, before the gates change.
    assert first.calls == [f"stop proc {lease}", "nodes put back", f"gates {rack.definition.gates.feature_gates}",
                           f"nodes of {rack.definition.name}", f"start {config.profile_names}", "sync"]
    kubelets = replace(rack, definition=load_definition(ROOT / "clusters/dra-kubelets.yaml"))
    assert not extra.reconfigurable_for(kubelets)  # a kubelet keeps the gates it started with: a new cluster
    extra.get(kubelets)
    assert len(started) == 2 and started[0].stopped == 1


def test_on_local_another_configuration_is_another_cluster(monkeypatch):
    started: list[_Started] = []
    monkeypatch.setattr("schedgate.pytest_plugin.planes.start_cluster",
                        lambda req: started.append(_Started(_Cluster())) or started[-1])
    extra = ExtraClusters(request("local"))
    extra.get(load_scenario(ROOT / CONFORMANCE))
    extra.get(load_scenario(ROOT / RACKS))
    assert len(started) == 2 and started[0].stopped == 1


def test_the_session_cluster_takes_a_files_nodes_and_scheduler_and_gives_them_back_once_each():
    req, stash = request("kind"), pytest.Stash()
    c = _Cluster(definition=req.definition)
    c.start_scheduler(req.scheduler_config)
    conformance = load_scenario(ROOT / CONFORMANCE)
    mine, theirs = req.scheduler_config, conformance.scheduler
    c.calls.clear()
    assert set_session(stash, req, c, conformance.definition, theirs) == ""
    assert c.calls == [f"nodes of {conformance.definition.name}", f"stop proc {mine.lease_name}",
                       f"start {theirs.profile_names}", "sync"]
    c.calls.clear()
    assert set_session(stash, req, c, conformance.definition, theirs) == "" and c.calls == [], "already so"
    assert set_session(stash, req, c, req.definition, mine) == ""
    assert c.calls == [f"nodes of {req.definition.name}", f"stop proc {theirs.lease_name}",
                       f"start {mine.profile_names}", "sync"]
    assert set(c.schedulers.values()) == {f"proc {mine.lease_name}"}


def test_a_scheduler_that_does_not_start_in_the_session_cluster_is_one_line_and_the_sessions_comes_back():
    req, stash = request("kind"), pytest.Stash()
    c = _Cluster(definition=req.definition)
    c.start_scheduler(req.scheduler_config)
    conformance = load_scenario(ROOT / CONFORMANCE)
    c.refuses = conformance.scheduler.lease_name
    failed = set_session(stash, req, c, conformance.definition, conformance.scheduler)
    assert failed == "refused its configuration"
    assert set(c.schedulers.values()) == {f"proc {req.scheduler_config.lease_name}"}
    c.calls.clear()
    assert set_session(stash, req, c, conformance.definition, req.scheduler_config) == "" and c.calls == []
