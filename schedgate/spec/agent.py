"""A definition's node agent: what stands in for the kubelets of API-only nodes.

::

    nodeAgent:
      kind: kwok                    # the one agent there is
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
it. kind's nodes are kubelets already and an existing cluster's are its own:
those providers run no agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import Validator

KINDS = ("kwok",)
UPSTREAM_GRACE = 50.0  # kube-controller-manager's --node-monitor-grace-period default
KUBELET_LEASE = 40  # a kubelet's node Lease duration; it renews every quarter of it
MIN_GRACE = 4.0
AGENT = Shape("nodeAgent", "what runs the pods of API-only nodes on the local provider", (
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


def agent_only_local(definition: Any, provider: str) -> str | None:
    """Why the ``provider`` (not local) does not run a definition with a node agent, or None without one: its
    nodes are kubelets, with their own timing (a deletion, the lifecycle's grace period) the file relies on."""
    if getattr(definition, "agent", None) is None:
        return None
    return (f"{definition.source}: nodeAgent ({definition.agent.kind}) is the local provider's; the {provider} "
            "provider's nodes are kubelets, whose timing (a pod's termination, the node lifecycle's grace period) "
            "the definition's agent sets on local")


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
