"""Two schedulers, one pool: what happens when independent schedulers bind to the same node.

Schedulers in separate processes share no assumed cache: each counts what it has
seen bound, not what the other has just chosen, and the API server's binding
checks no capacity. On API-only nodes nothing else does either, so the node ends
up holding more than it has; on a kubelet's node, the kubelet's admission is the
last check. ``overcommitted`` waits until every pod it names is bound to the
node, then requires the node's bound pods to ask for more of the resource than
it has, and reports who holds what — the finding, written down as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schedgate.cluster import Ability
from schedgate.errors import NotHere
from schedgate.kube.api import read_json
from schedgate.objects.matchers import scheduled_on
from schedgate.scenarios.declare import DeclaredOutcome, arg
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import STR
from schedgate.spec.quantity import parse_quantity


def _one_node(p: Parser, raw: Any, w: str) -> str:
    nodes = p.node_set(raw, w)
    if len(nodes) != 1:
        p.v.fail(w, f"must name one node, got {len(nodes)}")
    return nodes[0]


def _resource(p: Parser, raw: Any, w: str) -> str:
    if not isinstance(raw, str) or not raw:
        p.v.fail(w, f"must be a resource name, got {raw!r}")
    return raw


@outcome("overcommitted")
@dataclass(frozen=True)
class Overcommitted(DeclaredOutcome):
    """``node``: the pods are all bound there and its bound pods ask for more ``resource`` (default
    nvidia.com/gpu) than it has allocatable."""

    node: str = arg("node", "the node both schedulers bound to", STR, _one_node)
    resource: str = arg("resource", "a resource name (default nvidia.com/gpu)", STR, _resource,
                        default="nvidia.com/gpu")

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        if r.cluster.can(Ability.ADMITS_PODS):
            raise NotHere(f"overcommitted: {self.node} runs a kubelet, whose admission refuses a pod that does "
                          "not fit; the step asserts what API-only nodes (the local provider) let through")
        r.each(pods, scheduled_on([self.node]), timeout)
        core = r.cluster.core
        node = read_json(core.read_node, self.node)
        have = parse_quantity(((node.get("status") or {}).get("allocatable") or {}).get(self.resource, "0"))
        bound = read_json(core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={self.node}")["items"]
        holders = [(pod, asked(pod, self.resource)) for pod in bound if _running(pod)]
        total = sum(n for _, n in holders)
        shown = ", ".join(f"{p['metadata']['name']} ({p['spec'].get('schedulerName', 'default-scheduler')}) "
                          f"{_num(n)}" for p, n in holders if n)
        r.figure(f"step {index}: {self.resource} bound on {self.node}", f"{_num(total)} of {_num(have)}: {shown}")
        if total <= have:
            raise AssertionError(f"{self.node}: its bound pods ask for {_num(total)} {self.resource} of "
                                 f"{_num(have)} allocatable, not more ({shown or 'none'})")


def asked(pod: Mapping[str, Any], resource: str) -> float:
    """What the pod requests of ``resource``: its containers' sum, or its largest init container's."""
    def req(c: Mapping[str, Any]) -> float:
        return parse_quantity(str(((c.get("resources") or {}).get("requests") or {}).get(resource, "0")))

    spec = pod.get("spec") or {}
    main = sum(req(c) for c in spec.get("containers") or [])
    return max([main, *(req(c) for c in spec.get("initContainers") or [])])


def _running(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not \
        (pod.get("metadata") or {}).get("deletionTimestamp")


def _num(x: float) -> str:
    return f"{x:g}"
