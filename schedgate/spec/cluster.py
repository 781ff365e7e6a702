"""Cluster definitions: the node topology a scenario runs on, as data.

A definition lives in ``clusters/*.yaml``::

    apiVersion: schedgate.io/v1alpha1
    kind: Cluster
    name: inference
    pools:
      - name: gpu-net                 # nodes are named gpu-net-1, gpu-net-2, ...
        count: 4
        labels: {infra.example.com/high-speed-network: "true"}
        taints: [{key: dedicated, value: training, effect: NoSchedule}]
        capacity: {cpu: "64", memory: 512Gi, pods: 110, nvidia.com/gpu: 8}
    nodes:                            # nodes by exact name, beside (or instead of) pools
      - name: node-a.rack-1
        labels: {topology.kubernetes.io/zone: a}
        capacity: {cpu: "4", memory: 8Gi, pods: 110, hugepages-2Mi: 1Gi, example.com/foo: 2}
        unschedulable: true
    featureGates: {GenericWorkload: true}   # for every component (spec.gates)
    runtimeConfig: {scheduling.k8s.io/v1beta1: true}
    nodeAgent: {kind: kwok}           # pods that live on the local provider (spec.agent)

Loading validates every field and reports the first problem as
``FILE: FIELD: PROBLEM`` (see :class:`schedgate.errors.DefinitionError`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from schedgate.spec.agent import AGENT, NodeAgent, parse_agent
from schedgate.spec.devices import DeviceClassDef, DeviceSet, parse_device_classes, parse_device_sets
from schedgate.spec.gates import Gates, parse_gates
from schedgate.spec.jsontypes import BOOL, DNS, NODE_OR_MANIFEST, RESOURCES_DOC, STR, Schema, listing, ref, whole
from schedgate.spec.manifest import check_manifest
from schedgate.spec.node_fields import CONDITION_STATUSES as CONDITION_STATUSES
from schedgate.spec.node_fields import Condition as Condition
from schedgate.spec.node_fields import Taint as Taint
from schedgate.spec.node_fields import parse_conditions as parse_conditions
from schedgate.spec.node_fields import parse_taints
from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import Validator, kind_of, short
from schedgate.spec.yamlfile import read_yaml

API_VERSION = "schedgate.io/v1alpha1"
GPU = "nvidia.com/gpu"

_REQUIRED_CAPACITY = ("cpu", "memory", "pods")
MAX_NODES = 10_000  # make bench-fleet runs a live fleet of this many (bench/fleet_live.py)
# A node's name: a DNS subdomain, what the API accepts.
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
HOSTNAME = "kubernetes.io/hostname"

_CAPACITY: Schema = {"type": "object", "additionalProperties": ref("quantity"), "description": RESOURCES_DOC,
                     "required": list(_REQUIRED_CAPACITY)}
_NODE_KEYS = (Key("labels", "the node's labels (kubernetes.io/hostname is added)", ref("labels")),
              Key("taints", "the node's taints", listing(ref("taint"))),
              Key("capacity", "what the node reports: cpu, memory and pods at least", _CAPACITY, required=True),
              Key("allocatable", "resource -> quantity; default: the capacity", ref("resources")))
_DEVICES = Key("devices", "DRA devices, published as ResourceSlices of the node", listing(ref("deviceSet"), 1))
POOL = Shape("pool", "nodes alike, named NAME-1 .. NAME-COUNT", (
    Key("name", "its nodes are NAME-1 .. NAME-COUNT", DNS, required=True),
    Key("count", "how many nodes", whole(1, MAX_NODES), required=True),
    *_NODE_KEYS, _DEVICES,
))
NODE = Shape("node", "one node by exact name", (
    Key("name", "a DNS subdomain", STR, required=True),
    *_NODE_KEYS,
    Key("unschedulable", "cordoned (spec.unschedulable)", BOOL),
    Key("conditions", "status conditions besides Ready=True", listing(ref("condition"), 1)),
    _DEVICES,
))
CLUSTER = Shape("cluster", (__doc__ or "").splitlines()[0], (
    Key("apiVersion", "", {"const": API_VERSION}, required=True),
    Key("kind", "", {"const": "Cluster"}, required=True),
    Key("name", "the cluster's name", DNS, required=True),
    Key("pools", "node pools (a pool or `nodes` at least)", listing(ref("pool"))),
    Key("nodes", "nodes by exact name, or Node manifests, after the pools' nodes", listing(NODE_OR_MANIFEST)),
    Key("deviceClasses", "DeviceClasses the cluster serves", listing({"anyOf": [
        {**STR, "description": "a file of one DeviceClass manifest"},
        {"type": "object", "description": "a DeviceClass manifest (resource.k8s.io/v1)"}]}, 1)),
    Key("featureGates", "feature gate -> on, for every component (checked against the pinned kube-apiserver's own "
                        "list)", {"type": "object", "propertyNames": {"pattern": "^[A-Z][A-Za-z0-9]*$"},
                                  "additionalProperties": {"type": "boolean"}}),
    Key("runtimeConfig", "API group/version -> served, for the API server's --runtime-config",
        {"type": "object", "additionalProperties": {"type": "boolean"}}),
    Key("nodeAgent", "", AGENT.schema()),  # its meaning is the shape's
), rule={"anyOf": [{"required": [k], "properties": {k: {"minItems": 1}}} for k in ("pools", "nodes")]})


@dataclass(frozen=True)
class NodeSpec:
    """One node as the definition wants it: the state a test starts from."""

    name: str
    pool: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    unschedulable: bool = False
    # Status conditions besides Ready=True (which every node has unless it names its own Ready).
    conditions: tuple[Condition, ...] = ()
    devices: tuple[DeviceSet, ...] = ()  # published as ResourceSlices (:mod:`schedgate.spec.devices`)
    # Annotations a node is made with (a node a test adds; definitions give none).
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return int(self.allocatable.get(GPU, "0"))


@dataclass(frozen=True)
class Pool:
    name: str
    count: int
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    devices: tuple[DeviceSet, ...] = ()

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class ClusterDefinition:
    name: str
    pools: tuple[Pool, ...]
    source: str = field(default="<memory>", compare=False)
    named: tuple[NodeSpec, ...] = ()  # the ``nodes:`` list: nodes by exact name, after the pools' nodes
    device_classes: tuple[DeviceClassDef, ...] = ()
    gates: Gates = field(default_factory=Gates)  # featureGates and runtimeConfig
    agent: NodeAgent | None = None  # nodeAgent: what makes the local provider's pods live (None: nothing)

    def nodes(self) -> list[NodeSpec]:
        return [*self._pool_nodes(), *self.named]

    def _pool_nodes(self) -> list[NodeSpec]:
        return [
            NodeSpec(
                name=n,
                pool=p.name,
                labels={HOSTNAME: n, **p.labels},
                taints=p.taints,
                capacity=p.capacity,
                allocatable=p.allocatable,
                devices=p.devices,
            )
            for p in self.pools
            for n in p.node_names()
        ]

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes():
            if n.name == name:
                return n
        raise KeyError(f"cluster {self.name!r} ({self.source}) defines no node {name!r}")

    def pool(self, name: str) -> Pool:
        for p in self.pools:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.pools)
        raise KeyError(f"cluster {self.name!r} ({self.source}) has no pool {name!r} (pools: {known})")


def load_definition(path: str | Path) -> ClusterDefinition:
    """Read and validate a cluster definition file."""
    doc, lines = read_yaml(path, "cluster definition", kinds=("Cluster",))
    return parse_definition(doc, source=str(path), lines=lines)


def parse_definition(doc: Any, source: str = "<memory>", lines: dict[str, int] | None = None) -> ClusterDefinition:
    v = Validator(source, lines)
    top = CLUSTER.read(v, doc, "")
    if top["apiVersion"] != API_VERSION:
        v.fail("apiVersion", f"must be {API_VERSION}, got {top['apiVersion']!r}")
    if top["kind"] != "Cluster":
        v.fail("kind", f"must be Cluster, got {top['kind']!r}")
    name = v.dns_label(top["name"], "name")
    if not top.get("pools") and not top.get("nodes"):
        v.fail("pools", "a cluster needs nodes: a non-empty list of 'pools', of 'nodes' by name, or both")
    raw_pools = top.get("pools") or []
    if not isinstance(raw_pools, list):
        v.fail("pools", f"must be a list of node pools, got {kind_of(raw_pools)}")
    pools: list[Pool] = []
    seen: set[str] = set()
    total = 0
    for i, raw in enumerate(raw_pools):
        pool = _pool(v, raw, f"pools[{i}]")
        if pool.name in seen:
            v.fail(f"pools[{i}].name", f"pool {pool.name!r} is defined twice")
        seen.add(pool.name)
        total += pool.count
        pools.append(pool)
    raw_nodes = top.get("nodes") or []
    if not isinstance(raw_nodes, list):
        v.fail("nodes", f"must be a list of nodes, got {kind_of(raw_nodes)}")
    if total + len(raw_nodes) > MAX_NODES:
        v.fail("nodes" if raw_nodes else "pools", f"{total + len(raw_nodes)} nodes in all; at most {MAX_NODES}")
    counts = Counter(n for p in pools for n in p.node_names())
    dupes = sorted(n for n, c in counts.items() if c > 1)
    if dupes:
        v.fail("pools", f"node name {dupes[0]!r} comes out of two pools; rename one pool")
    named: list[NodeSpec] = []
    for i, raw in enumerate(raw_nodes):
        node = parse_node_or_manifest(v, raw, f"nodes[{i}]")
        if node.name in counts or any(n.name == node.name for n in named):
            v.fail(f"nodes[{i}].name", f"node {node.name!r} is defined twice")
        if node.name in seen:
            v.fail(f"nodes[{i}].name", f"node {node.name!r} has the name of a pool; node and pool names "
                                       "share one namespace in scenario files")
        named.append(node)
    classes = (parse_device_classes(v, top["deviceClasses"], "deviceClasses", Path(source).parent)
               if "deviceClasses" in top else ())
    return ClusterDefinition(name=name, pools=tuple(pools), source=source, named=tuple(named),
                             device_classes=classes, gates=parse_gates(v, top),
                             agent=parse_agent(v, top["nodeAgent"], "nodeAgent") if "nodeAgent" in top else None)


def parse_node(v: Validator, raw: Any, where: str) -> NodeSpec:
    """One node by exact name (a cluster definition's ``nodes:`` entry, or an ``addNodes`` step's)."""
    m = NODE.read(v, raw, where)
    name = m["name"]
    if not isinstance(name, str) or not _NODE_NAME.match(name):
        v.fail(f"{where}.name", "must be a node name (lowercase letters, digits, '-' and '.', at most 253), "
                                f"got {short(name)}")
    labels = v.labels(m.get("labels") or {}, f"{where}.labels")
    if HOSTNAME not in labels and len(name) <= 63:  # as a kubelet labels its node (a label value is <= 63)
        labels = {HOSTNAME: name, **labels}
    capacity, allocatable = _resources(v, m, where)
    unschedulable = v.flag(m["unschedulable"], f"{where}.unschedulable") if "unschedulable" in m else False
    conditions = parse_conditions(v, m["conditions"], f"{where}.conditions") if "conditions" in m else ()
    devices = parse_device_sets(v, m["devices"], f"{where}.devices") if "devices" in m else ()
    return NodeSpec(name=name, pool=name, labels=labels, conditions=conditions, devices=devices,
                    taints=parse_taints(v, m.get("taints") or [], f"{where}.taints"), capacity=capacity,
                    allocatable=allocatable, unschedulable=unschedulable)


# Where a Node manifest keeps each field of a ``nodes:`` entry.
_IN_MANIFEST = {"name": "metadata.name", "labels": "metadata.labels", "taints": "spec.taints",
                "unschedulable": "spec.unschedulable", "capacity": "status.capacity",
                "allocatable": "status.allocatable", "conditions": "status.conditions"}


class _InManifest(Validator):
    """Names a problem of a converted Node manifest by the manifest's own field (``status.capacity.cpu``)."""

    def __init__(self, v: Validator, where: str) -> None:
        super().__init__(v.source, v.lines)
        self.where = where

    def fail(self, where: str, problem: str) -> NoReturn:
        rest = where[len(self.where) + 1:] if where.startswith(self.where + ".") else ""
        head, dot, tail = rest.partition(".")
        if head in _IN_MANIFEST:
            where = f"{self.where}.{_IN_MANIFEST[head]}{dot}{tail}"
        super().fail(where, problem)


def parse_node_or_manifest(v: Validator, raw: Any, where: str) -> NodeSpec:
    """A ``nodes:`` entry: schedgate's fields, or a Node manifest (``kubectl get node -o yaml``), checked
    against the pinned API's schema; what scheduling reads of it is kept (timestamps and the rest dropped)."""
    if not (isinstance(raw, dict) and raw.get("kind") == "Node"):
        return parse_node(v, raw, where)
    check_manifest(v, raw, where)
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    fields: dict[str, Any] = {"name": meta.get("name"), "capacity": status.get("capacity")}
    if meta.get("labels"):
        fields["labels"] = meta["labels"]
    if spec.get("taints"):
        fields["taints"] = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in spec["taints"]]
    if spec.get("unschedulable"):
        fields["unschedulable"] = True
    if status.get("allocatable"):
        fields["allocatable"] = status["allocatable"]
    if status.get("conditions"):
        fields["conditions"] = [{k: c[k] for k in ("type", "status", "reason", "message") if k in c}
                                for c in status["conditions"]]
    if fields["capacity"] is None:
        v.fail(f"{where}.status.capacity", "required field is missing (cpu, memory and pods at least)")
    return parse_node(_InManifest(v, where), fields, where)


def _resources(v: Validator, m: dict[str, Any], where: str) -> tuple[dict[str, str], dict[str, str]]:
    """``capacity`` (cpu, memory and pods required) and ``allocatable`` (each a capacity's resource)."""
    capacity = v.resources(m["capacity"], f"{where}.capacity")
    for r in _REQUIRED_CAPACITY:
        if r not in capacity:
            v.fail(f"{where}.capacity.{r}", "required field is missing")
    allocatable = dict(capacity)
    if m.get("allocatable") is not None:
        allocatable.update(v.resources(m["allocatable"], f"{where}.allocatable"))
        for r in allocatable:
            if r not in capacity:
                v.fail(f"{where}.allocatable.{r}", "has no matching capacity")
    return capacity, allocatable




def _pool(v: Validator, raw: Any, where: str) -> Pool:
    m = POOL.read(v, raw, where)
    name = v.dns_label(m["name"], f"{where}.name")
    count = m["count"]
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_NODES:
        v.fail(f"{where}.count", f"must be a whole number from 1 to {MAX_NODES}, got {str(count)[:40]}")
    labels = v.labels(m.get("labels") or {}, f"{where}.labels")
    taints = parse_taints(v, m.get("taints") or [], f"{where}.taints")
    capacity, allocatable = _resources(v, m, where)
    devices = parse_device_sets(v, m["devices"], f"{where}.devices") if "devices" in m else ()
    return Pool(name=name, count=count, labels=labels, taints=taints, capacity=capacity, allocatable=allocatable,
                devices=devices)
