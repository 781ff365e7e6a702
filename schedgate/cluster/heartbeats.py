"""A node's heartbeat stopped and started again, the way a kubelet that loses its network does.

A node agent (kwok) renews each node's Lease in ``kube-node-lease``: that is the heartbeat the node
lifecycle controller reads. To stop one node's heartbeat, schedgate takes its Lease: another holder,
renewed now, for a day. kwok renews only a Lease it holds or one that has expired, and leaves the node
(and its pods) alone while another holds it, as a kubelet cut off from the API server would. The
lifecycle controller then sees no renewal for its grace period, marks the node Ready=Unknown and taints
it ``node.kubernetes.io/unreachable``, and taint eviction deletes the pods that do not tolerate it.
Giving the Lease back to the agent restarts the heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s

from schedgate.kube.api import read_json

NODE_LEASES = "kube-node-lease"
STOPPED_HOLDER = "schedgate:heartbeat-stopped"
MERGE = "application/merge-patch+json"


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Held:
    """What the node's Lease was before schedgate took it."""

    holder: str
    duration: int


def stop_heartbeat(core: Any, node: str) -> Held:
    """Take ``node``'s Lease from its agent; returns what to give back."""
    leases = k8s.CoordinationV1Api(core.api_client)
    spec = read_json(leases.read_namespaced_lease, node, NODE_LEASES).get("spec") or {}
    held = Held(holder=str(spec.get("holderIdentity") or ""), duration=int(spec.get("leaseDurationSeconds") or 40))
    leases.patch_namespaced_lease(node, NODE_LEASES, {"spec": {
        "holderIdentity": STOPPED_HOLDER, "leaseDurationSeconds": 86400, "renewTime": _micro_now()}},
        _content_type=MERGE)
    return held


def restart_heartbeat(core: Any, node: str, held: Held) -> None:
    """Give ``node``'s Lease back to its agent, renewed now: it renews it from its next try on."""
    leases = k8s.CoordinationV1Api(core.api_client)
    leases.patch_namespaced_lease(node, NODE_LEASES, {"spec": {
        "holderIdentity": held.holder or None, "leaseDurationSeconds": held.duration, "renewTime": _micro_now()}},
        _content_type=MERGE)
