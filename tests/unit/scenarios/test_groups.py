"""Kubernetes' own gangs in scenario files (scenarios.group_steps): createPodGroup writes the pinned API's
PodGroup, a pod's podGroup names it, and every mistake is one line naming the file, field and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.scenarios.group_steps import API, CreatePodGroup, WholeGroups
from schedgate.scenarios.load import load_scenario

ROOT = Path(__file__).resolve().parents[3]
HEAD = f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: groups
cluster: {ROOT}/clusters/workloads.yaml
requires: [GenericWorkload]
steps:
"""
GOOD = """\
  - createPodGroup: {name: a, minCount: 2}
  - createPods: {name: a, count: 2, gpus: 8, podGroup: a}
  - createPodGroup: {name: b, minCount: 2}
  - createPods: {name: b, count: 2, gpus: 8, podGroup: b}
  - expect: {wholeGroups: {groups: [a, b], count: 1}}
  - expect: {podGroupCondition: {group: b, status: false, reason: Unschedulable}}
"""


def load(tmp_path: Path, steps: str, head: str = HEAD):
    path = tmp_path / "g.scenario.yaml"
    path.write_text(head + steps)
    return load_scenario(path)


def test_a_group_is_written_once_and_its_members_name_it(tmp_path):
    scenario = load(tmp_path, GOOD)
    create = scenario.steps[0].action
    assert create == CreatePodGroup(name="a", min_count=2)
    assert create.manifest() == {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": "a"},
                                 "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    pod = scenario.steps[1].action.template.builder("a-1").obj()
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "a"}
    whole = scenario.steps[4].action.outcome
    assert whole == WholeGroups(groups=("a", "b"), count=1, members=(("a", ("a-1", "a-2")), ("b", ("b-1", "b-2"))))
    assert scenario.steps[5].action.outcome.status == "False"


@pytest.mark.parametrize("steps, problem", [
    ("  - createPodGroup: {name: a, minCount: 0}\n",
     "steps[0].createPodGroup.minCount: must be a whole number from 1 to 10000, got 0 (line 7)"),
    ("  - createPodGroup: {name: A_1, minCount: 2}\n", "steps[0].createPodGroup.name: "),
    ("  - createPodGroup: {name: a, minCount: 2}\n  - createPodGroup: {name: a, minCount: 3}\n",
     "steps[1].createPodGroup.name: PodGroup 'a' is already made by an earlier step (line 8)"),
    ("  - createPods: {name: x, podGroup: nope}\n",
     "steps[0].createPods.podGroup: no earlier createPodGroup (or apply) step made PodGroup 'nope' (line 7)"),
    (GOOD.replace("count: 1}}", "count: 3}}"), "steps[4].expect.wholeGroups.count: is more than the 2 groups named"),
    (GOOD.replace("groups: [a, b]", "groups: [a, c]"),
     "steps[4].expect.wholeGroups.groups[1]: no earlier createPodGroup (or apply) step made PodGroup 'c'"),
    ("  - createPodGroup: {name: a, minCount: 2}\n  - expect: {wholeGroups: {groups: a, count: 1}}\n",
     "steps[1].expect.wholeGroups.groups: no earlier createPods step made a member of PodGroup 'a'"),
    (GOOD.replace("status: false", "status: maybe"),
     "steps[5].expect.podGroupCondition.status: must be True or False, got 'maybe'"),
])
def test_a_mistake_is_one_line_naming_the_field(tmp_path, steps, problem):
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, steps)
    assert problem in str(e.value).splitlines()[0]
    assert len(str(e.value).splitlines()) == 1


def test_a_group_without_the_feature_is_refused_with_what_to_write(tmp_path):
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, "  - createPodGroup: {name: a, minCount: 2}\n",
             head=HEAD.replace("requires: [GenericWorkload]\n", "").replace("workloads.yaml", "inference.yaml"))
    assert "steps[0].createPodGroup.name: a PodGroup needs the GenericWorkload feature: add 'requires: " \
           "[GenericWorkload]' to the file (line 6)" in str(e.value)


RACKS = HEAD.replace("workloads.yaml", "racks.yaml").replace(
    "[GenericWorkload]", "[GenericWorkload, TopologyAwareWorkloadScheduling]")


def test_a_topology_key_is_written_as_the_groups_constraint(tmp_path):
    create = load(tmp_path, "  - createPodGroup: {name: t, minCount: 2, topologyKey: topology.schedgate.io/rack}\n",
                  head=RACKS).steps[0].action
    assert create.manifest()["spec"]["schedulingConstraints"] == {"topology": [{"key": "topology.schedgate.io/rack"}]}


@pytest.mark.parametrize("head, key, problem", [
    (RACKS, "example.com/row", "steps[0].createPodGroup.topologyKey: no node of cluster 'racks' carries the label "
                               "'example.com/row' (line 7)"),
    (RACKS, "not a key", "steps[0].createPodGroup.topologyKey: "),
    (HEAD.replace("workloads.yaml", "racks.yaml"), "topology.schedgate.io/rack",
     "steps[0].createPodGroup.topologyKey: a topology key needs the TopologyAwareWorkloadScheduling feature: add "
     "'requires: [GenericWorkload, TopologyAwareWorkloadScheduling]' to the file (line 7)"),
])
def test_a_topology_key_no_node_carries_or_without_its_feature_is_one_line(tmp_path, head, key, problem):
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, f"  - createPodGroup: {{name: t, minCount: 2, topologyKey: {key}}}\n", head=head)
    assert problem in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_priority_and_disruption_mode_are_the_groups_own(tmp_path):
    create = load(tmp_path, "  - createPodGroup: {name: a, minCount: 2, priorityClass: high, disruptionMode: All}\n"
                  ).steps[0].action
    spec = create.manifest()["spec"]
    assert (spec["priorityClassName"], spec["disruptionMode"]) == ("high", {"all": {}})
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, "  - createPodGroup: {name: a, minCount: 2, disruptionMode: all}\n")
    assert "steps[0].createPodGroup.disruptionMode: must be one of Single, All, got 'all' (line 7)" in str(e.value)
