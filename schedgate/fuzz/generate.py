"""Generated scenarios: Hypothesis strategies whose examples are scenario documents in the file language.

An example is a small cluster (``nodes`` with capacities, labels, taints, GPUs, cordoned or not), then pods
made one step at a time (requests, GPUs, required labels, tolerations, an app label, a required anti-affinity
to an app, a host port; some while the scheduler is stopped, which then starts again), then the outcome
``invariants`` with ``noMissedFit``.
Nodes come first and nothing is deleted or loosened afterwards, so a pod left Unschedulable that fits a node
at the end was refused wrongly. Every value is drawn from short lists, which Hypothesis shrinks towards their
first entry: the smallest node, the smallest pod, no labels, no taints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from schedgate.errors import SchedgateError

GPU = "nvidia.com/gpu"
ZONE, NET, APP = "fuzz.schedgate.io/zone", "fuzz.schedgate.io/net", "fuzz.schedgate.io/app"
APPS = ("", "a", "b")  # a pod's app label, and the app its required anti-affinity keeps off its node ("": none)
PORTS = (0, 0, 0, 8080, 8081)  # a pod's host port (0: none); two pods with one on a node conflict
# (key, value) pairs a node may have and a pod may require
LABELS = ((ZONE, "a"), (ZONE, "b"), (NET, "true"))
TAINTS = ({"key": "fuzz.schedgate.io/dedicated", "value": "gpu", "effect": "NoSchedule"},
          {"key": "fuzz.schedgate.io/maintenance", "effect": "NoExecute"})
NODE_CPU, NODE_MEMORY, NODE_PODS, NODE_GPUS = ("2", "1", "4"), ("4Gi", "2Gi", "8Gi"), (110, 2), (0, 1, 2, 4)
POD_CPU, POD_MEMORY, POD_GPUS = ("500m", "100m", "1", "2", "3"), ("512Mi", "128Mi", "1Gi", "3Gi"), (0, 1, 2)
LIMITS = {"examples": (1, 10_000), "max_nodes": (1, 8), "max_pods": (1, 30), "budget": (1, 86_400)}


@dataclass(frozen=True)
class Bounds:
    """How big an example may be and how many there are; each checked against ``LIMITS``."""

    examples: int = 30
    max_nodes: int = 3
    max_pods: int = 6
    budget: int = 240  # seconds for generating and shrinking together

    def __post_init__(self) -> None:
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise SchedgateError(f"--{name.replace('_', '-')}: must be {low}..{high}, got {value}")


def _node() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "cpu": st.sampled_from(NODE_CPU), "memory": st.sampled_from(NODE_MEMORY),
        "pods": st.sampled_from(NODE_PODS), "gpus": st.sampled_from(NODE_GPUS),
        "labels": st.lists(st.sampled_from(LABELS), unique_by=lambda kv: kv[0], max_size=2),
        "taints": st.lists(st.sampled_from(TAINTS), unique_by=lambda t: t["key"], max_size=2),
        "unschedulable": st.booleans(),
    })


def _pod() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "cpu": st.sampled_from(POD_CPU), "memory": st.sampled_from(POD_MEMORY), "gpus": st.sampled_from(POD_GPUS),
        "require": st.lists(st.sampled_from(LABELS), unique_by=lambda kv: kv[0], max_size=1),
        "tolerate": st.lists(st.sampled_from(TAINTS), unique_by=lambda t: t["key"], max_size=2),
        "restart": st.booleans(),  # made while its scheduler is stopped, which then starts again
        "app": st.sampled_from(APPS), "avoid": st.sampled_from(APPS), "port": st.sampled_from(PORTS),
    })


def examples(bounds: Bounds) -> st.SearchStrategy[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(nodes, pods) as drawn: what :func:`scenario_doc` turns into a file."""
    return st.tuples(st.lists(_node(), min_size=1, max_size=bounds.max_nodes),
                     st.lists(_pod(), min_size=1, max_size=bounds.max_pods))


def node_entry(i: int, n: dict[str, Any]) -> dict[str, Any]:
    capacity: dict[str, Any] = {"cpu": n["cpu"], "memory": n["memory"], "pods": n["pods"]}
    if n["gpus"]:
        capacity[GPU] = n["gpus"]
    out: dict[str, Any] = {"name": f"node-{i}", "capacity": capacity}
    if n["labels"]:
        out["labels"] = dict(n["labels"])
    if n["taints"]:
        out["taints"] = [dict(t) for t in n["taints"]]
    if n["unschedulable"]:
        out["unschedulable"] = True
    return out


def pod_step(i: int, p: dict[str, Any], profile: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f"pod-{i}", "scheduler": profile, "cpu": p["cpu"], "memory": p["memory"]}
    if p["gpus"]:
        out["gpus"] = p["gpus"]
    if p["require"]:
        out["requireLabels"] = dict(p["require"])
    if p["tolerate"]:
        out["tolerations"] = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in p["tolerate"]]
    if p.get("app"):
        out["labels"] = {APP: p["app"]}
    spec: dict[str, Any] = {}
    if p.get("avoid"):  # no two pods of that app on one node, this one included
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {APP: p["avoid"]}}, "topologyKey": "kubernetes.io/hostname"}]}}
    if p.get("port"):
        spec["containers"] = [{"name": "main", "ports": [
            {"containerPort": p["port"], "hostPort": p["port"], "protocol": "TCP"}]}]
    if spec:
        out["pod"] = {"spec": spec}
    return {"createPods": out}


def _around(step: dict[str, Any], p: dict[str, Any], profile: str) -> list[dict[str, Any]]:
    """The pod's step, or with ``restart`` its scheduler stopped before and started after it: the scheduler
    comes back to pods it bound before and one it never saw."""
    if not p.get("restart"):
        return [step]
    return [{"stopScheduler": {"profile": profile}}, step, {"startScheduler": {"profile": profile}}]


def scenario_doc(name: str, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], profile: str,
                 scheduler: str, description: str) -> dict[str, Any]:
    """A scenario file's document: the cluster inline, one createPods step a pod, then the invariants."""
    return {
        "apiVersion": "schedgate.io/v1alpha1", "kind": "Scenario", "name": name, "description": description,
        "scheduler": scheduler,
        "cluster": {"apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": "fuzz",
                    "nodes": [node_entry(i, n) for i, n in enumerate(nodes)]},
        "steps": [*(step for i, p in enumerate(pods) for step in _around(pod_step(i, p, profile), p, profile)),
                  {"expect": {"invariants": {"noMissedFit": True}, "timeout": 30}}],
    }


def size(doc: dict[str, Any]) -> tuple[int, int]:
    """How big a document is, for keeping the smallest failure: steps and nodes, then its text."""
    return len(doc["steps"]) + len(doc["cluster"]["nodes"]), len(repr(doc))
