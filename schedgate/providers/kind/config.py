"""The kind provider's pure parts: the kind configuration for a definition, which labels a kubelet may
set on itself, the request scaling to real nodes, the reuse digest, kind's error in one line."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from schedgate.cluster.audit import AUDIT_LOG, audit_args, policy_text
from schedgate.errors import SchedgateError
from schedgate.spec.agent import kubelet_nodes
from schedgate.spec.cluster import ClusterDefinition

KIND_API = "kind.x-k8s.io/v1alpha4"
DEFINITION_RECORD = "schedgate-definition"  # kube-system's ConfigMap of what a reusable cluster was made for


def cluster_name(definition: ClusterDefinition) -> str:
    return f"schedgate-{definition.name}"[:40].rstrip("-")


def kind_name(name: str) -> str:
    """``name`` with only the characters kind accepts in a cluster name."""
    return "".join(c if c.isalnum() or c == "-" else "-" for c in name)


# Node containers one CPU core carries: every kind node is a systemd, a containerd and a kubelet, and
# they start one after another through kubeadm. What a 10-node cluster and the 321-node fleet did on this
# project's 2-core machines is in docs/providers/kind.md.
NODES_PER_CORE = 8
MAX_NODES_ENV = "SCHEDGATE_KIND_MAX_NODES"


def node_limit() -> int:
    """How many nodes (the control plane included) a kind cluster may have on this machine."""
    raw = os.environ.get(MAX_NODES_ENV)
    if raw is None:
        return NODES_PER_CORE * (os.cpu_count() or 1)
    if not raw.isdigit() or int(raw) < 2:
        raise SchedgateError(f"{MAX_NODES_ENV}={raw}: not a whole number of nodes of at least 2")
    return int(raw)


def too_large(definition: ClusterDefinition) -> str | None:
    """Why a kind cluster of ``definition`` would not run on this machine, or ``None``: only kubelet workers
    are containers (kwok nodes are objects in the one control plane)."""
    nodes, limit = len(definition.nodes()) + 1, node_limit()
    if nodes <= limit or not kubelet_nodes(definition):
        return None
    how = f"{MAX_NODES_ENV}={limit}" if MAX_NODES_ENV in os.environ else \
        f"{NODES_PER_CORE} per CPU core, {os.cpu_count() or 1} cores; {MAX_NODES_ENV} sets another limit"
    return (f"{definition.source}: nodeAgent: kubelet: {nodes - 1} nodes are a kind cluster of {nodes} node "
            f"containers, more than this machine runs (at most {limit}: {how}); leave nodeAgent out (kwok nodes) "
            "or make it smaller")


# What schedgate makes of every kind cluster beyond the definition (its API server's audit policy, read only at its
# start); a cluster made otherwise is made anew.
CLUSTER_FORMAT = ["audit-log", policy_text()]


def definition_digest(definition: ClusterDefinition, image_id: str) -> str:
    """What a reusable cluster must match: the nodes as defined, and the node image."""
    nodes = [[n.name, sorted(n.labels.items()), [t.to_api() for t in n.taints], sorted(n.capacity.items())]
             for n in definition.nodes()]
    gates = [list(definition.gates.feature_gates), list(definition.gates.runtime_config)]
    return hashlib.sha256(json.dumps([nodes, image_id, *([gates] if definition.gates else []), *CLUSTER_FORMAT],
                                     sort_keys=True).encode()).hexdigest()[:16]


# What a kubelet may set on its own Node (k8s.io/kubelet's IsKubeletLabel): any label outside the
# kubernetes.io and k8s.io namespaces, these keys, and the kubelet.kubernetes.io and node.kubernetes.io
# namespaces. kind registers workers through their kubelet's --node-labels, and a kubelet given any
# other kubernetes.io label refuses to start, so those are set through the API instead.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region"})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _in_namespace(namespace: str, namespaces: tuple[str, ...]) -> bool:
    return any(namespace == ns or namespace.endswith("." + ns) for ns in namespaces)


def kubelet_may_set(key: str) -> bool:
    """Whether a kubelet accepts ``key`` in ``--node-labels``."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if not _in_namespace(namespace, ("kubernetes.io", "k8s.io")):
        return True
    return key in KUBELET_LABELS or _in_namespace(namespace, KUBELET_LABEL_NAMESPACES)


def kind_config(definition: ClusterDefinition, name: str, image: str, *, cgroup_v1: bool,
                kubeadm_json_patches: list[dict[str, Any]] | None = None,
                audit_policy: Path | None = None) -> dict[str, Any]:
    """The kind cluster configuration for a definition: its control plane, and a worker per node (under the
    node's name) where the definition asks for kubelets; kwok nodes are made in the running cluster.

    Labels a kubelet may not set on itself are left out; the cluster sets them through the API
    (``Cluster.apply_nodes``), as it resets every node to the definition. ``audit_policy`` (a file on this
    machine) is mounted where the API server reads it (:func:`audit_patches`).
    """
    nodes: list[dict[str, Any]] = [{"role": "control-plane", "image": image}]
    if audit_policy is not None:
        nodes[0]["extraMounts"] = [{"hostPath": str(audit_policy), "containerPath": AUDIT_POLICY, "readOnly": True}]
    for spec in definition.nodes() if kubelet_nodes(definition) else ():
        registration: dict[str, Any] = {"name": spec.name}
        if spec.taints:
            registration["taints"] = [t.to_api() for t in spec.taints]
        nodes.append({
            "role": "worker",
            "image": image,
            "labels": {k: v for k, v in spec.labels.items() if k != "kubernetes.io/hostname" and kubelet_may_set(k)},
            "kubeadmConfigPatches": [yaml.safe_dump({"kind": "JoinConfiguration",
                                                     "nodeRegistration": registration})],
        })
    doc: dict[str, Any] = {"kind": "Cluster", "apiVersion": KIND_API, "name": name, "nodes": nodes}
    gates = definition.gates
    if gates.feature_gates:  # kind passes them to every component and kubelet
        doc["featureGates"] = dict(gates.feature_gates)
    if gates.runtime_config:
        doc["runtimeConfig"] = {k: "true" if v else "false" for k, v in gates.runtime_config}
    if cgroup_v1:
        # Kubernetes 1.35+ refuses cgroup v1 unless told otherwise.
        doc["kubeadmConfigPatches"] = [yaml.safe_dump({"kind": "KubeletConfiguration", "failCgroupV1": False})]
    if kubeadm_json_patches:
        doc["kubeadmConfigPatchesJSON6902"] = kubeadm_json_patches
    return doc




KUBEADM = {"group": "kubeadm.k8s.io", "version": "v1beta4"}
# The API server's audit policy and log, in the control-plane container (and its pod): see audit_patches.
AUDIT_POLICY = "/etc/schedgate/audit-policy.yaml"
AUDIT_DIR = "/var/log/schedgate-audit"
AUDIT_LOG_PATH = f"{AUDIT_DIR}/{AUDIT_LOG}"


def control_plane_patches(definition: ClusterDefinition) -> list[dict[str, Any]]:
    """kubeadm's configuration for kind's control plane, as JSON patches: its kubelet runs standalone (no
    kubeconfig: static pods only, no Node, no mirror pods; a kubelet that talks to the API server but registers
    no Node exits after 140 s, unable to annotate its CSINode) and kubeadm does not wait to mark a Node, so no
    scheduler sees the control plane as a node; kubeadm's own kube-scheduler serves health and /metrics on the
    node's address, where schedgate reads them."""
    # After the unit's own flags (the last one holds); a kubelet with no API server authorizes nobody by webhook.
    standalone = [{"op": "add", "path": "/nodeRegistration/kubeletExtraArgs/-", "value": {"name": k, "value": v}}
                  for k, v in (("kubeconfig", ""), ("bootstrap-kubeconfig", ""),
                               ("authentication-token-webhook", "false"), ("authorization-mode", "AlwaysAllow"))]
    skip = {"op": "add", "path": "/skipPhases/-", "value": "mark-control-plane"}  # kind's list: [preflight]
    args = [{"name": k, "value": v} for k, v in (
        ("bind-address", "0.0.0.0"), ("authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics"))]
    # kind lists the scheduler's extra arguments only with feature gates (then they are added to); else none.
    scheduler = [{"op": "add", "path": "/scheduler/extraArgs/-", "value": a} for a in args] \
        if definition.gates.feature_gates else [{"op": "add", "path": "/scheduler/extraArgs", "value": args}]
    # etcd as the local provider runs it: a test cluster's data need not survive a crash of the machine, and
    # fsync on each write (to the node container's /var, on the host's disk) slowed kind's API server.
    etcd = {"op": "add", "path": "/etcd", "value": {"local": {"extraArgs": [
        {"name": "unsafe-no-fsync", "value": "true"}]}}}
    # The API server deletes a collection (a test's pods, a turn's hundreds) four at a time, as the local
    # provider's does (one at a time by default; kind's extraArgs always hold runtime-config: added to).
    workers = {"op": "add", "path": "/apiServer/extraArgs/-", "value": {"name": "delete-collection-workers",
                                                                       "value": "4"}}
    return [{**KUBEADM, "kind": "InitConfiguration", "patch": yaml.safe_dump([*standalone, skip])},
            {**KUBEADM, "kind": "ClusterConfiguration", "patch": yaml.safe_dump([*scheduler, etcd, workers])}]


def audit_patches() -> list[dict[str, Any]]:
    """kind's API server writes the audit log (:mod:`schedgate.cluster.audit`) inside the control-plane container,
    by the policy :func:`kind_config` mounts there; schedgate reads it with ``docker exec``."""
    args = [{"op": "add", "path": "/apiServer/extraArgs/-", "value": {"name": k, "value": v}}
            for k, v in audit_args(AUDIT_POLICY, AUDIT_LOG_PATH)]
    volumes = {"op": "add", "path": "/apiServer/extraVolumes", "value": [
        {"name": "schedgate-audit-policy", "hostPath": AUDIT_POLICY, "mountPath": AUDIT_POLICY, "readOnly": True,
         "pathType": "File"},
        {"name": "schedgate-audit-log", "hostPath": AUDIT_DIR, "mountPath": AUDIT_DIR,
         "pathType": "DirectoryOrCreate"}]}
    return [{**KUBEADM, "kind": "ClusterConfiguration", "patch": yaml.safe_dump([*args, volumes])}]


def host_cgroup_v1() -> bool:
    return not Path("/sys/fs/cgroup/cgroup.controllers").exists()


def last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


def kind_error(text: str) -> str:
    """kind's error in one line: its ``ERROR:`` line (a quoted command shortened) and the command's own output."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    error = next((x for x in lines if x.startswith("ERROR:")), None)
    if error is None:
        return last_line(text)
    error = re.sub(r'command "([^"]{0,40})[^"]*"', lambda m: f'command "{m.group(1)}..."', error)
    output = next((x for x in lines if x.startswith("Command Output:")), None)
    return f"{error}; {output}" if output else error
