"""The outcome baselineAgrees: what the baseline is asked (a copy that cannot change the state it is asked
about), and its field read like every other."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from schedgate.errors import SchedgateError
from schedgate.scenarios.differential import BaselineAgrees, copy_of, never_preempting, not_asked
from schedgate.scenarios.load import load_scenario
from schedgate.scenarios.perf_steps import baseline_from
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[3]

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "pod-3", "namespace": "t", "uid": "u", "resourceVersion": "7",
                    "labels": {"fuzz.schedgate.io/app": "a"}, "annotations": {"k": "v"}},
       "spec": {"schedulerName": "gpu-packing-scheduler", "nodeName": "", "priority": 0,
                "priorityClassName": "low", "preemptionPolicy": "PreemptLowerPriority",
                "containers": [{"name": "main", "image": "x"}],
                "resourceClaims": [{"name": "devices", "resourceClaimTemplateName": "devices-abc"}]},
       "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}


def test_the_copy_is_for_the_baseline_and_unbound_and_admission_sets_its_priority_again():
    body = copy_of(POD, "gpu-packing-scheduler-baseline")
    assert body["metadata"] == {"name": "pod-3-baseline", "labels": {"fuzz.schedgate.io/app": "a"},
                                "annotations": {"k": "v"}}  # no uid, resourceVersion or namespace of the pod's
    assert body["spec"]["schedulerName"] == "gpu-packing-scheduler-baseline"
    assert not {"nodeName", "priority", "preemptionPolicy"} & set(body["spec"]) and "status" not in body
    assert body["spec"]["priorityClassName"] == "low"  # admission sets the priority again from it
    assert body["spec"]["resourceClaims"] == POD["spec"]["resourceClaims"]  # a claim of its own, from the template
    assert POD["spec"]["schedulerName"] == "gpu-packing-scheduler"  # the pod read is left as it was


def _doc(outcome: object) -> dict[str, object]:
    return {"apiVersion": "schedgate.io/v1alpha1", "kind": "Scenario", "name": "d",
            "cluster": {"apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": "c",
                        "nodes": [{"name": "n", "capacity": {"cpu": "1", "memory": "1Gi", "pods": 110}}]},
            "steps": [{"expect": {"baselineAgrees": outcome}}]}


@pytest.mark.parametrize("outcome,baseline", [({}, "in-tree"), ({"baseline": "same"}, "same")])
def test_the_baseline_is_in_tree_unless_said(tmp_path: Path, outcome, baseline):
    path = tmp_path / "d.scenario.yaml"
    path.write_text(yaml.safe_dump(_doc(outcome)))
    assert load_scenario(path).steps[0].action.outcome == BaselineAgrees(baseline=baseline)


def test_a_baseline_of_no_kind_is_one_line(tmp_path: Path):
    path = tmp_path / "d.scenario.yaml"
    path.write_text(yaml.safe_dump(_doc({"baseline": "older"})))
    with pytest.raises(SchedgateError, match=r"steps\[0\]\.expect\.baselineAgrees\.baseline: must be one of "
                                             r"in-tree, same, got 'older' \(line \d+\)"):
        load_scenario(path)


def test_the_baseline_never_preempts():
    mine = load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")
    theirs = never_preempting(mine)
    assert theirs.doc["profiles"][0]["plugins"]["postFilter"] == {"disabled": [{"name": "*"}]}
    assert theirs.doc["profiles"][0]["pluginConfig"] == mine.doc["profiles"][0]["pluginConfig"]
    assert "plugins" not in mine.doc["profiles"][0]  # the configuration under test is left as it was


def test_the_in_tree_baseline_of_a_black_box_is_kube_schedulers_default_plugins_under_its_name():
    pool = load_scheduler_config(ROOT / "clusters/profiles/pool-scheduler.yaml").standing_in_for("pool-scheduler")
    config, binary = baseline_from(None, None, lambda: Path("/pinned/kube-scheduler"))(pool, "in-tree")
    assert config.black_box is None and config.doc["profiles"] == [{"schedulerName": "pool-scheduler"}]
    assert binary == Path("/pinned/kube-scheduler")
    same, _ = baseline_from(None, Path("/old/kube-scheduler"), lambda: Path("/pinned"))(pool, "same")
    assert same is pool


def test_a_given_baseline_configuration_serves_the_profile_of_that_name_or_its_only_one():
    packing = load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")
    conformance = load_scheduler_config(ROOT / "clusters/profiles/conformance.yaml")
    config, _ = baseline_from(conformance, None, lambda: Path("/pinned"))(packing, "in-tree")
    assert config.profile_names == ["conformance-scheduler"]


@pytest.mark.parametrize("labels,spec,gangs,why", [
    ({}, {}, False, ""),
    ({"schedgate.io/gang": "g", "schedgate.io/gang-min": "2"}, {}, True, ""),
    ({"schedgate.io/gang": "g", "schedgate.io/gang-min": "2"}, {}, False,
     "a gang's member, and b-baseline does not admit gangs"),
    ({}, {"schedulingGroup": {"podGroupName": "pg"}}, True, "a member of PodGroup/pg, which a copy would join"),
])
def test_a_gangs_member_is_asked_only_of_a_baseline_that_admits_it_and_never_a_podgroups(labels, spec, gangs, why):
    assert not_asked({"metadata": {"labels": labels}, "spec": spec}, "b-baseline", gangs) == why
