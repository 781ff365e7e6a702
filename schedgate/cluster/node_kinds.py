"""The two kinds of node a provider runs, behind one protocol (:class:`NodeBackend`):
:class:`ApiOnlyNodes` (Node objects whose capacity, allocatable and Ready condition schedgate sets;
nothing runs on them) and :class:`KubeletNodes` (a kubelet owns the status: cpu, memory and pods are
the machine's, extended resources are advertised as a device plugin would, and a deleted Node comes
back only if the provider can bring its kubelet back)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from schedgate.cluster.abilities import Ability
from schedgate.errors import ComponentError, NotHere
from schedgate.kube.api import read_json
from schedgate.kube.watch import MATCH, Check, pending, wait_for_items
from schedgate.spec.cluster import Condition, NodeSpec

MERGE = "application/merge-patch+json"
# Taints the API server adds to a new node until a node-lifecycle controller clears them.
ADMISSION_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
CORDON_TAINT = "node.kubernetes.io/unschedulable"  # what a node lifecycle controller taints a cordoned node with

# What ``before_edit`` is told when a node is to be deleted.
DELETE = "delete it"

def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_condition(message: str) -> dict[str, str]:
    t = now()
    return {"type": "Ready", "status": "True", "reason": "SchedgateNode", "message": message,
            "lastHeartbeatTime": t, "lastTransitionTime": t}


class NodeBackend(Protocol):
    """How one provider's nodes are created, advertised and brought back."""

    @property
    def abilities(self) -> frozenset[Ability]:
        """Which of ADDS_NODES (a Node object it creates is a whole node, no kubelet needed behind it),
        RUNS_PODS (something runs the pods bound to these nodes, a kubelet or a node agent: they go Ready)
        and ADMITS_PODS (a kubelet's admission checks a bound pod against the node) these nodes have."""

    def before_edit(self, node: str, what: str) -> None:
        """Called before schedgate writes ``node`` (``what``: the edit, for the reason; :data:`DELETE` for a
        deletion); raises :class:`~schedgate.errors.NotHere` where that node may not be edited."""

    def bring_back(self, spec: NodeSpec) -> bool:
        """The Node object is gone: create or re-register it; returns whether anything was written."""

    def cleared_taints(self) -> frozenset[str]:
        """Taints the reset removes besides the definition's own and those a test added."""

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str],
                     conditions: set[str]) -> dict[str, Any]:
        """The status patch that makes ``resources`` and conditions (the spec's, and ``conditions``: types a
        test set) what ``spec`` says."""

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        """Wait until the node shows what the status patch asked for."""

    def set_resources(self, node: str, capacity: Mapping[str, str], allocatable: Mapping[str, str]) -> None:
        """Change the node's capacity and allocatable of these resources (a device going offline, a resize)."""

    def set_conditions(self, node: str, conditions: Sequence[Condition]) -> None:
        """Set these status conditions (by type; the others stay)."""


@dataclass
class _NodeList:
    """Every node, as a collection ``wait_for_items`` can list and watch."""

    core: Any

    def describe(self) -> str:
        return "nodes"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.core.list_node, (), {}

    def check_health(self) -> None:
        return None


def wait_node_registered(core: Any, name: str, timeout: float = 120.0) -> None:
    def present(items: list[dict[str, Any]]) -> Check:
        return MATCH if any(i["metadata"]["name"] == name for i in items) else pending(f"node {name} absent")

    wait_for_items(_NodeList(core), present, f"node {name} registered again", timeout)


def wait_allocatable(core: Any, name: str, want: Mapping[str, str], timeout: float = 60.0) -> None:
    """Wait until the node's allocatable shows ``want`` (a kubelet copies capacity into it)."""

    def shown(items: list[dict[str, Any]]) -> Check:
        for i in items:
            if i["metadata"]["name"] == name:
                have = (i.get("status") or {}).get("allocatable") or {}
                diff = {r: have.get(r) for r, v in want.items() if have.get(r, "0") != v}
                return MATCH if not diff else pending(f"allocatable {diff}, want {dict(want)}")
        return pending(f"node {name} absent")

    wait_for_items(_NodeList(core), shown, f"node {name} allocatable showing {dict(want)}", timeout)


def _diff(have: Mapping[str, str], want: Mapping[str, str], resources: set[str]) -> dict[str, str | None]:
    return {r: want.get(r) for r in resources if have.get(r) != want.get(r)}


@dataclass
class ApiOnlyNodes:
    """Node objects only: schedgate writes capacity, allocatable and a Ready condition; nothing overwrites them.
    With a node agent (kwok, ``agent``) they have RUNS_PODS: it renews their Leases and runs their pods,
    admitting every one."""

    core: Any
    agent: bool = False  # a node agent runs their pods

    @property
    def abilities(self) -> frozenset[Ability]:
        return frozenset({Ability.ADDS_NODES, *([Ability.RUNS_PODS] if self.agent else [])})

    def before_edit(self, node: str, what: str) -> None:
        return None  # schedgate made these nodes: every edit is allowed

    def bring_back(self, spec: NodeSpec) -> bool:
        # Status goes with the create, as a kubelet registers its node: one event, the node whole at once
        # (a scheduler hears no half-made node without allocatable).
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": spec.name, "labels": dict(spec.labels),
                                                             "annotations": dict(spec.annotations) or None},
                "spec": {"taints": [t.to_api() for t in spec.taints] or None,
                         "unschedulable": spec.unschedulable or None},
                "status": {"capacity": dict(spec.capacity), "allocatable": dict(spec.allocatable),
                           "conditions": wanted_conditions(spec)}}
        self.core.create_node(body)
        return True

    def cleared_taints(self) -> frozenset[str]:
        return ADMISSION_TAINTS

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str],
                     conditions: set[str]) -> dict[str, Any]:
        patch: dict[str, Any] = {}
        for section, want in (("capacity", spec.capacity), ("allocatable", spec.allocatable)):
            diff = _diff(status.get(section) or {}, want, resources)
            if diff:
                patch[section] = diff
        have = status.get("conditions") or []
        wanted = wanted_conditions(spec)
        types = {c["type"] for c in wanted}
        stale = any(c.get("type") in conditions and c.get("type") not in types for c in have)
        if _condition_set(wanted) - _condition_set(have) or stale:
            # A merge patch replaces the list: keep the conditions nobody here set.
            patch["conditions"] = [c for c in have if c.get("type") not in types | conditions] + wanted
        return patch

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        return None  # the patch is the state: nothing else writes these nodes

    def set_resources(self, node: str, capacity: Mapping[str, str], allocatable: Mapping[str, str]) -> None:
        body = {"status": {"capacity": dict(capacity), "allocatable": dict(allocatable)}}
        self.core.patch_node_status(node, body, _content_type=MERGE)

    def set_conditions(self, node: str, conditions: Sequence[Condition]) -> None:
        have = (read_json(self.core.read_node, node).get("status") or {}).get("conditions") or []
        given = {c.type: _api_condition(c) for c in conditions}
        merged = [given.pop(c.get("type"), c) for c in have] + list(given.values())
        self.core.patch_node_status(node, {"status": {"conditions": merged}}, _content_type=MERGE)


@dataclass
class KubeletNodes:
    """Nodes a kubelet owns: only extended resources are advertised (capacity; the kubelet computes
    allocatable), and a deleted Node is re-registered by ``recreate`` (e.g. restarting its kubelet)."""

    core: Any
    provider: str
    recreate: Callable[[str], None] | None = None
    abilities: frozenset[Ability] = frozenset({Ability.RUNS_PODS, Ability.ADMITS_PODS})

    def before_edit(self, node: str, what: str) -> None:
        return None  # schedgate made these nodes: every edit is allowed

    def bring_back(self, spec: NodeSpec) -> bool:
        if self.recreate is None:
            raise ComponentError(f"node {spec.name} is gone and the {self.provider} provider cannot recreate nodes")
        self.recreate(spec.name)
        wait_node_registered(self.core, spec.name)
        return True

    def cleared_taints(self) -> frozenset[str]:
        return frozenset()

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str],
                     conditions: set[str]) -> dict[str, Any]:
        diff = _diff(status.get("capacity") or {}, spec.capacity, {r for r in resources if "/" in r})
        return {"capacity": diff} if diff else {}

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        extended = {r for r in resources if "/" in r}
        if extended:
            wait_allocatable(self.core, spec.name, {r: spec.allocatable.get(r, "0") for r in extended})

    def set_resources(self, node: str, capacity: Mapping[str, str], allocatable: Mapping[str, str]) -> None:
        own = sorted(r for r in {*capacity, *allocatable} if "/" not in r)
        if own:
            raise NotHere(f"node {node}'s {', '.join(own)} are its kubelet's to report; the {self.provider} "
                          "provider changes extended resources only")
        if any(allocatable.get(r, q) != q for r, q in capacity.items()) or set(allocatable) - set(capacity):
            raise NotHere(f"node {node}'s kubelet computes allocatable from capacity; the {self.provider} "
                          "provider cannot set them apart")
        # The kubelet computes allocatable from its own (possibly older) copy of the node: patch capacity
        # only and wait for its allocatable, proof that it works from the new value.
        self.core.patch_node_status(node, {"status": {"capacity": dict(capacity)}}, _content_type=MERGE)
        wait_allocatable(self.core, node, dict(capacity))

    def set_conditions(self, node: str, conditions: Sequence[Condition]) -> None:
        raise NotHere(f"node {node}'s conditions are its kubelet's to report (it rewrites them at each heartbeat); "
                      f"the {self.provider} provider cannot set them")


def _api_condition(c: Condition) -> dict[str, str]:
    t = now()
    return {"type": c.type, "status": c.status, "reason": c.reason or "SchedgateCondition",
            "message": c.message or "set by schedgate", "lastHeartbeatTime": t, "lastTransitionTime": t}


def wanted_conditions(spec: NodeSpec) -> list[dict[str, str]]:
    """Ready=True unless the spec names its own Ready, then the spec's conditions."""
    own = [_api_condition(c) for c in spec.conditions]
    ready = [] if any(c.type == "Ready" for c in spec.conditions) else \
        [ready_condition("API-only node kept Ready by schedgate")]
    return ready + own


def _condition_set(conditions: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(c.get("type")), str(c.get("status"))) for c in conditions}
