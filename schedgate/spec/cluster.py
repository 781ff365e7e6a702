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

Loading validates every field and reports the first problem as
``FILE: FIELD: PROBLEM`` (see :class:`schedgate.errors.DefinitionError`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgate.spec.validate import LABEL_VALUE, Validator, kind_of
from schedgate.spec.yamlfile import read_yaml

API_VERSION = "schedgate.io/v1alpha1"
GPU = "nvidia.com/gpu"

_REQUIRED_CAPACITY = ("cpu", "memory", "pods")
MAX_NODES = 1000


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def to_api(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class NodeSpec:
    """One node as the definition wants it: the state a test starts from."""

    name: str
    pool: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]

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

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class ClusterDefinition:
    name: str
    pools: tuple[Pool, ...]
    source: str = field(default="<memory>", compare=False)

    def nodes(self) -> list[NodeSpec]:
        return [
            NodeSpec(
                name=n,
                pool=p.name,
                labels={"kubernetes.io/hostname": n, **p.labels},
                taints=p.taints,
                capacity=p.capacity,
                allocatable=p.allocatable,
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
    doc, _ = read_yaml(path, "cluster definition")
    return parse_definition(doc, source=str(path))


def parse_definition(doc: Any, source: str = "<memory>") -> ClusterDefinition:
    v = Validator(source)
    top = v.mapping(doc, "", required=("apiVersion", "kind", "name", "pools"),
                    allowed=("apiVersion", "kind", "name", "pools"))
    if top["apiVersion"] != API_VERSION:
        v.fail("apiVersion", f"must be {API_VERSION}, got {top['apiVersion']!r}")
    if top["kind"] != "Cluster":
        v.fail("kind", f"must be Cluster, got {top['kind']!r}")
    name = v.dns_label(top["name"], "name")
    raw_pools = top["pools"]
    if not isinstance(raw_pools, list) or not raw_pools:
        v.fail("pools", "must be a non-empty list of node pools")
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
    if total > MAX_NODES:
        v.fail("pools", f"{total} nodes in all; at most {MAX_NODES}")
    counts = Counter(n for p in pools for n in p.node_names())
    dupes = sorted(n for n, c in counts.items() if c > 1)
    if dupes:
        v.fail("pools", f"node name {dupes[0]!r} comes out of two pools; rename one pool")
    return ClusterDefinition(name=name, pools=tuple(pools), source=source)




def _pool(v: Validator, raw: Any, where: str) -> Pool:
    m = v.mapping(raw, where, required=("name", "count", "capacity"),
                  allowed=("name", "count", "labels", "taints", "capacity", "allocatable"))
    name = v.dns_label(m["name"], f"{where}.name")
    count = m["count"]
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_NODES:
        v.fail(f"{where}.count", f"must be a whole number from 1 to {MAX_NODES}, got {str(count)[:40]}")
    labels = v.labels(m.get("labels") or {}, f"{where}.labels")
    taints = _taints(v, m.get("taints") or [], f"{where}.taints")
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
    return Pool(name=name, count=count, labels=labels, taints=taints, capacity=capacity, allocatable=allocatable)


def _taints(v: Validator, raw: Any, where: str) -> tuple[Taint, ...]:
    if not isinstance(raw, list):
        v.fail(where, f"must be a list, got {kind_of(raw)}")
    out = []
    for i, t in enumerate(raw):
        tw = f"{where}[{i}]"
        m = v.mapping(t, tw, required=("key", "effect"), allowed=("key", "value", "effect"))
        v.label_key(str(m["key"]), f"{tw}.key")
        effect = v.taint_effect(m["effect"], f"{tw}.effect")
        value = m.get("value")
        value = "" if value is None else str(value)
        if value and not LABEL_VALUE.match(value):
            v.fail(f"{tw}.value", f"invalid taint value {value!r}")
        out.append(Taint(key=str(m["key"]), effect=effect, value=value))
    return tuple(out)
