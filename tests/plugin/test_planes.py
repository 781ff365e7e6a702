"""Which scenario files share an extra control plane (schedgate.pytest_plugin.planes): on kind, whose plane
takes half a minute to start, every scheduler configuration of one gate set shares one and the scheduler
under test is replaced in it; on local each configuration has its own. No cluster is started."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgate.providers import ClusterRequest
from schedgate.pytest_plugin.planes import ExtraClusters, cluster_group, group_by_cluster
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


def groups(provider: str) -> dict[str, tuple[str, str, str]]:
    out = {}
    for path in (CONFORMANCE, RACKS, EARLY_PERMIT, GATED):
        group = cluster_group(load_scenario(ROOT / path), request(provider))
        assert group is not None, f"{path} runs on an extra cluster"
        out[path] = group
    return out


def test_on_kind_every_configuration_of_one_gate_set_shares_a_plane_and_on_local_each_has_its_own():
    kind, local = groups("kind"), groups("local")
    assert kind[CONFORMANCE][0] == kind[RACKS][0] == kind[EARLY_PERMIT][0] != kind[GATED][0]
    assert len({kind[p][1] for p in (CONFORMANCE, RACKS, EARLY_PERMIT)}) == 3, "three scheduler configurations"
    assert len({local[p][0] for p in (CONFORMANCE, RACKS, EARLY_PERMIT, GATED)}) == 4


@dataclass
class _Item:
    scenario: Any
    nodeid: str


def test_files_on_one_plane_run_together_by_configuration_then_by_definition():
    req = request("kind")
    paths = [CONFORMANCE, GATED, RACKS, "e2e/conformance/spread-no-node-satisfies.scenario.yaml", EARLY_PERMIT,
             "e2e/scenarios/spread-racks-soft.scenario.yaml"]
    items: list[Any] = [_Item(load_scenario(ROOT / p), p) for p in paths]
    group_by_cluster(items, req)
    assert [i.nodeid for i in items] == [CONFORMANCE, "e2e/conformance/spread-no-node-satisfies.scenario.yaml",
                                         RACKS, "e2e/scenarios/spread-racks-soft.scenario.yaml", EARLY_PERMIT, GATED]


@dataclass
class _Cluster:
    """What ExtraClusters asks of a cluster: its schedulers by profile, start, stop, nodes replaced."""

    schedulers: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def can(self, ability: Any) -> bool:
        return True

    def redefine(self, definition: Any) -> None:
        self.calls.append(f"nodes of {definition.name}")

    def start_scheduler(self, config: Any) -> str:
        self.calls.append(f"start {config.profile_names}")
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

    def stop(self) -> None:
        self.stopped += 1


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


def test_on_local_another_configuration_is_another_cluster(monkeypatch):
    started: list[_Started] = []
    monkeypatch.setattr("schedgate.pytest_plugin.planes.start_cluster",
                        lambda req: started.append(_Started(_Cluster())) or started[-1])
    extra = ExtraClusters(request("local"))
    extra.get(load_scenario(ROOT / CONFORMANCE))
    extra.get(load_scenario(ROOT / RACKS))
    assert len(started) == 2 and started[0].stopped == 1
