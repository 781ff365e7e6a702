"""Nodes as the definition wants them: edits a test makes, a typed undo log, and the reset before
the next test, over a :class:`NodeBackend` that knows what kind of node the provider runs.

Two kinds exist: :class:`ApiOnlyNodes` (Node objects whose capacity, allocatable
and Ready condition schedgate sets; nothing runs on them) and
:class:`KubeletNodes` (a kubelet owns the status: cpu, memory and pods are the
machine's, extended resources are advertised as a device plugin would, and a
deleted Node comes back only if the provider can bring its kubelet back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from schedgate.errors import ComponentError
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.watch import MATCH, Check, pending, wait_for_items
from schedgate.spec.cluster import GPU, ClusterDefinition, NodeSpec, Taint

MERGE = "application/merge-patch+json"
# Taints the API server adds to a new node until a node-lifecycle controller clears them.
ADMISSION_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})

# What ``before_edit`` is told when a node is to be deleted.
DELETE = "delete it"

# What an edit touched, so the reset knows what to undo.
Aspect = Literal["label", "annotation", "taint", "resource", "node"]


@dataclass(frozen=True)
class Touch:
    aspect: Aspect
    key: str


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_condition(message: str) -> dict[str, str]:
    t = now()
    return {"type": "Ready", "status": "True", "reason": "SchedgateNode", "message": message,
            "lastHeartbeatTime": t, "lastTransitionTime": t}


class NodeBackend(Protocol):
    """How one provider's nodes are created, advertised and brought back."""

    @property
    def runs_pods(self) -> bool:
        """Whether a kubelet runs the pods bound to these nodes (pods can become Ready)."""

    def before_edit(self, node: str, what: str) -> None:
        """Called before schedgate writes ``node`` (``what``: the edit, for the reason; :data:`DELETE` for a
        deletion); raises :class:`~schedgate.errors.NotHere` where that node may not be edited."""

    def bring_back(self, spec: NodeSpec) -> bool:
        """The Node object is gone: create or re-register it; returns whether anything was written."""

    def cleared_taints(self) -> frozenset[str]:
        """Taints the reset removes besides the definition's own and those a test added."""

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str]) -> dict[str, Any]:
        """The status patch that makes ``resources`` (and readiness) what ``spec`` says."""

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        """Wait until the node shows what the status patch asked for."""

    def set_gpus(self, node: str, count: int) -> None:
        """Change the node's GPU count (a device going offline or coming back)."""


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
    """Node objects only: schedgate writes capacity, allocatable and a Ready condition; nothing overwrites them."""

    core: Any
    runs_pods: bool = False

    def before_edit(self, node: str, what: str) -> None:
        return None  # schedgate made these nodes: every edit is allowed

    def bring_back(self, spec: NodeSpec) -> bool:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": spec.name, "labels": dict(spec.labels)},
                "spec": {"taints": [t.to_api() for t in spec.taints] or None}}
        self.core.create_node(body)
        return True

    def cleared_taints(self) -> frozenset[str]:
        return ADMISSION_TAINTS

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str]) -> dict[str, Any]:
        patch: dict[str, Any] = {}
        for section, want in (("capacity", spec.capacity), ("allocatable", spec.allocatable)):
            diff = _diff(status.get(section) or {}, want, resources)
            if diff:
                patch[section] = diff
        if not _ready(status):
            patch["conditions"] = [ready_condition("API-only node kept Ready by schedgate")]
        return patch

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        return None  # the patch is the state: nothing else writes these nodes

    def set_gpus(self, node: str, count: int) -> None:
        body = {"status": {"capacity": {GPU: str(count)}, "allocatable": {GPU: str(count)}}}
        self.core.patch_node_status(node, body, _content_type=MERGE)


@dataclass
class KubeletNodes:
    """Nodes a kubelet owns: only extended resources are advertised (capacity; the kubelet computes
    allocatable), and a deleted Node is re-registered by ``recreate`` (e.g. restarting its kubelet)."""

    core: Any
    provider: str
    recreate: Callable[[str], None] | None = None
    runs_pods: bool = True

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

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str]) -> dict[str, Any]:
        diff = _diff(status.get("capacity") or {}, spec.capacity, {r for r in resources if "/" in r})
        return {"capacity": diff} if diff else {}

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        extended = {r for r in resources if "/" in r}
        if extended:
            wait_allocatable(self.core, spec.name, {r: spec.allocatable.get(r, "0") for r in extended})

    def set_gpus(self, node: str, count: int) -> None:
        # The kubelet computes allocatable from its own (possibly older) copy of the node: patch capacity
        # only and wait for its allocatable, proof that it works from the new value.
        self.core.patch_node_status(node, {"status": {"capacity": {GPU: str(count)}}}, _content_type=MERGE)
        wait_allocatable(self.core, node, {GPU: str(count)})


@dataclass
class Nodes:
    """The definition's nodes on a running cluster: edits, and the reset that undoes them."""

    core: Any
    definition: ClusterDefinition
    backend: NodeBackend
    _touched: dict[str, set[Touch]] = field(default_factory=dict)
    # An edit the schedulers may not have seen yet (see Cluster.settle).
    unseen: bool = False

    def _touch(self, node: str, aspect: Aspect, key: str, what: str = "") -> None:
        self.backend.before_edit(node, what or (f"set {aspect} {key}" if aspect != "node" else key))
        self._touched.setdefault(node, set()).add(Touch(aspect, key))
        self.unseen = True

    def read(self, name: str) -> dict[str, Any] | None:
        return ignore_not_found(read_json, self.core.read_node, name)

    def _patch(self, node: str, body: dict[str, Any]) -> None:
        self.core.patch_node(node, body, _content_type=MERGE)

    # -- edits ---------------------------------------------------------------
    def label(self, node: str, key: str, value: str | None) -> None:
        """Set (or with ``None`` remove) a label."""
        self._touch(node, "label", key)
        self._patch(node, {"metadata": {"labels": {key: value}}})

    def annotate(self, node: str, key: str, value: str | None) -> None:
        """Set (or with ``None`` remove) an annotation, e.g. a capacity a plugin reads."""
        self._touch(node, "annotation", key)
        self._patch(node, {"metadata": {"annotations": {key: value}}})

    def taint(self, node: str, key: str, value: str = "", effect: str = "NoSchedule") -> None:
        self._touch(node, "taint", key)
        taints = [t for t in self._taints(node) if t.get("key") != key] + [Taint(key, effect, value).to_api()]
        self._patch(node, {"spec": {"taints": taints}})

    def untaint(self, node: str, key: str) -> None:
        self._touch(node, "taint", key)
        taints = [t for t in self._taints(node) if t.get("key") != key]
        self._patch(node, {"spec": {"taints": taints or None}})

    def _taints(self, node: str) -> list[dict[str, Any]]:
        return list(((self.read(node) or {}).get("spec") or {}).get("taints") or [])

    def set_gpus(self, node: str, count: int) -> None:
        if count < 0:
            raise ValueError(f"GPU count must be >= 0, got {count}")
        self._touch(node, "resource", GPU)
        self.backend.set_gpus(node, count)

    def cordon(self, node: str) -> None:
        self._touch(node, "node", "cordoned")
        self._patch(node, {"spec": {"unschedulable": True}})

    def delete(self, node: str) -> None:
        self._touch(node, "node", "deleted", DELETE)
        ignore_not_found(self.core.delete_node, node)

    # -- reset ---------------------------------------------------------------
    def reset(self) -> bool:
        """Bring every node back to its definition; returns whether anything changed."""
        changed = False
        for spec in self.definition.nodes():
            changed |= self._reconcile(spec, self._touched.pop(spec.name, set()))
        return changed

    def _reconcile(self, spec: NodeSpec, touched: set[Touch]) -> bool:
        cur = self.read(spec.name)
        changed = False
        if cur is None:
            self.backend.before_edit(spec.name, "bring the node back")
            changed = self.backend.bring_back(spec)
            cur = self.read(spec.name) or {}
        keys = {a: {t.key for t in touched if t.aspect == a} for a in ("label", "annotation", "taint", "resource")}
        meta = cur.get("metadata") or {}
        labels = meta.get("labels") or {}
        label_patch: dict[str, str | None] = {k: v for k, v in spec.labels.items() if labels.get(k) != v}
        label_patch.update({k: None for k in keys["label"] if k not in spec.labels})
        stale = {k: None for k in keys["annotation"] if k in (meta.get("annotations") or {})}
        managed_taints = {t.key for t in spec.taints} | keys["taint"] | self.backend.cleared_taints()
        cur_taints = (cur.get("spec") or {}).get("taints") or []
        want_taints = [t for t in cur_taints if t.get("key") not in managed_taints] + [t.to_api() for t in spec.taints]
        patch: dict[str, Any] = {}
        if label_patch:
            patch["metadata"] = {"labels": label_patch}
        if stale:
            patch.setdefault("metadata", {})["annotations"] = stale
        if _taint_set(cur_taints) != _taint_set(want_taints):
            patch["spec"] = {"taints": want_taints or None}
        if (cur.get("spec") or {}).get("unschedulable"):
            patch.setdefault("spec", {})["unschedulable"] = None
        if patch:
            self.backend.before_edit(spec.name, f"make it as defined: {sorted(_flat(patch))}")
            self._patch(spec.name, patch)
            changed = True
        resources = set(spec.capacity) | keys["resource"]
        status_patch = self.backend.status_patch(spec, cur.get("status") or {}, resources)
        if status_patch:
            self.backend.before_edit(spec.name, f"make its resources as defined: {sorted(_flat(status_patch))}")
            self.core.patch_node_status(spec.name, {"status": status_patch}, _content_type=MERGE)
            changed = True
        self.backend.settle(spec, resources)
        return changed


def _flat(patch: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The fields a patch sets, dotted (``metadata.labels.pool``)."""
    out: list[str] = []
    for k, v in patch.items():
        path = f"{prefix}{k}"
        out += _flat(v, path + ".") if isinstance(v, Mapping) and v else [path]
    return out


def _taint_set(taints: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(t.get("key", ""), t.get("value") or "", t.get("effect", "")) for t in taints}


def _ready(status: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])

