"""Nodes as the definition wants them: edits a test makes, a typed undo log, and the reset before
the next test, over a :class:`~schedgate.cluster.node_kinds.NodeBackend` that knows what kind of node
the provider runs (API-only nodes or kubelets: :mod:`schedgate.cluster.node_kinds`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from schedgate.cluster.abilities import Ability
from schedgate.cluster.devices import Devices
from schedgate.cluster.heartbeats import Held, restart_heartbeat, stop_heartbeat
from schedgate.cluster.node_kinds import (
    ADMISSION_TAINTS,
    CORDON_TAINT,
    DELETE,
    MERGE,
    ApiOnlyNodes,
    KubeletNodes,
    NodeBackend,
    now,
    ready_condition,
    wait_allocatable,
    wait_node_registered,
)
from schedgate.errors import ComponentError, NotHere
from schedgate.kube.api import ignore_not_found, pages, read_json
from schedgate.runtime.progress import LIVE
from schedgate.spec.cluster import GPU, ClusterDefinition, Condition, NodeSpec, Taint

log = logging.getLogger("schedgate")
CREATE_WORKERS = 8  # concurrent node creates: enough to keep a local API server busy, bounded for a shared one
PROGRESS_EVERY = 500

__all__ = ["ADMISSION_TAINTS", "DELETE", "MERGE", "ApiOnlyNodes", "KubeletNodes", "NodeBackend", "Nodes", "Touch",
           "now", "ready_condition", "wait_allocatable", "wait_node_registered"]

# What an edit touched, so the reset knows what to undo.
Aspect = Literal["label", "annotation", "taint", "resource", "node", "condition"]


@dataclass(frozen=True)
class Touch:
    aspect: Aspect
    key: str


@dataclass
class Nodes:
    """The definition's nodes on a running cluster: edits, and the reset that undoes them."""

    core: Any
    definition: ClusterDefinition
    backend: NodeBackend
    _touched: dict[str, set[Touch]] = field(default_factory=dict)
    # Nodes a test added (``add``): deleted by the reset.
    added: dict[str, NodeSpec] = field(default_factory=dict)
    # An edit the schedulers may not have seen yet (see Cluster.settle).
    unseen: bool = False
    # The nodes' devices, published as ResourceSlices (by schedgate on API-only nodes, by a driver on kubelets).
    devices: Devices | None = None
    # Nodes whose heartbeat a test stopped, with what their Lease was (the reset gives it back).
    stopped: dict[str, Held] = field(default_factory=dict)

    @property
    def publishes_devices(self) -> bool:
        """Whether the nodes' devices can be published: API-only nodes, or kubelets with a DRA driver."""
        return self.devices is not None and (self._can(Ability.ADDS_NODES) or self.devices.on_kubelets)

    def _can(self, ability: Ability) -> bool:
        return ability in self.backend.abilities

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
        self.set_resources(node, {GPU: str(count)}, {GPU: str(count)})

    def set_resources(self, node: str, capacity: Mapping[str, str], allocatable: Mapping[str, str]) -> None:
        """Set capacity and allocatable of the resources named (allocatable defaults to the capacity given)."""
        allocatable = {**capacity, **allocatable}
        for r in sorted({*capacity, *allocatable}):
            self._touch(node, "resource", r)
        self.backend.set_resources(node, capacity, allocatable)

    def set_conditions(self, node: str, conditions: Sequence[Condition]) -> None:
        """Set status conditions by type (the reset puts the definition's back)."""
        for c in conditions:
            self._touch(node, "condition", c.type)
        self.backend.set_conditions(node, conditions)

    def add(self, spec: NodeSpec) -> None:
        """Create a node the definition does not have; the reset deletes it again."""
        if not self._can(Ability.ADDS_NODES):
            raise NotHere(f"node {spec.name} cannot be added: this provider's nodes are kubelets it started")
        if self.read(spec.name) is not None:
            raise ComponentError(f"node {spec.name} cannot be added: a node of that name exists")
        self._touch(spec.name, "node", "added")
        self.added[spec.name] = spec
        self.backend.bring_back(spec)
        self._reconcile(spec, set())

    def add_many(self, specs: Sequence[NodeSpec]) -> None:
        """Create nodes the definition does not have, several at a time (each as :meth:`add` would, without
        reading it back); the reset deletes them, or :meth:`remove_added` sooner."""
        if not self._can(Ability.ADDS_NODES):
            raise NotHere(f"{len(specs)} nodes cannot be added: this provider's nodes are kubelets it started")
        taken = sorted(set(self._listed()) & {s.name for s in specs})
        if taken:
            raise ComponentError(f"nodes {', '.join(taken[:3])} cannot be added: nodes of those names exist")
        for spec in specs:
            self._touch(spec.name, "node", "added")
            self.added[spec.name] = spec
        self._create_many(specs)
        listed = self._listed()  # the API server's admission taints each new node: reconcile takes them off
        with ThreadPoolExecutor(max_workers=CREATE_WORKERS, thread_name_prefix="schedgate-nodes") as pool:
            list(pool.map(lambda spec: self._reconcile(spec, set(), listed.get(spec.name)), specs))

    def remove_added(self, names: Sequence[str]) -> None:
        """Delete nodes :meth:`add_many` (or :meth:`add`) made, several at a time."""
        unknown = [n for n in names if n not in self.added]
        if unknown:
            raise ComponentError(f"node {unknown[0]} was not added by this run; only added nodes are removed")
        with ThreadPoolExecutor(max_workers=CREATE_WORKERS, thread_name_prefix="schedgate-nodes") as pool:
            list(pool.map(lambda n: ignore_not_found(self.core.delete_node, n), names))
        for n in names:
            del self.added[n]
            self._touched.pop(n, None)
            if self.devices is not None:
                self.devices.forget(n)
        self.unseen = True

    def set_devices_offline(self, node: str, names: Sequence[str], offline: bool = True) -> None:
        """Take devices out of the node's ResourceSlice (a device gone offline), or with ``offline=False``
        put them back; the reset restores every one."""
        spec = self._spec(node)
        if self.devices is None or not spec.devices or not self.publishes_devices:
            raise NotHere(f"node {node} has no devices schedgate publishes")
        self._touch(node, "node", "devices", f"set devices {', '.join(names)} {'offline' if offline else 'online'}")
        self.devices.set_offline(spec, names, offline)

    def _spec(self, node: str) -> NodeSpec:
        return self.added.get(node) or self.definition.node(node)

    def stop_heartbeat(self, node: str) -> None:
        """Stop the node's heartbeat (:mod:`schedgate.cluster.heartbeats`); the reset starts it again."""
        if not (isinstance(self.backend, ApiOnlyNodes) and self._can(Ability.RUNS_PODS)):
            raise NotHere(f"node {node}: stopping a heartbeat needs the local provider's node agent "
                          "(a definition with nodeAgent: {kind: kwok}); a kubelet's own is not stopped here")
        self._touch(node, "node", "heartbeat stopped")
        if node not in self.stopped:
            self.stopped[node] = stop_heartbeat(self.core, node)

    def cordon(self, node: str) -> None:
        self._touch(node, "node", "cordoned")
        self._patch(node, {"spec": {"unschedulable": True}})

    def delete(self, node: str) -> None:
        self._touch(node, "node", "deleted", DELETE)
        ignore_not_found(self.core.delete_node, node)
        if self.devices is not None:
            self.devices.forget(node)

    # -- reset ---------------------------------------------------------------
    def reset(self) -> bool:
        """Bring every node back to its definition; returns whether anything changed."""
        changed = bool(self.stopped)
        for name, held in list(self.stopped.items()):  # first: the reconcile below then sets it Ready again
            del self.stopped[name]
            restart_heartbeat(self.core, name, held)
        for name in list(self.added):
            del self.added[name]
            self._touched.pop(name, None)
            ignore_not_found(self.core.delete_node, name)
            if self.devices is not None:
                self.devices.forget(name)
            changed = True
        if self.devices is not None:
            self.devices.offline.clear()  # the nodes' reconcile below publishes every device again
            if self.publishes_devices:
                changed |= self.devices.make_classes(self.definition)
        listed = self._listed()
        missing = [spec for spec in self.definition.nodes() if spec.name not in listed]
        if len(missing) > 1 and self._can(Ability.ADDS_NODES):
            self._create_many(missing)
            listed, changed = self._listed(), True
        for spec in self.definition.nodes():
            changed |= self._reconcile(spec, self._touched.pop(spec.name, set()), listed.get(spec.name))
        return changed

    def _listed(self) -> dict[str, dict[str, Any]]:
        """Every node as the API has it now: one list (paged), not a read per node."""
        return {n["metadata"]["name"]: n for items in pages(self.core.list_node) for n in items}

    def _create_many(self, specs: Sequence[NodeSpec]) -> None:
        """API-only nodes made ``CREATE_WORKERS`` at a time (the API server, not the client, sets the pace),
        with a progress line every ``PROGRESS_EVERY`` nodes."""
        t0, done = time.monotonic(), 0
        with ThreadPoolExecutor(max_workers=CREATE_WORKERS, thread_name_prefix="schedgate-nodes") as pool:
            for _ in pool.map(self.backend.bring_back, specs):
                done += 1
                if done % PROGRESS_EVERY == 0 and done < len(specs):
                    elapsed = time.monotonic() - t0
                    log.info("nodes: %d of %d made, %.0f/s, about %.0f s left", done, len(specs), done / elapsed,
                             (len(specs) - done) * elapsed / done, extra=LIVE)

    def redefine(self, definition: ClusterDefinition) -> None:
        """Replace the node set with another definition's: a node whose spec differs is deleted and made
        anew (nothing of the old one is left on it), then every node is made as defined."""
        if definition == self.definition:
            return
        if not self._can(Ability.ADDS_NODES):
            raise NotHere("this provider's nodes are kubelets it started; it cannot replace them")
        want = {n.name: n for n in definition.nodes()}
        for spec in self.definition.nodes():
            if want.get(spec.name) != spec:
                self._touched.pop(spec.name, None)
                ignore_not_found(self.core.delete_node, spec.name)
                if self.devices is not None:
                    self.devices.forget(spec.name)
        self.definition = definition
        self.unseen = True
        self.reset()

    def _reconcile(self, spec: NodeSpec, touched: set[Touch], cur: dict[str, Any] | None = None) -> bool:
        cur = cur if cur is not None else self.read(spec.name)
        changed = False
        if cur is None:
            self.backend.before_edit(spec.name, "bring the node back")
            changed = self.backend.bring_back(spec)
            cur = self.read(spec.name) or {}
        keys = {a: {t.key for t in touched if t.aspect == a}
                for a in ("label", "annotation", "taint", "resource", "condition")}
        meta = cur.get("metadata") or {}
        labels = meta.get("labels") or {}
        label_patch: dict[str, str | None] = {k: v for k, v in spec.labels.items() if labels.get(k) != v}
        label_patch.update({k: None for k in keys["label"] if k not in spec.labels})
        stale = {k: None for k in keys["annotation"] if k in (meta.get("annotations") or {})}
        managed_taints = {t.key for t in spec.taints} | keys["taint"] | self.backend.cleared_taints()
        if not spec.unschedulable:  # a cordon's taint (the node lifecycle controller's) goes with the cordon: the
            managed_taints.add(CORDON_TAINT)  # controller would take it off later, after the next test began
        cur_taints = (cur.get("spec") or {}).get("taints") or []
        want_taints = [t for t in cur_taints if t.get("key") not in managed_taints] + [t.to_api() for t in spec.taints]
        patch: dict[str, Any] = {}
        if label_patch:
            patch["metadata"] = {"labels": label_patch}
        if stale:
            patch.setdefault("metadata", {})["annotations"] = stale
        if _taint_set(cur_taints) != _taint_set(want_taints):
            patch["spec"] = {"taints": want_taints or None}
        if bool((cur.get("spec") or {}).get("unschedulable")) != spec.unschedulable:
            patch.setdefault("spec", {})["unschedulable"] = True if spec.unschedulable else None
        if patch:
            self.backend.before_edit(spec.name, f"make it as defined: {sorted(_flat(patch))}")
            self._patch(spec.name, patch)
            changed = True
        resources = set(spec.capacity) | keys["resource"]
        status_patch = self.backend.status_patch(spec, cur.get("status") or {}, resources, keys["condition"])
        if status_patch:
            self.backend.before_edit(spec.name, f"make its resources as defined: {sorted(_flat(status_patch))}")
            self.core.patch_node_status(spec.name, {"status": status_patch}, _content_type=MERGE)
            changed = True
        self.backend.settle(spec, resources)
        if spec.devices and not self.publishes_devices:
            raise NotHere(f"node {spec.name} has devices: schedgate publishes them on API-only nodes and, through "
                          "its DRA driver, on kind's kubelets; these nodes have neither")
        if self.devices is not None and self.publishes_devices:
            changed |= self.devices.publish(spec)
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
