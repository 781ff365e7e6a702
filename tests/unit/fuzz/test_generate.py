"""Generated scenarios (schedgate fuzz): every drawn example is a scenario file the loader accepts, the same
seed draws the same examples, bounds are checked like every option, and a bad option is one line, exit 2,
before anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings

from schedgate.errors import SchedgateError
from schedgate.fuzz.bounds import Bounds
from schedgate.fuzz.generate import APP, GANG_LABEL, GANG_MIN_LABEL, HOSTNAME, examples, scenario_doc, size
from schedgate.fuzz.run import Fuzzer
from schedgate.scenarios.invariants import Invariants, _settled
from schedgate.scenarios.load import load_scenario
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_every_drawn_example_is_a_file_the_loader_accepts(tmp_path, drawn):
    nodes, pods, spreads = drawn
    doc = scenario_doc("fuzz-t", nodes, pods, spreads, "gpu-packing-scheduler", CONFIG, "drawn")
    path = tmp_path / "x.scenario.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    scenario = load_scenario(path)
    assert [n.name for n in scenario.definition.nodes()] == [f"node-{i}" for i in range(len(nodes))]
    assert len(scenario.pods) == len(pods)
    assert scenario.steps[-1].action.outcome == Invariants(no_missed_fit=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_every_edit_only_makes_room(drawn):
    """What noMissedFit's soundness rests on: a label a node lacked, a taint it had, a new node, an earlier pod
    not deleted before; nothing tightened."""
    doc = scenario_doc("fuzz-t", *drawn, "gpu-packing-scheduler", CONFIG, "drawn")
    nodes = {n["name"]: n for n in doc["cluster"]["nodes"]}
    made: list[str] = []
    for step in doc["steps"]:
        (kind, body), = step.items()
        if kind == "createPods":
            made.append(body["name"])
        elif kind == "label":
            labels = nodes[body["nodes"]].setdefault("labels", {})
            assert body["key"] not in labels
            labels[body["key"]] = body["value"]
        elif kind == "untaint":
            taints = nodes[body["nodes"]]["taints"]
            assert body["key"] in [t["key"] for t in taints]
            taints[:] = [t for t in taints if t["key"] != body["key"]]
        elif kind == "addNodes":
            (node,) = body["nodes"]
            assert node["name"] not in nodes
            nodes[node["name"]] = node
        elif kind == "deletePods":
            assert body["pods"] in made[:-1]
            made.remove(body["pods"])
        elif kind == "apply":
            assert body["manifest"]["kind"] == "PriorityClass"
        else:
            assert kind in ("stopScheduler", "startScheduler", "expect", "wait"), kind


@settings(max_examples=80, deadline=None)
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_a_pod_that_must_not_be_deleted_is_never_a_possible_victim(drawn):
    """Preemption deletes pods, so what spread, affinity, gangs and devices are judged on at the end rests on
    this: a pod of an app that spreads or that some pod requires, a gang's member and a pod with devices has the
    highest PriorityClass where any pod has one; every class a pod names is applied before the pods come."""
    doc = scenario_doc("fuzz-t", *drawn, "gpu-packing-scheduler", CONFIG, "drawn")
    applied = [s["apply"]["manifest"] for s in doc["steps"] if "apply" in s]
    top = max((c["value"] for c in applied), default=None)
    values = {c["metadata"]["name"]: c["value"] for c in applied}
    pods = [s["createPods"] for s in doc["steps"] if "createPods" in s]
    required = {t["labelSelector"]["matchLabels"][APP] for p in pods for t in
                (((p.get("pod") or {}).get("spec") or {}).get("affinity") or {}).get("podAffinity", {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution", [])}
    for p in pods:
        assert p.get("priorityClass") is None or p["priorityClass"] in values
        labels = p.get("labels") or {}
        spec = (p.get("pod") or {}).get("spec") or {}
        if top is not None and (spec.get("topologySpreadConstraints") or labels.get(APP) in required
                                or GANG_LABEL in labels or p.get("devices")):
            assert values[p["priorityClass"]] == top, p


@settings(max_examples=80, deadline=None)
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_a_spreading_apps_pods_all_carry_its_constraint_and_no_edit_moves_its_domains(drawn):
    """What judging spread at the end rests on (the oracle's ``uncounted``): every pod of an app that spreads
    carries the same constraint; none of them is deleted; no node is added under a spread by host and no zone
    label under a spread by zone."""
    doc = scenario_doc("fuzz-t", *drawn, "gpu-packing-scheduler", CONFIG, "drawn")
    constraints: dict[str, list[object]] = {}
    spreading: set[str] = set()
    keys = set()
    for step in doc["steps"]:
        (kind, body), = step.items()
        if kind == "createPods" and (spread := body.get("pod", {}).get("spec", {}).get("topologySpreadConstraints")):
            app = body["labels"][APP]
            constraints.setdefault(app, []).append(spread)
            spreading.add(body["name"])
            keys.add(spread[0]["topologyKey"])
        elif kind == "createPods" and body.get("labels", {}).get(APP) in constraints:
            raise AssertionError(f"{body['name']} is of a spreading app but carries no constraint")
        elif kind == "deletePods":
            assert body["pods"] not in spreading
        elif kind == "addNodes":
            assert HOSTNAME not in keys
        elif kind == "label":
            assert body["key"] not in keys
    for app, seen in constraints.items():
        assert all(c == seen[0] for c in seen), app
        assert seen[0][0]["labelSelector"] == {"matchLabels": {APP: app}}


@settings(max_examples=60, deadline=None)
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_devices_come_only_with_an_example_that_has_them_and_its_device_class(drawn):
    doc = scenario_doc("fuzz-t", *drawn, "gpu-packing-scheduler", CONFIG, "drawn")
    nodes = [n for n in doc["cluster"]["nodes"] if "devices" in n]
    pods = [s["createPods"] for s in doc["steps"] if "devices" in s.get("createPods", {})]
    if not drawn[2]["devices"]:
        assert not nodes and not pods and "deviceClasses" not in doc["cluster"]
        return
    assert doc["cluster"]["deviceClasses"] == ["clusters/deviceclasses/gpu.schedgate.io.yaml"]
    for n in nodes:
        (entry,) = n["devices"]
        count = entry["count"]
        assert {k: entry[k] for k in ("driver", "count", "name")} == {"driver": "gpu.schedgate.io", "count": count,
                                                                      "name": "gpu"} and count in (1, 2, 3)
        assert set(entry) <= {"driver", "count", "name", "attributes", "counters", "consumes"}
        if "attributes" in entry:  # a colour each
            assert len(entry["attributes"]["color"]) == count and set(entry["attributes"]["color"]) <= {"red", "blue"}
        if "counters" in entry:  # partitions: all but one can be allocated at once
            assert count > 1 and entry["counters"] == {"gpu": {"slices": str(count - 1)}}
            assert entry["consumes"] == {"gpu": {"slices": "1"}}
    assert all(p["devices"]["class"] == "gpu.schedgate.io" and p["devices"]["count"] in (1, 2) for p in pods)
    assert all(p["devices"].get("sameAttribute", "gpu.schedgate.io/color") == "gpu.schedgate.io/color" and (
        "sameAttribute" not in p["devices"] or p["devices"]["count"] == 2) for p in pods)


@settings(max_examples=60, deadline=None)
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_a_gangs_members_carry_its_name_and_minimum_and_none_is_deleted(drawn):
    """What judging a gang at the end rests on: every member says its group's one minimum, and no edit deletes a
    member (a group bound whole would be left in part)."""
    doc = scenario_doc("fuzz-t", *drawn, "gang-scheduler", CONFIG, "drawn")
    members: dict[str, set[str]] = {}
    names: set[str] = set()
    for step in doc["steps"]:
        (kind, body), = step.items()
        labels = body.get("labels", {}) if kind == "createPods" else {}
        if GANG_LABEL in labels:
            members.setdefault(labels[GANG_LABEL], set()).add(labels[GANG_MIN_LABEL])
            names.add(body["name"])
        elif kind == "deletePods":
            assert body["pods"] not in names
    assert all(mins == {str(drawn[2]["gangs"][g])} and mins <= {"2", "3"} for g, mins in members.items())


@settings(max_examples=80, deadline=None)
@given(examples(Bounds(max_nodes=4, max_pods=8)))
def test_an_affinity_names_another_app_on_the_node_and_none_of_its_pods_is_deleted(drawn):
    """What judging required affinity at the end rests on: a pod never requires its own app (upstream's first-of-
    its-kind exception needs the order of the binds), and no pod of a required app is deleted."""
    doc = scenario_doc("fuzz-t", *drawn, "gpu-packing-scheduler", CONFIG, "drawn")
    required, apps = set(), {}
    for step in doc["steps"]:
        (kind, body), = step.items()
        if kind == "createPods":
            apps[body["name"]] = body.get("labels", {}).get(APP)
            for term in body.get("pod", {}).get("spec", {}).get("affinity", {}).get("podAffinity", {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution", []):
                near = term["labelSelector"]["matchLabels"][APP]
                assert term["topologyKey"] == HOSTNAME and near != apps[body["name"]]
                required.add(near)
    deleted = [s["deletePods"]["pods"] for s in doc["steps"] if "deletePods" in s]
    assert not any(apps[name] in required for name in deleted)


@settings(max_examples=30, deadline=None)
@given(examples(Bounds(max_nodes=4, max_pods=8, without=frozenset({"anti-affinity", "host-ports", "edits",
                                                                   "spread", "devices", "gangs", "affinity",
                                                                   "preemption"}))))
def test_what_is_left_out_is_never_drawn(drawn):
    doc = scenario_doc("fuzz-t", *drawn, "pool-scheduler", CONFIG, "drawn")
    kinds = {next(iter(step)) for step in doc["steps"]}
    assert kinds <= {"createPods", "stopScheduler", "startScheduler", "expect"}  # no edit, so no wait for one
    assert not any("pod" in step.get("createPods", {}) for step in doc["steps"])  # no affinity, no ports
    assert not any("devices" in step.get("createPods", {}) for step in doc["steps"])
    assert "deviceClasses" not in doc["cluster"] and not any("devices" in n for n in doc["cluster"]["nodes"])
    assert not any(GANG_LABEL in step.get("createPods", {}).get("labels", {}) for step in doc["steps"])
    assert not any("priorityClass" in step.get("createPods", {}) for step in doc["steps"])


@pytest.mark.parametrize("config,gangs,timeout", [
    ("clusters/profiles/gpu-packing-scheduler.yaml", False, 20),  # the longest backoff and 10 s
    ("clusters/profiles/gang.yaml", True, 30),  # and the Gang plugin's Permit timeout (10 s there)
])
def test_gangs_are_drawn_for_a_profile_that_admits_them_and_wait_out_its_permit_timeout(config, gangs, timeout):
    loaded = load_scheduler_config(ROOT / config)
    profile = loaded.profile_names[0]
    assert (loaded.enabled_args(profile, "Gang") is not None) is gangs
    without = frozenset() if gangs else frozenset({"gangs"})
    fuzzer = Fuzzer(cluster=None, config=loaded, config_file=ROOT / config, profile=profile,  # type: ignore[arg-type]
                    bounds=Bounds(without=without), seed=0)
    try:
        assert fuzzer.timeout == timeout
    finally:
        fuzzer.close()


def test_the_same_seed_draws_the_same_examples():
    def draw(number: int) -> list[object]:
        seen: list[object] = []

        @seed(number)
        @settings(max_examples=10, database=None)
        @given(examples(Bounds()))
        def collect(drawn):
            seen.append(drawn)

        collect()
        return seen

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)


@pytest.mark.parametrize("field,value", [("examples", 0), ("max_nodes", 9), ("max_pods", 0), ("budget", 0)])
def test_a_bound_out_of_range_names_its_option(field, value):
    with pytest.raises(SchedgateError, match=f"--{field.replace('_', '-')}: must be"):
        Bounds(**{field: value})


def test_the_smallest_failure_is_the_one_with_fewer_steps_and_nodes():
    one = scenario_doc("a", [{"cpu": "1", "memory": "2Gi", "pods": 110, "gpus": 0, "labels": [], "taints": [],
                              "unschedulable": False}], [], {}, "p", CONFIG, "")
    two = dict(one, cluster=dict(one["cluster"], nodes=one["cluster"]["nodes"] * 2))
    assert size(one) < size(two)


@pytest.mark.parametrize("pod,verdict", [
    ({"spec": {"nodeName": "n"}}, "bound"),
    ({"spec": {}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}},
     "unschedulable"),
    ({"spec": {}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError",
                                             "message": "boom"}]}}, "SchedulerError: boom"),
    ({"spec": {}, "status": {}}, None),
    ({"spec": {}, "status": {"nominatedNodeName": "n", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}, None),  # waiting at Permit
])
def test_a_pod_is_settled_bound_or_refused_and_a_scheduler_error_is_told_apart(pod, verdict):
    assert _settled(pod) == verdict


def test_a_bad_invariants_field_is_one_line(tmp_path):
    path = tmp_path / "x.scenario.yaml"
    doc = scenario_doc("fuzz-t", [], [], {}, "gpu-packing-scheduler", CONFIG, "")
    doc["cluster"]["nodes"] = [{"name": "node-0", "capacity": {"cpu": "1", "memory": "1Gi", "pods": 110}}]
    doc["steps"] = [{"expect": {"invariants": {"noMissedFit": "yes"}}}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SchedgateError, match=r"steps\[0\]\.expect\.invariants\.noMissedFit: .*\(line \d+\)"):
        load_scenario(path)


@pytest.mark.parametrize("args,said", [
    (["--max-nodes", "0"], "--max-nodes: must be 1..8, got 0"),
    (["--seed", "-1"], "--seed: must be 0 or more, got -1"),
    (["--without", "host-ports,evictions"], "--without: 'evictions' is not a feature to leave out (one of "
                                            "anti-affinity, host-ports, restarts, edits, spread, devices, gangs, "
                                            "affinity, preemption)"),
    (["--profile", "nope"], "--profile 'nope': not a profile of"),
    (["--scheduler-config", "/nonexistent.yaml"], "/nonexistent.yaml"),
])
def test_a_bad_option_is_one_line_and_exit_2_before_anything_starts(args, said, tmp_path):
    done = subprocess.run([sys.executable, "-m", "schedgate", "fuzz", *args, "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


def test_a_claim_for_one_colour_loads_where_no_node_has_devices(tmp_path):
    """The attribute is named with its driver's domain: with no device in the cluster, none is implied."""
    node = {"cpu": "2", "memory": "4Gi", "pods": 110, "gpus": 0, "labels": [], "taints": [], "unschedulable": False,
            "devices": 0}
    pod = {"cpu": "500m", "memory": "512Mi", "gpus": 0, "require": [], "tolerate": [], "devices": 2, "same": True}
    doc = scenario_doc("fuzz-t", [node], [pod], {"devices": True}, "gpu-packing-scheduler", CONFIG, "drawn")
    path = tmp_path / "x.scenario.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert load_scenario(path).pods


def test_preemptions_are_read_from_the_victims_events_with_the_priority_admitted_when_made():
    """A victim is gone by the time the invariants run: its priority is the one the API server gave it when the
    test made it, its node the one its "Scheduled" event names; its preemptor the test's pod of the UID its
    "Preempted" event names. A preemptor that is gone, or no pod, is named, not judged."""
    from types import SimpleNamespace

    from schedgate.scenarios.invariants import preemptions

    def event(reason: str, pod: str, note: str) -> dict[str, object]:
        return {"reason": reason, "regarding": {"kind": "Pod", "name": pod}, "note": note}

    r = SimpleNamespace(ns=SimpleNamespace(name="ns-1"), pods={"v": SimpleNamespace(priority=100),
                                                               "w": SimpleNamespace(priority=None)})
    events = [event("Scheduled", "v", "Successfully assigned ns-1/v to node-2"),
              event("Preempted", "v", "Preempted by pod u-1 on node node-2"),
              event("Preempted", "w", "Preempted by pod u-1 on node node-0 (in kube-scheduler memory)."),
              event("Preempted", "x", "Preempted by pod u-9 on node node-0"),
              event("Preempted", "y", "Preempted by pod group u-7 on node node-0")]
    out, skipped = preemptions(r, events, [{"metadata": {"name": "p", "uid": "u-1"}}])  # type: ignore[arg-type]
    assert out == [
        {"victim": "ns-1/v", "victimPriority": 100, "victimNode": "node-2", "preemptor": "ns-1/p", "node": "node-2",
         "inMemory": False},
        {"victim": "ns-1/w", "victimPriority": None, "victimNode": "", "preemptor": "ns-1/p", "node": "node-0",
         "inMemory": True}]
    assert skipped == ["preemption: victim x: its preemptor (pod u-9) is gone, not judged",
                       "preemption: victim y: its preemptor (pod group u-7) is no pod, not judged"]


def test_a_pod_gone_is_decided():
    """A preemption's victim is deleted: a wait until every pod so far is decided does not wait for it."""
    from schedgate.kube.watch import MATCH
    from schedgate.objects.matchers import decided

    assert decided()(None) == MATCH
    assert decided()({"spec": {}, "status": {}}).verdict.value == "pending"


def test_a_violation_is_the_tests_when_it_names_one_of_its_pods_or_a_node_holding_one():
    """On kind the control plane is cordoned and holds static pods no scheduler placed: not the test's."""
    from schedgate.scenarios.invariants import _ours

    def v(pod: str, node: str, detail: str = "") -> dict[str, str]:
        return {"rule": "taints", "pod": pod, "node": node, "detail": detail}

    assert _ours(v("ns-1/a", "node-0"), "ns-1", {"node-0"})
    assert _ours(v("kube-system/x", "node-0", "pods kube-system/x and ns-1/a share ..."), "ns-1", {"node-0"})
    assert not _ours(v("kube-system/etcd", "kind-control-plane"), "ns-1", {"node-0"})
    assert _ours({"rule": "resources", "node": "node-0", "detail": "cpu"}, "ns-1", {"node-0"})
    assert not _ours({"rule": "resources", "node": "kind-control-plane", "detail": "cpu"}, "ns-1", {"node-0"})
