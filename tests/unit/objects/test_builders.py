"""Pod builders return copies and write the manifest the design describes."""

from __future__ import annotations

from schedgate import HIGH_SPEED_NET, make_pod
from schedgate.workloads.gpu import PACKING, gpu_pod


def test_builders_never_change_the_builder_they_came_from():
    base = make_pod("p")
    gpu = base.gpus(1)
    assert base.obj()["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert gpu.obj()["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert base.obj() is not base.obj()


def test_a_gpu_inference_pod_is_the_design_manifest():
    spec = gpu_pod("infer").obj()["spec"]
    assert spec["schedulerName"] == PACKING
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == [{"matchExpressions": [{"key": HIGH_SPEED_NET, "operator": "In", "values": ["true"]}]}]
    res = spec["containers"][0]["resources"]
    assert res["limits"] == {"nvidia.com/gpu": "1"} and res["requests"]["nvidia.com/gpu"] == "1"
    assert res["requests"]["cpu"] == "4" and res["requests"]["memory"] == "32Gi"


def test_tolerations_and_pre_binding():
    spec = make_pod("p").tolerate("k", "v").tolerate("x").on_node("n1").obj()["spec"]
    assert spec["tolerations"] == [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                                   {"key": "x", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["nodeName"] == "n1"
