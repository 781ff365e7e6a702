"""Generated scenarios: Hypothesis strategies whose examples are scenario documents in the file language.

An example is a small cluster (``nodes`` with capacities, labels, taints, GPUs, cordoned or not; in a quarter of the
examples, DRA devices, with a colour each or not and sharing a counter as partitions or not), how each app spreads
(a hard topology spread constraint by host or zone that all its pods carry, or none), then pods made one step at a
time (requests, GPUs, required labels, tolerations, an app label, a required anti-affinity to an app, a required
affinity to another app, a host port, devices by a claim of its own where the example has them (two of one colour,
or any), membership of a gang of schedgate's Gang plugin where the profile enables it; some while the scheduler is
stopped, which then starts again), some followed by an edit that can only make room (a label a node did not have, a
taint taken off, a copy of a node added, an earlier pod deleted), then the outcome ``invariants`` with
``noMissedFit`` (and, in the differential mode, ``baselineAgrees``).
Nothing is ever tightened: a label is never changed or removed, a taint never added, a node never cordoned or
deleted after the pods come. So every bound pod still satisfies, at the end, what it satisfied when it was bound,
and a pod that fits a node at the end fitted it since the last edit: the scheduler owes it a binding (each edit is
an event its queue must act on). Spread, gangs and affinity add their own rules: no pod of a spreading app or of a
gang or of an app some pod requires is deleted (a gang bound whole would be left in part, an affinity broken), and
no domain is added (no node added under a spread by host, no zone label under a spread by zone), so the end state
stands for every bind time (see the oracle's ``uncounted``). Every value is drawn from short lists, which Hypothesis
shrinks towards their first entry: the smallest node, the smallest pod, no labels, no taints, no edit, no spread.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from schedgate.fuzz.bounds import Bounds
from schedgate.objects.groups import GROUP_LABEL, MIN_LABEL, PLUGIN

GPU = "nvidia.com/gpu"
ZONE, NET, APP = "fuzz.schedgate.io/zone", "fuzz.schedgate.io/net", "fuzz.schedgate.io/app"
HOSTNAME = "kubernetes.io/hostname"
APPS = ("", "a", "b")  # a pod's app label, and the app its required anti-affinity keeps off its node ("": none)
PORTS = (0, 0, 0, 8080, 8081)  # a pod's host port (0: none); two pods with one on a node conflict
# (key, value) pairs a node may have and a pod may require
LABELS = ((ZONE, "a"), (ZONE, "b"), (NET, "true"))
TAINTS = ({"key": "fuzz.schedgate.io/dedicated", "value": "gpu", "effect": "NoSchedule"},
          {"key": "fuzz.schedgate.io/maintenance", "effect": "NoExecute"})
NODE_CPU, NODE_MEMORY, NODE_PODS, NODE_GPUS = ("2", "1", "4"), ("4Gi", "2Gi", "8Gi"), (110, 2), (0, 1, 2, 4)
POD_CPU, POD_MEMORY, POD_GPUS = ("500m", "100m", "1", "2", "3"), ("512Mi", "128Mi", "1Gi", "3Gi"), (0, 1, 2)
# DRA devices of schedgate's GPU driver (its shipped DeviceClass), a node's and a pod's claim's, in an example
# that has them
DRIVER, DEVICE_CLASS = "gpu.schedgate.io", "clusters/deviceclasses/gpu.schedgate.io.yaml"
NODE_DEVICES, POD_DEVICES = (0, 1, 2, 3), (0, 1, 1, 2)
# A node's devices may carry a colour each (attribute ``color``) and may share one counter (``slices``) that covers
# one fewer than their number, as partitions of one GPU do; a claim for two may ask for one colour (matchAttribute).
# A colouring of up to three devices (the first ones taken): none, one colour, or one device of the other colour
# first, in the middle or last.
COLORINGS = (None, ("red", "red", "red"), ("red", "blue", "blue"), ("blue", "red", "blue"), ("red", "red", "blue"))
EDITS = ("", "", "label", "untaint", "addNode", "deletePod")  # after a pod ("": none): each can only make room
# How the pods of an app spread (whenUnsatisfiable: DoNotSchedule): not at all, or (topology key, maxSkew). Node
# affinity is ignored in the count (nodeAffinityPolicy: Ignore), so that pods of one app requiring other labels
# count the same domains.
SPREADS = (None, None, (HOSTNAME, 1), (ZONE, 1), (HOSTNAME, 2))
# Gangs of schedgate's Gang plugin (go/pkg/gang): a pod's group ("": none), and each group's minimum.
GANG_PLUGIN, GANG_LABEL, GANG_MIN_LABEL = PLUGIN, GROUP_LABEL, MIN_LABEL
GANGS, GANG_MINS = ("", "", "g", "h"), (2, 3)
# A pod's PriorityClass ("": none, priority 0): the preemptions a higher one may make are judged by the events
# that name their victims. A pod that must never be deleted (of an app that spreads or that some pod requires, a
# gang's member, a pod with devices, whose claim a victim's would leave allocated a moment) has the highest.
PRIORITIES = ("", "", "low", "high")
PRIORITY_VALUES = {"low": 100, "high": 1000}
PRIORITY_CLASS = "fuzz-{}"
def _node() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "cpu": st.sampled_from(NODE_CPU), "memory": st.sampled_from(NODE_MEMORY),
        "pods": st.sampled_from(NODE_PODS), "gpus": st.sampled_from(NODE_GPUS),
        "labels": st.lists(st.sampled_from(LABELS), unique_by=lambda kv: kv[0], max_size=2),
        "taints": st.lists(st.sampled_from(TAINTS), unique_by=lambda t: t["key"], max_size=2),
        "unschedulable": st.sampled_from((False, False, False, True)), "devices": st.sampled_from(NODE_DEVICES),
        "colors": st.sampled_from(COLORINGS), "shared": st.booleans(),
    })


def _pod(without: frozenset[str]) -> st.SearchStrategy[dict[str, Any]]:
    def unless(feature: str, values: st.SearchStrategy[Any], none: Any) -> st.SearchStrategy[Any]:
        return st.just(none) if feature in without else values

    return st.fixed_dictionaries({
        "cpu": st.sampled_from(POD_CPU), "memory": st.sampled_from(POD_MEMORY), "gpus": st.sampled_from(POD_GPUS),
        "require": st.lists(st.sampled_from(LABELS), unique_by=lambda kv: kv[0], max_size=1),
        "tolerate": st.lists(st.sampled_from(TAINTS), unique_by=lambda t: t["key"], max_size=2),
        # made while its scheduler is stopped, which then starts again
        "restart": unless("restarts", st.sampled_from((False, False, False, True)), False),
        "app": st.sampled_from(APPS), "avoid": unless("anti-affinity", st.sampled_from(APPS), ""),
        "near": unless("affinity", st.sampled_from(APPS), ""),  # a required affinity to another app on its node
        "port": unless("host-ports", st.sampled_from(PORTS), 0), "devices": st.sampled_from(POD_DEVICES),
        "gang": unless("gangs", st.sampled_from(GANGS), ""), "same": st.booleans(),
        "priority": unless("preemption", st.sampled_from(PRIORITIES), ""),
        # then an edit: its kind, which node or earlier pod (modulo how many there are), which label
        "then": unless("edits", st.sampled_from(EDITS), ""), "at": st.integers(0, 7), "label": st.sampled_from(LABELS),
    })


# spread: app -> (topology key, maxSkew) or None; devices: whether DRA devices are drawn; gangs: group -> minimum
Shared = dict[str, Any]


def _shared(without: frozenset[str]) -> st.SearchStrategy[Shared]:
    """What holds for a whole example: how each app spreads, and whether its nodes and pods have DRA devices
    (a quarter of the examples: a cluster with devices makes every cache barrier bind its probes, and DRA's
    allocator is slower)."""
    spread = st.just({}) if "spread" in without else st.fixed_dictionaries(
        {app: st.sampled_from(SPREADS) for app in APPS if app})
    devices = st.just(False) if "devices" in without else st.sampled_from((False, False, False, True))
    gangs = st.just({}) if "gangs" in without else st.fixed_dictionaries(
        {g: st.sampled_from(GANG_MINS) for g in GANGS if g})
    return st.fixed_dictionaries({"spread": spread, "devices": devices, "gangs": gangs})


def examples(bounds: Bounds) -> st.SearchStrategy[tuple[list[dict[str, Any]], list[dict[str, Any]], Shared]]:
    """(nodes, pods, shared) as drawn: what :func:`scenario_doc` turns into a file."""
    return st.tuples(st.lists(_node(), min_size=1, max_size=bounds.max_nodes),
                     st.lists(_pod(bounds.without), min_size=1, max_size=bounds.max_pods),
                     _shared(bounds.without))


def node_entry(i: int, n: dict[str, Any], devices: bool = False) -> dict[str, Any]:
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
    if devices and (count := n.get("devices")):
        entry: dict[str, Any] = {"driver": DRIVER, "count": count, "name": "gpu"}
        if n.get("colors"):
            entry["attributes"] = {"color": list(n["colors"][:count])}
        if n.get("shared") and count > 1:
            entry.update(counters={"gpu": {"slices": str(count - 1)}}, consumes={"gpu": {"slices": "1"}})
        out["devices"] = [entry]
    return out


def pod_step(i: int, p: dict[str, Any], profile: str, shared: Shared | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f"pod-{i}", "scheduler": profile, "cpu": p["cpu"], "memory": p["memory"]}
    if p["gpus"]:
        out["gpus"] = p["gpus"]
    if (shared or {}).get("devices") and p.get("devices"):
        out["devices"] = {"class": DRIVER, "count": p["devices"]}
        if p.get("same") and p["devices"] > 1:
            out["devices"]["sameAttribute"] = f"{DRIVER}/color"  # with its domain: a cluster may have no devices
    if p["require"]:
        out["requireLabels"] = dict(p["require"])
    if p["tolerate"]:
        out["tolerations"] = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in p["tolerate"]]
    labels = {APP: p["app"]} if p.get("app") else {}
    if p.get("gang") and (least := (shared or {}).get("gangs", {}).get(p["gang"])):
        labels.update({GANG_LABEL: p["gang"], GANG_MIN_LABEL: str(least)})
    if labels:
        out["labels"] = labels
    if p.get("priority"):
        out["priorityClass"] = PRIORITY_CLASS.format(p["priority"])
    spec: dict[str, Any] = {}
    if p.get("avoid"):  # no two pods of that app on one node, this one included
        spec.setdefault("affinity", {})["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {APP: p["avoid"]}}, "topologyKey": HOSTNAME}]}
    if (near := p.get("near")) and near != p.get("app"):  # never its own app: no first-of-its-kind exception
        spec.setdefault("affinity", {})["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {APP: near}}, "topologyKey": HOSTNAME}]}
    if p.get("app") and (spread := (shared or {}).get("spread", {}).get(p["app"])):
        spec["topologySpreadConstraints"] = [{
            "maxSkew": spread[1], "topologyKey": spread[0], "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {APP: p["app"]}}, "nodeAffinityPolicy": "Ignore"}]
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


@dataclass
class _World:
    """The nodes as the edits so far left them, for drawing the next edit so that it only makes room."""

    nodes: list[dict[str, Any]]  # node entries: name, labels, taints
    spreads: dict[str, Any] = field(default_factory=dict)  # Shared's spread
    pods: int = 0  # pods made so far (pod-0 ..)
    deleted: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)  # pods of an app that spreads or of a gang: never deleted

    def spread_by(self, key: str) -> bool:
        return any(s and s[0] == key for s in self.spreads.values())

    def edit(self, p: dict[str, Any]) -> dict[str, Any] | None:
        """The step of ``p``'s ``then``, or ``None`` where it has nothing to act on (a label every node has ...)."""
        kind, at = p.get("then", ""), p.get("at", 0)
        node = self.nodes[at % len(self.nodes)] if self.nodes else None
        if kind == "label" and node is not None:
            key, value = p["label"]
            labels = node.setdefault("labels", {})
            # never a changed value (a pod bound by the old one would stop matching); never a zone where an app
            # spreads by zone (a domain more)
            if key in labels or self.spread_by(key):
                return None
            labels[key] = value
            return {"label": {"nodes": node["name"], "key": key, "value": value}}
        if kind == "untaint" and node is not None and node.get("taints"):
            taint = node["taints"].pop(0)
            return {"untaint": {"nodes": node["name"], "key": taint["key"]}}
        if kind == "addNode" and node is not None and not self.spread_by(HOSTNAME):  # a host: a domain more
            added = {**copy.deepcopy(node), "name": f"node-{len(self.nodes)}"}
            self.nodes.append(added)
            return {"addNodes": {"nodes": [{k: v for k, v in copy.deepcopy(added).items() if v}]}}
        earlier = [f"pod-{i}" for i in range(self.pods - 1) if f"pod-{i}" not in self.deleted | self.kept]
        if kind == "deletePod" and earlier:
            self.deleted.add(gone := earlier[at % len(earlier)])
            return {"deletePods": {"pods": gone}}
        return None


def scenario_doc(name: str, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], shared: Shared,
                 profile: str, scheduler: str, description: str, timeout: int = 30,
                 baseline: str | None = None) -> dict[str, Any]:
    """A scenario file's document: the cluster inline, one createPods step a pod (and its edit), then the
    invariants within ``timeout`` seconds; with ``baseline`` (in-tree, same), then the outcome
    ``baselineAgrees``."""
    entries = [node_entry(i, n, shared.get("devices", False)) for i, n in enumerate(nodes)]
    spreads = shared.get("spread") or {}
    world = _World(copy.deepcopy(entries), spreads)
    # the apps some pod requires beside it: none of their pods is deleted (a bound pod's affinity would break)
    required = {p["near"] for p in pods if p.get("near") and p["near"] != p.get("app")}
    prioritized = any(p.get("priority") for p in pods)
    steps: list[dict[str, Any]] = [{"apply": {"manifest": {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": PRIORITY_CLASS.format(c)}, "value": PRIORITY_VALUES[c]}}}
        for c in PRIORITY_VALUES if prioritized]
    for i, p in enumerate(pods):
        counted = p.get("app") and (spreads.get(p["app"]) or p["app"] in required)  # by a spread or an affinity
        kept = bool(counted or (p.get("gang") and shared.get("gangs")))
        if prioritized and (kept or (shared.get("devices") and p.get("devices"))):  # never a victim
            p = {**p, "priority": "high"}
        steps += _around(pod_step(i, p, profile, shared), p, profile)
        world.pods += 1
        if kept:
            world.kept.add(f"pod-{i}")
        here = [f"pod-{j}" for j in range(i + 1) if f"pod-{j}" not in world.deleted]
        if (edit := world.edit(p)) is not None:  # after every verdict so far: each refusal one the edit may undo
            steps += [{"wait": {"pods": here, "until": "decided"}}, edit]
    cluster: dict[str, Any] = {"apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": "fuzz"}
    if shared.get("devices"):
        cluster["deviceClasses"] = [DEVICE_CLASS]
    return {
        "apiVersion": "schedgate.io/v1alpha1", "kind": "Scenario", "name": name, "description": description,
        "scheduler": scheduler, "cluster": {**cluster, "nodes": entries},
        "steps": [*steps, {"expect": {"invariants": {"noMissedFit": True}, "timeout": timeout}},
                  *([{"expect": {"baselineAgrees": {"baseline": baseline}, "timeout": timeout}}] if baseline else [])],
    }


def size(doc: dict[str, Any]) -> tuple[int, int]:
    """How big a document is, for keeping the smallest failure: steps and nodes, then its text."""
    return len(doc["steps"]) + len(doc["cluster"]["nodes"]), len(repr(doc))
