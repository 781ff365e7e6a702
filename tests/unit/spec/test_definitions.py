"""Cluster definitions: what loads, and the one line a bad file gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.spec.cluster import GPU, load_definition

GOOD = """\
apiVersion: schedgate.io/v1alpha1
kind: Cluster
name: tiny
pools:
  - name: gpu
    count: 2
    labels: {infra.example.com/high-speed-network: "true"}
    taints: [{key: dedicated, value: training, effect: NoSchedule}]
    capacity: {cpu: "8", memory: 64Gi, pods: 110, nvidia.com/gpu: 8}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "cluster.yaml"
    p.write_text(text)
    return p


def test_the_shipped_inference_cluster_has_the_design_topology():
    d = load_definition(Path(__file__).resolve().parents[3] / "clusters" / "inference.yaml")
    assert [p.name for p in d.pools] == ["gpu-net", "gpu-plain", "cpu", "train"]
    assert d.pool("gpu-net").node_names() == ["gpu-net-1", "gpu-net-2", "gpu-net-3", "gpu-net-4"]
    assert d.node("gpu-net-1").labels["infra.example.com/high-speed-network"] == "true"
    assert "infra.example.com/high-speed-network" not in d.node("gpu-plain-1").labels
    assert d.node("gpu-plain-1").gpus == 8 and d.node("cpu-1").gpus == 0
    assert [t.key for t in d.node("train-1").taints] == ["schedgate.io/dedicated"]


def test_a_valid_definition_expands_pools_into_named_nodes(tmp_path):
    d = load_definition(write(tmp_path, GOOD))
    nodes = d.nodes()
    assert [n.name for n in nodes] == ["gpu-1", "gpu-2"]
    assert nodes[0].allocatable[GPU] == "8"
    assert nodes[0].labels["kubernetes.io/hostname"] == "gpu-1"


@pytest.mark.parametrize(
    "change, field, problem",
    [
        pytest.param(("nvidia.com/gpu: 8", "nvidia.com/gpu: -1"), "pools[0].capacity.nvidia.com/gpu",
                     "must be >= 0, got -1", id="negative-gpu-count"),
        pytest.param(("nvidia.com/gpu: 8", "nvidia.com/gpu: 2.5"), "pools[0].capacity.nvidia.com/gpu",
                     "must be a whole number >= 0", id="fractional-gpu-count"),
        pytest.param(("    count: 2\n", "    count: 2\n    zone: a\n"), "pools[0].zone",
                     "unknown field", id="unknown-field"),
        pytest.param(("kind: Cluster", "kind: Clusters"), "kind", "must be Cluster", id="wrong-kind"),
        pytest.param(("count: 2", "count: 0"), "pools[0].count", "must be a whole number from 1 to 10000",
                     id="zero-count"),
        pytest.param(("name: gpu", "name: GPU_pool"), "pools[0].name", "must be a DNS label", id="bad-pool-name"),
        pytest.param((', pods: 110', ''), "pools[0].capacity.pods", "required field is missing", id="no-pods"),
        pytest.param(('"true"', 'true'), "pools[0].labels.infra.example.com/high-speed-network",
                     "label values are strings", id="unquoted-bool-label"),
        pytest.param(("effect: NoSchedule", "effect: Never"), "pools[0].taints[0].effect",
                     "must be one of", id="bad-taint-effect"),
        pytest.param(("memory: 64Gi", "memory: lots"), "pools[0].capacity.memory",
                     "must be a non-negative quantity", id="bad-quantity"),
    ],
)
def test_a_bad_definition_is_one_line_naming_file_and_field(tmp_path, change, field, problem):
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(DefinitionError) as err:
        load_definition(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: {field}: "), msg
    assert problem in msg


def test_malformed_yaml_names_the_line(tmp_path):
    path = write(tmp_path, GOOD.replace("  - name: gpu", "  - name: gpu: [", 1))
    with pytest.raises(DefinitionError, match=rf"^{path}: line \d+: not valid YAML"):
        load_definition(path)


def test_a_missing_file_says_so(tmp_path):
    with pytest.raises(DefinitionError, match=r"nope\.yaml: no such cluster definition file$"):
        load_definition(tmp_path / "nope.yaml")


def test_two_pools_may_not_share_a_name(tmp_path):
    text = GOOD + GOOD[GOOD.index("  - name: gpu"):]
    with pytest.raises(DefinitionError, match=r"pools\[1\]\.name: pool 'gpu' is defined twice"):
        load_definition(write(tmp_path, text))
