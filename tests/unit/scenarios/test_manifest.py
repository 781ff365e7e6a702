"""Scenarios in Kubernetes' own language: pod manifests, nodes by name with any resource, steps for any
object. What a file says reaches the API as written; a bad one fails in one line naming file, field, line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.runtime.toolchain import pinned_kubernetes_version
from schedgate.scenarios.load import load_scenario
from schedgate.spec.manifest import API_SCHEMA, merged

ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = sorted((ROOT / "e2e" / "conformance").glob("*.scenario.yaml"))

GOOD = """\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: sample
cluster:
  apiVersion: schedgate.io/v1alpha1
  kind: Cluster
  name: c
  nodes:
    - name: node-a.rack-1
      labels: {zone: a}
      capacity: {cpu: "4", memory: 8Gi, pods: 110, hugepages-2Mi: 1Gi, example.com/foo: 2}
      allocatable: {cpu: "3"}
    - name: node-b
      capacity: {cpu: "4", memory: 8Gi, pods: 110}
      unschedulable: true
      conditions: [{type: MemoryPressure, status: "True", reason: Full}]
templates:
  web:
    cpu: 1
    pod:
      metadata: {labels: {app: web}}
      spec:
        containers: [{name: web, resources: {limits: {cpu: "2"}}}]
        initContainers: [{name: init, resources: {requests: {memory: 1Gi}}}]
steps:
  - apply: {manifest: {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 1000}}
  - createPods:
      template: web
      name: w
      pod: {spec: {nodeSelector: {zone: a}, priorityClassName: high}}
  - createPods: {name: bare}
  - addNodes: {nodes: [{name: node-c, capacity: {cpu: "2", memory: 4Gi, pods: 10}}]}
  - setResources: {nodes: node-a.rack-1, capacity: {example.com/foo: 4}}
  - patch: {kind: Pod, name: w, patch: {metadata: {labels: {x: "y"}}}}
  - delete: {kind: PriorityClass, name: high}
  - expect: {pods: w, scheduledOn: [node-a.rack-1, node-c]}
  - setConditions: {nodes: node-c, conditions: [{type: Ready, status: "False"}]}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "case.scenario.yaml"
    p.write_text(text)
    return p


def test_the_schema_is_the_pinned_minor():
    assert pinned_kubernetes_version().lstrip("v").startswith(f"{API_SCHEMA}."), (pinned_kubernetes_version(),
                                                                                  API_SCHEMA)


def test_a_manifest_reaches_the_api_as_written_and_asks_for_nothing_hidden(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD))
    nodes = {n.name: n for n in sc.definition.nodes()}
    assert nodes["node-a.rack-1"].allocatable == {"cpu": "3", "memory": "8Gi", "pods": "110", "hugepages-2Mi": "1Gi",
                                                  "example.com/foo": "2"}
    assert nodes["node-a.rack-1"].labels == {"kubernetes.io/hostname": "node-a.rack-1", "zone": "a"}
    assert nodes["node-b"].unschedulable and not nodes["node-a.rack-1"].unschedulable
    assert [(c.type, c.status, c.reason) for c in nodes["node-b"].conditions] == [("MemoryPressure", "True", "Full")]
    pod = sc.steps[1].action.template.builder("w").obj()
    spec = pod["spec"]
    # The fragment's first container takes the shorthand's place: its cpu request, the fragment's limit.
    assert [c["name"] for c in spec["containers"]] == ["web"]
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}
    assert spec["initContainers"][0]["resources"] == {"requests": {"memory": "1Gi"}}
    assert all(c["image"] for c in spec["containers"] + spec["initContainers"])
    assert spec["nodeSelector"] == {"zone": "a"} and spec["priorityClassName"] == "high"
    assert pod["metadata"]["labels"]["app"] == "web"
    bare = sc.steps[2].action.template.builder("bare").obj()["spec"]["containers"][0]["resources"]
    assert bare == {"requests": {}, "limits": {}}  # best-effort, as written
    # A node added by a step is a node later steps may name.
    assert "node-c" in sc.steps[7].action.outcome.nodes


def test_merging_containers_by_name_and_replacing_other_lists():
    base = {"spec": {"containers": [{"name": "main", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
                     "tolerations": [{"key": "a"}]}}
    out = merged(base, {"spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "2"}}},
                                                {"name": "side"}], "tolerations": [{"key": "b"}]}})
    assert out["spec"]["containers"] == [
        {"name": "main", "image": "i", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}},
        {"name": "side"}]
    assert out["spec"]["tolerations"] == [{"key": "b"}]
    assert base["spec"]["tolerations"] == [{"key": "a"}]  # nothing shared


@pytest.mark.parametrize(
    "old, new, field, problem",
    [
        ("containers: [{name: web, resources", "containers: [{name: web, resourcez: {}, resources",
         "templates.web.pod.spec.containers[0]", "'resourcez' was unexpected"),
        ("nodeSelector: {zone: a}", "nodeSelector: {zone: [a]}", "steps[1].createPods.pod.spec.nodeSelector.zone",
         "is not of type 'string'"),
        ("priorityClassName: high}", "priority: high}", "steps[1].createPods.pod.spec.priority",
         "is not of type 'integer'"),
        ("  - createPods: {name: bare}", "  - createPods: {name: bare, node: node-z}", "steps[2].createPods.node",
         "must be the name of one node"),
        ("hugepages-2Mi: 1Gi", "hugepages2Mi: 1Gi", "cluster.nodes[0].capacity.hugepages2Mi", "unknown resource"),
        ("name: node-b", "name: node-a.rack-1", "cluster.nodes[1].name", "defined twice"),
        ("name: node-b", "name: Node_B", "cluster.nodes[1].name", "must be a node name"),
        ("kind: PriorityClass, metadata: {name: high}", "kind: Pod, metadata: {name: high}",
         "steps[0].apply.manifest.kind", "made by createPods"),
        ("kind: PriorityClass, metadata: {name: high}", "kind: Gadget, metadata: {name: high}",
         "steps[0].apply.manifest.kind", "not a kind Kubernetes"),
        ("value: 1000}", "value: big}", "steps[0].apply.manifest.value", "is not of type 'integer'"),
        ("delete: {kind: PriorityClass, name: high}", "delete: {kind: PriorityClass, name: low}",
         "steps[6].delete.name", "no earlier apply step made PriorityClass/low"),
        ("patch: {kind: Pod, name: w,", "patch: {kind: Pod, name: nobody,", "steps[5].patch.name",
         "no pod created by an earlier step"),
        ("addNodes: {nodes: [{name: node-c,", "addNodes: {nodes: [{name: node-b,", "steps[3].addNodes.nodes[0].name",
         "already exists"),
        ("setResources: {nodes: node-a.rack-1, capacity: {example.com/foo: 4}}", "setResources: {nodes: node-b}",
         "steps[4].setResources", "needs 'capacity', 'allocatable' or both"),
        ("metadata: {labels: {app: web}}", "metadata: {name: web}", "templates.web.pod.metadata.name",
         "is the scenario's to set"),
        ('status: "True", reason: Full', "status: true, reason: Full", "cluster.nodes[1].conditions[0].status",
         "must be one of True, False, Unknown"),
        ('conditions: [{type: Ready, status: "False"}]', "conditions: []", "steps[8].setConditions.conditions",
         "non-empty list"),
    ],
)
def test_a_bad_manifest_or_node_names_file_field_and_line(tmp_path, old, new, field, problem):
    assert old in GOOD, old
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert e.value.field == field, str(e.value)
    assert problem in e.value.problem, str(e.value)
    assert "(line " in e.value.problem, str(e.value)


def test_check_refuses_a_bad_manifest_in_one_line_and_exit_2(tmp_path):
    path = write(tmp_path, GOOD.replace("nodeSelector: {zone: a}", "nodeSelector: {zone: [a]}"))
    r = subprocess.run([sys.executable, "-m", "schedgate", "check", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "nodeSelector.zone" in lines[0], r.stderr


def test_the_conformance_folder_names_an_upstream_source_per_file():
    assert len(CONFORMANCE) >= 40, len(CONFORMANCE)
    for path in CONFORMANCE:
        text = path.read_text()
        assert text.startswith("# Upstream: kubernetes v1.37 "), path
        load_scenario(path)


NODE_MANIFEST = """\
apiVersion: schedgate.io/v1alpha1
kind: Cluster
name: from-kubectl
nodes:
  - apiVersion: v1
    kind: Node
    metadata:
      name: ip-10-0-0-1.ec2.internal
      labels: {kubernetes.io/hostname: ip-10-0-0-1, topology.kubernetes.io/zone: eu-1a}
      creationTimestamp: "2026-11-30T10:00:00Z"
    spec:
      taints: [{key: dedicated, value: gpu, effect: NoSchedule, timeAdded: "2026-11-30T10:00:00Z"}]
    status:
      capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
      allocatable: {cpu: 7900m, memory: 31Gi, pods: "110", nvidia.com/gpu: "1"}
      conditions:
        - {type: Ready, status: "True", reason: KubeletReady, lastHeartbeatTime: "2026-11-30T10:00:00Z"}
"""


def test_a_node_manifest_is_a_node_of_the_definition(tmp_path):
    from schedgate.spec.cluster import load_definition

    path = tmp_path / "c.yaml"
    path.write_text(NODE_MANIFEST)
    (node,) = load_definition(path).nodes()
    assert node.name == "ip-10-0-0-1.ec2.internal"
    assert node.labels["kubernetes.io/hostname"] == "ip-10-0-0-1"  # its own, not made from the name
    assert [t.to_api() for t in node.taints] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert node.allocatable["cpu"] == "7900m" and node.capacity["nvidia.com/gpu"] == "1"
    assert [(c.type, c.status) for c in node.conditions] == [("Ready", "True")]
    # A problem is named by the manifest's own field, with its line.
    path.write_text(NODE_MANIFEST.replace("pods: \"110\", nvidia", "nvidia"))
    with pytest.raises(DefinitionError) as e:
        load_definition(path)
    assert e.value.field == "nodes[0].status.capacity.pods" and "(line 14)" in e.value.problem, str(e.value)
    path.write_text(NODE_MANIFEST.replace("    spec:\n", "    spek:\n"))
    with pytest.raises(DefinitionError) as e:
        load_definition(path)
    assert e.value.field == "nodes[0]" and "'spek' was unexpected" in e.value.problem, str(e.value)


@pytest.mark.parametrize("manifest, problem", [
    ("{apiVersion: v1, kind: [Pod], metadata: {name: x}}",
     "steps[0].apply.manifest.kind: ['Pod'] of apiVersion 'v1' is not a kind Kubernetes"),
    ("{apiVersion: a/b/c, kind: ConfigMap, metadata: {name: x}}",
     "steps[0].apply.manifest.kind: 'ConfigMap' of apiVersion 'a/b/c' is not a kind Kubernetes"),
])
def test_an_applied_kind_that_is_no_name_or_a_malformed_api_version_is_one_line(tmp_path, manifest, problem):
    path = tmp_path / "a.scenario.yaml"
    path.write_text(f"apiVersion: schedgate.io/v1alpha1\nkind: Scenario\nname: a\n"
                    f"cluster: {ROOT}/clusters/inference.yaml\nsteps:\n  - apply: {{manifest: {manifest}}}\n")
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert problem in str(e.value) and "(line 6)" in str(e.value) and len(str(e.value).splitlines()) == 1
