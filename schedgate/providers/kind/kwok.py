"""kwok nodes in a kind cluster: the definition's nodes made inside kind's one control plane.

kind's control plane (kubeadm's API server, etcd, controller manager, and the schedulers as users run
them) is real; a definition's nodes are Node objects there, as on the local provider, and kwok (built
from ``go/kwok/``, the local provider's agent) runs beside the cluster as a process on this machine:
it renews each node's Lease, the heartbeat kind's node lifecycle controller reads, and runs the pods
bound to them: every node, the sync node too (kind's control plane registers none).

kind's control plane registers no Node (:func:`.config.control_plane_patches`); the cluster's own DaemonSets
(the node image's CNI, kube-proxy) are removed, as they would run only on kwok nodes, and its Deployments
(CoreDNS, the local-path provisioner, which nothing here uses) scaled to none before the first node is
made: a scenario's node runs no pod the scenario did not make. The controller manager's node grace
period is the definition's (a kubeadm patch), as the local provider passes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from schedgate.errors import ComponentError
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.poll import poll_until
from schedgate.providers.kind.config import KUBEADM
from schedgate.runtime.health import free_port, probe, wait_ready
from schedgate.runtime.procs import Proc, RunDir
from schedgate.spec.agent import NodeAgent, kubelet_nodes
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.shipped import shipped

STAGES = "go/kwok/stages.yaml"  # what kwok does to nodes and pods (the local provider's agent's)
AGENT = "kwok"
KIND_DEPLOYMENTS = (("kube-system", "coredns", "k8s-app=kube-dns"),
                    ("local-path-storage", "local-path-provisioner", "app=local-path-provisioner"))


def start_kwok(run: RunDir, kwok: Path, kubeconfig: Path, agent: NodeAgent | None) -> Proc:
    """kwok on every node (kind's control plane is none), ready (its /healthz) before the first node is made."""
    port = free_port()
    lease = agent.lease_seconds() if agent is not None else int(QUIET.node_monitor_grace_period)
    proc = run.start(AGENT, [
        str(kwok), f"--kubeconfig={kubeconfig}", f"--config={shipped(STAGES)}",
        "--manage-all-nodes=true", f"--node-lease-duration-seconds={lease}",
        f"--server-address=127.0.0.1:{port}",
    ])
    wait_ready(proc, probe("127.0.0.1", port, "/healthz", None), 60, "kwok: GET /healthz")
    return proc


def remove_daemonsets(api: k8s.ApiClient) -> None:
    """Every DaemonSet the cluster came with (the node image's CNI, kube-proxy): with no node of kind's own they
    would only put pods on the kwok nodes, which run no network."""
    apps = k8s.AppsV1Api(api)
    for ds in read_json(apps.list_daemon_set_for_all_namespaces).get("items") or []:
        meta = ds["metadata"]
        ignore_not_found(apps.delete_namespaced_daemon_set, meta["name"], meta["namespace"])


def scale_down_addons(api: k8s.ApiClient) -> None:
    """kind's CoreDNS and local-path provisioner at no replicas, their pods gone: one left Pending would be
    bound to the first node schedgate makes (a definition's, or after a reset of nodes)."""
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    for namespace, name, _ in KIND_DEPLOYMENTS:
        if ignore_not_found(read_json, apps.read_namespaced_deployment, name, namespace) is not None:
            apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 0}})

    def gone() -> bool:
        return not any(read_json(core.list_namespaced_pod, ns, label_selector=sel).get("items")
                       for ns, _, sel in KIND_DEPLOYMENTS)

    poll_until(gone, "kind's CoreDNS and local-path provisioner scaled to none", 120, error=ComponentError)


# A definition without a node agent: the local provider runs no node lifecycle there (nodes are API objects
# that never miss a heartbeat). kind's controller manager runs it, so its grace period is one no test outlives
# and kwok renews each node's Lease every quarter of an hour, not every 10 s: on the 1,000 nodes of a
# performance file that was 100 Lease writes a second beside the pods measured.
QUIET = NodeAgent(node_monitor_grace_period=3600.0)


def grace_patches(agent: NodeAgent | None) -> list[dict[str, Any]]:
    """The controller manager's node lifecycle timing, as kind's kubeadm config takes it (a JSON patch)."""
    ops = [{"op": "add", "path": "/controllerManager/extraArgs/-", "value": {"name": flag[2:].split("=")[0],
                                                                            "value": flag.split("=", 1)[1]}}
           for flag in (agent or QUIET).controller_flags()]
    return [{**KUBEADM, "kind": "ClusterConfiguration", "patch": yaml.safe_dump(ops)}]


# kubeadm's controllers, less two that only write to kwok nodes: node IPAM gives each node a pod CIDR (a /24 of
# kind's /16: from the 257th node on it fails, an event per node and retries; a performance file's 1,000 nodes
# left 753 CIDRNotAvailable events, 1,654 counted) and the TTL controller annotates every node again each time
# the cluster's size crosses a step (985 of them patched). kwok nodes run no network and cache nothing; the
# local provider runs neither controller. A cluster of kubelet workers keeps them.
KWOK_CONTROLLERS = "*,bootstrapsigner,tokencleaner,-node-ipam-controller,-ttl-controller"


def controller_patches(definition: ClusterDefinition) -> list[dict[str, Any]]:
    """The controller manager's controllers for a cluster of kwok nodes (a JSON patch of kind's kubeadm config);
    none for one of kubelet workers."""
    if kubelet_nodes(definition):
        return []
    ops = [{"op": "add", "path": "/controllerManager/extraArgs/-",
            "value": {"name": "controllers", "value": KWOK_CONTROLLERS}}]
    return [{**KUBEADM, "kind": "ClusterConfiguration", "patch": yaml.safe_dump(ops)}]
