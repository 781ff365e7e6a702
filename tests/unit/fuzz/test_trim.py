"""The cuts made after Hypothesis (schedgate.fuzz.trim): each is a smaller file the loader accepts, a pod
leaves with every step that names it, and a failure's rule is what it broke without its names."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings

from schedgate.fuzz.bounds import Bounds
from schedgate.fuzz.generate import examples, scenario_doc, size
from schedgate.fuzz.trim import cuts, rule, without_class, without_node, without_pod, without_step
from schedgate.scenarios.load import load_scenario

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")
P = "gpu-packing-scheduler"


def pod(name: str) -> dict[str, object]:
    return {"createPods": {"name": name, "scheduler": P, "cpu": "1", "memory": "128Mi"}}


DOC = {"apiVersion": "schedgate.io/v1alpha1", "kind": "Scenario", "name": "t", "scheduler": CONFIG,
       "cluster": {"apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": "fuzz",
                   "nodes": [{"name": "node-0", "capacity": {"cpu": "2", "memory": "4Gi", "pods": 110}}]},
       "steps": [pod("pod-0"), {"stopScheduler": {"profile": P}}, pod("pod-1"), {"startScheduler": {"profile": P}},
                 {"wait": {"pods": ["pod-0", "pod-1"], "until": "decided"}},
                 {"addNodes": {"nodes": [{"name": "node-1", "capacity": {"cpu": "2", "memory": "4Gi", "pods": 110}}]}},
                 pod("pod-2"), {"wait": {"pods": ["pod-0", "pod-1", "pod-2"], "until": "decided"}},
                 {"label": {"nodes": "node-1", "key": "fuzz.schedgate.io/net", "value": "true"}},
                 {"wait": {"pods": ["pod-1", "pod-2"], "until": "decided"}}, {"deletePods": {"pods": "pod-0"}},
                 {"expect": {"invariants": {"noMissedFit": True}, "timeout": 20}}]}


def kinds(doc: dict[str, object]) -> list[str]:
    return [next(iter(s)) for s in doc["steps"]]  # type: ignore[attr-defined]


def test_a_pod_leaves_with_its_restart_its_deletion_and_its_name_in_the_waits():
    out = without_pod(DOC, "pod-1")
    assert kinds(out) == ["createPods", "wait", "addNodes", "createPods", "wait", "label", "wait", "deletePods",
                          "expect"]
    assert [s["wait"]["pods"] for s in out["steps"] if "wait" in s] == [["pod-0"], ["pod-0", "pod-2"], ["pod-2"]]
    gone = without_pod(DOC, "pod-0")
    assert "deletePods" not in kinds(gone) and "pod-0" not in str(gone["steps"])


def test_an_added_node_leaves_with_its_wait_and_its_later_edits():
    out = without_step(DOC, kinds(DOC).index("addNodes"))
    assert kinds(out) == ["createPods", "stopScheduler", "createPods", "startScheduler", "createPods", "wait",
                          "wait", "deletePods", "expect"]


def test_a_pod_leaves_its_priority_class_and_the_last_one_takes_the_classes_steps():
    classes = [{"apply": {"manifest": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                       "metadata": {"name": f"fuzz-{c}"}, "value": v}}} for c, v in (("low", 100),
                                                                                               ("high", 1000))]
    doc = {**DOC, "steps": [*classes, {"createPods": {**pod("pod-0")["createPods"], "priorityClass": "fuzz-low"}},
                            {"createPods": {**pod("pod-1")["createPods"], "priorityClass": "fuzz-high"}},
                            DOC["steps"][-1]]}
    one = without_class(doc, "pod-1")
    assert kinds(one) == ["apply", "apply", "createPods", "createPods", "expect"]
    assert [s["createPods"].get("priorityClass") for s in one["steps"] if "createPods" in s] == ["fuzz-low", None]
    assert kinds(without_class(one, "pod-0")) == ["createPods", "createPods", "expect"]
    assert [kinds(c) for c in cuts(doc)][-2:] == [kinds(one), kinds(one)]  # the class cuts come last


def test_a_rule_is_what_broke_without_names_or_numbers():
    said = "steps[16] expect (line 177): invariants broken:\n  missed fit: pod pod-5 is Unschedulable but fits node-1"
    assert rule(said) == "missed fit"
    assert rule("after 20s neither bound nor Unschedulable: pod-3") == "after Ns neither bound nor Unschedulable"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(examples(Bounds(max_nodes=3, max_pods=5)))
def test_every_cut_of_a_drawn_example_is_a_smaller_file_the_loader_accepts(tmp_path, drawn):
    doc = scenario_doc("fuzz-t", *drawn, P, CONFIG, "drawn")
    for i, smaller in enumerate(cuts(doc)):
        assert size(smaller) < size(doc)  # steps and nodes, then the text (a class taken off a pod)
        path = tmp_path / f"c{i}.scenario.yaml"
        path.write_text(yaml.safe_dump(smaller, sort_keys=False))
        load_scenario(path)


def test_a_node_leaves_with_the_edits_that_name_it_and_their_waits(tmp_path):
    doc = {**DOC, "cluster": {**DOC["cluster"], "nodes": [  # type: ignore[dict-item]
        {"name": "node-0", "capacity": {"cpu": "2", "memory": "4Gi", "pods": 110}},
        {"name": "node-5", "capacity": {"cpu": "2", "memory": "4Gi", "pods": 110}}]},
        "steps": [pod("pod-0"), {"wait": {"pods": ["pod-0"], "until": "decided"}},
                  {"untaint": {"nodes": "node-5", "key": "k"}}, pod("pod-1"),
                  {"expect": {"invariants": {"noMissedFit": True}, "timeout": 20}}]}
    out = without_node(doc, "node-5")
    assert [n["name"] for n in out["cluster"]["nodes"]] == ["node-0"]
    assert kinds(out) == ["createPods", "createPods", "expect"]
    assert without_node(doc, "node-0")["steps"] == doc["steps"]
    assert any(c["cluster"]["nodes"] == out["cluster"]["nodes"] and c["steps"] == out["steps"] for c in cuts(doc))
    path = tmp_path / "x.scenario.yaml"
    path.write_text(yaml.safe_dump(out, sort_keys=False))
    load_scenario(path)
