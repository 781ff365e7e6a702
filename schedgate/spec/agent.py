"""A definition's node agent: what runs the pods of the definition's nodes.

::

    nodeAgent:
      kind: kwok                    # kwok (the default on kind), or kubelet (kind only)
      nodeMonitorGracePeriod: 10    # seconds; kube-controller-manager's --node-monitor-grace-period

Without one (the default) a local cluster's nodes are Node objects and nothing
more: a bound pod stays Pending, nothing heartbeats, and no node lifecycle
controller runs. With ``kind: kwok`` the local provider runs kwok (built from
``go/kwok/``) on every node: each node's Lease is renewed, bound pods go
Running and Ready, a Job's pods complete, a deleted pod goes when its grace
period ends; and the controller manager adds the node lifecycle and taint
eviction controllers, so a node whose heartbeats stop (the ``stopHeartbeats``
step) is tainted ``node.kubernetes.io/unreachable`` and its pods are evicted by
their tolerations. Upstream's grace period is 50 s; a definition may shorten
it. On kind every node is a kwok node of its one control plane unless the
definition says ``kind: kubelet``: then each node is a kind worker, a real
kubelet in a container (the DRA driver's kubelet plugin, a kubelet's own
admission and termination), and the definition gets a kind cluster of its own.
An existing cluster's nodes are its own: it runs no agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import Validator

KWOK, KUBELET = "kwok", "kubelet"
KINDS = (KWOK, KUBELET)
UPSTREAM_GRACE = 50.0  # kube-controller-manager's --node-monitor-grace-period default
KUBELET_LEASE = 40  # a kubelet's node Lease duration; it renews every quarter of it
MIN_GRACE = 4.0
AGENT = Shape("nodeAgent", "what runs the pods of the definition's nodes: kwok, or kind's kubelets", (
    Key("kind", "", {"enum": list(KINDS)}, required=True),
    Key("nodeMonitorGracePeriod", "seconds without a heartbeat before a node is Unknown (50)",
        {"type": "number", "minimum": MIN_GRACE, "maximum": 3600}),
))


@dataclass(frozen=True)
class NodeAgent:
    kind: str = "kwok"
    node_monitor_grace_period: float = UPSTREAM_GRACE

    def lease_seconds(self) -> int:
        """The node Lease duration kwok renews with (every quarter of it): a kubelet's 40 s, shorter when the
        grace period is, so that a grace period always spans three renewals."""
        return max(4, min(KUBELET_LEASE, int(self.node_monitor_grace_period * 4 / 3)))

    def controller_flags(self) -> list[str]:
        """kube-controller-manager flags: the node lifecycle's grace, and how often it looks."""
        grace = self.node_monitor_grace_period
        return [f"--node-monitor-grace-period={grace:g}s", f"--node-monitor-period={min(5.0, grace / 4):g}s"]


def kubelet_nodes(definition: Any) -> bool:
    """Whether the definition asks for real kubelets (``nodeAgent: {kind: kubelet}``): kind's workers."""
    agent = getattr(definition, "agent", None)
    return agent is not None and agent.kind == KUBELET


def agent_unmet(definition: Any, provider: str) -> str | None:
    """Why ``provider`` does not run the definition's node agent, or None: kubelets are kind's workers; an
    existing cluster's nodes are its own, with their own timing (a deletion, the lifecycle's grace period)."""
    agent = getattr(definition, "agent", None)
    if agent is None or provider == "kind" or (provider == "local" and agent.kind == KWOK):
        return None
    if agent.kind == KUBELET:
        return (f"{definition.source}: nodeAgent kubelet asks for real kubelets, kind's workers; the {provider} "
                "provider's nodes are not (run it with --provider kind)")
    return (f"{definition.source}: nodeAgent ({agent.kind}) is a cluster schedgate makes; the {provider} "
            "provider's nodes are its own, whose timing (a pod's termination, the node lifecycle's grace period) "
            "the definition's agent sets on local and kind")


def parse_agent(v: Validator, raw: Any, where: str) -> NodeAgent:
    m = AGENT.read(v, raw, where)
    kind = v.string(m["kind"], f"{where}.kind")
    if kind not in KINDS:
        v.fail(f"{where}.kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    grace = UPSTREAM_GRACE
    if "nodeMonitorGracePeriod" in m:
        grace = v.number(m["nodeMonitorGracePeriod"], f"{where}.nodeMonitorGracePeriod", minimum=MIN_GRACE,
                         maximum=3600)
    return NodeAgent(kind=kind, node_monitor_grace_period=grace)
