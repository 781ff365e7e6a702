"""A running kind control plane given another gate set (schedgate.providers.kind.replane): the static pods'
flags a plane key decides, rewritten and nothing else; the signal that the API server restarted with them.
No cluster is started:
CI's kind phase runs files of five gate sets, each worker's extra plane reconfigured from one to the next."""

from __future__ import annotations

import yaml

from schedgate.cluster.apiserver import start_and_gates_in
from schedgate.providers.kind.kwok import QUIET
from schedgate.providers.kind.replane import (
    API_SERVER,
    CONTROLLERS,
    SCHEDULER,
    flags_of,
    handed_over,
    rewritten,
    with_flags,
)
from schedgate.spec.agent import NodeAgent
from schedgate.spec.gates import Gates

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata: {name: kube-apiserver, namespace: kube-system}
spec:
  containers:
  - name: kube-apiserver
    command: [kube-apiserver, --advertise-address=172.18.0.2, --feature-gates=GenericWorkload=true,
              --runtime-config=scheduling.k8s.io/v1alpha2=true, --secure-port=6443]
    image: registry.k8s.io/kube-apiserver:v1.37.2
"""


def test_a_flag_is_replaced_in_place_left_out_or_added_and_the_rest_is_kept():
    cmd = ["kube-apiserver", "--a=1", "--feature-gates=X=true", "--runtime-config=v=true", "--b=2"]
    assert with_flags(cmd, {"feature-gates": "Y=false", "runtime-config": None, "c": "3"}) == [
        "kube-apiserver", "--a=1", "--feature-gates=Y=false", "--b=2", "--c=3"]
    assert with_flags(cmd, {}) == cmd


def test_each_static_pod_gets_the_gates_and_the_controller_manager_the_agents_timing():
    gates = Gates(feature_gates=(("GenericWorkload", True), ("TopologyAwareWorkloadScheduling", True)))
    flags = flags_of(gates, NodeAgent(node_monitor_grace_period=8.0).controller_flags())
    on = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    assert flags[API_SERVER] == {"feature-gates": on, "runtime-config": ""}
    assert flags[CONTROLLERS] == {"feature-gates": on, "node-monitor-grace-period": "8s", "node-monitor-period": "2s"}
    assert flags[SCHEDULER] == {"feature-gates": on}
    assert flags_of(Gates(), QUIET.controller_flags())[CONTROLLERS] == {
        "feature-gates": None, "node-monitor-grace-period": "3600s", "node-monitor-period": "5s"}


def test_a_manifest_is_rewritten_only_where_its_flags_change():
    none = flags_of(Gates(), [])[API_SERVER]
    doc = yaml.safe_load(rewritten(MANIFEST, none) or "")
    assert doc["spec"]["containers"][0]["command"] == [
        "kube-apiserver", "--advertise-address=172.18.0.2", "--runtime-config=", "--secure-port=6443"]
    assert doc["spec"]["containers"][0]["image"] == "registry.k8s.io/kube-apiserver:v1.37.2"
    same = {"feature-gates": "GenericWorkload=true", "runtime-config": "scheduling.k8s.io/v1alpha2=true"}
    assert rewritten(MANIFEST, same) is None  # the kubelet restarts nothing


def test_the_api_servers_start_and_gates_are_read_from_its_metrics_line_by_line():
    text = """\
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.76512e+09
kubernetes_feature_enabled{name="GenericWorkload",stage="ALPHA"} 1
kubernetes_feature_enabled{name="DRAPartitionableDevices",stage="BETA"} 0
apiserver_request_total{code="200",name="x"} 5
"""
    assert start_and_gates_in(text) == (1.76512e+09, {"GenericWorkload": True, "DRAPartitionableDevices": False})
    assert start_and_gates_in("") == (0.0, {})


def test_a_new_node_agent_starts_after_the_old_one_stopped_and_its_leases_were_released():
    """kwok takes a node's Lease another holder renewed only once it expires (an hour for the quiet agent's), and
    plays no pod on the node until then: a live file after a quiet one found its pods bound and never Ready."""
    calls: list[str] = []
    got = handed_over(lambda: calls.append("stop"), lambda: calls.append("release"),
                      lambda: calls.append("start") or "new agent")
    assert got == "new agent"
    assert calls == ["stop", "release", "start"]
