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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgate.errors import DefinitionError
from schedgate.yamlfile import read_yaml

API_VERSION = "schedgate.io/v1alpha1"
GPU = "nvidia.com/gpu"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|M|G|T|P|e[0-9]+)?$")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_REQUIRED_CAPACITY = ("cpu", "memory", "pods")
_MAX_NODES = 1000


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
        pool = v.pool(raw, f"pools[{i}]")
        if pool.name in seen:
            v.fail(f"pools[{i}].name", f"pool {pool.name!r} is defined twice")
        seen.add(pool.name)
        total += pool.count
        pools.append(pool)
    if total > _MAX_NODES:
        v.fail("pools", f"{total} nodes in all; at most {_MAX_NODES}")
    names = [n for p in pools for n in p.node_names()]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        v.fail("pools", f"node name {dupes[0]!r} comes out of two pools; rename one pool")
    return ClusterDefinition(name=name, pools=tuple(pools), source=source)


class Validator:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> None:
        raise DefinitionError(self.source, where, problem)

    def mapping(self, value: Any, where: str, required: tuple[str, ...] = (),
                allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where or "document", f"must be a mapping, got {kind_of(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(where or "document", f"key {key!r} must be a string")
            if allowed is not None and key not in allowed:
                self.fail(join(where, key), f"unknown field (allowed: {', '.join(allowed)})")
        for key in required:
            if key not in value or value[key] is None:
                self.fail(join(where, key), "required field is missing")
        out: dict[str, Any] = value
        return out

    def dns_label(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not _DNS_LABEL.match(value):
            self.fail(where, f"must be a DNS label (lowercase letters, digits, '-'), got {value!r}")
        return str(value)

    def pool(self, raw: Any, where: str) -> Pool:
        m = self.mapping(raw, where, required=("name", "count", "capacity"),
                         allowed=("name", "count", "labels", "taints", "capacity", "allocatable"))
        name = self.dns_label(m["name"], f"{where}.name")
        count = m["count"]
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= _MAX_NODES:
            self.fail(f"{where}.count", f"must be a whole number from 1 to {_MAX_NODES}, got {str(count)[:40]}")
        labels = self.labels(m.get("labels") or {}, f"{where}.labels")
        taints = self.taints(m.get("taints") or [], f"{where}.taints")
        capacity = self.resources(m["capacity"], f"{where}.capacity")
        for r in _REQUIRED_CAPACITY:
            if r not in capacity:
                self.fail(f"{where}.capacity.{r}", "required field is missing")
        allocatable = dict(capacity)
        if m.get("allocatable") is not None:
            allocatable.update(self.resources(m["allocatable"], f"{where}.allocatable"))
            for r in allocatable:
                if r not in capacity:
                    self.fail(f"{where}.allocatable.{r}", "has no matching capacity")
        return Pool(name=name, count=count, labels=labels, taints=taints,
                    capacity=capacity, allocatable=allocatable)

    def labels(self, raw: Any, where: str) -> dict[str, str]:
        m = self.mapping(raw, where)
        out: dict[str, str] = {}
        for k, val in m.items():
            self.label_key(k, f"{where}.{k}")
            if isinstance(val, bool) or val is None:
                self.fail(f"{where}.{k}", f"label values are strings; quote it: \"{str(val).lower()}\"")
            val = str(val)
            if len(val) > 63 or not _LABEL_VALUE.match(val):
                self.fail(f"{where}.{k}", f"invalid label value {val!r}")
            out[k] = val
        return out

    def label_key(self, key: str, where: str) -> None:
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
            self.fail(where, f"invalid key prefix {prefix!r}")
        if not name or len(name) > 63 or not _LABEL_NAME.match(name):
            self.fail(where, f"invalid key name {name!r}")

    def taints(self, raw: Any, where: str) -> tuple[Taint, ...]:
        if not isinstance(raw, list):
            self.fail(where, f"must be a list, got {kind_of(raw)}")
        out = []
        for i, t in enumerate(raw):
            tw = f"{where}[{i}]"
            m = self.mapping(t, tw, required=("key", "effect"), allowed=("key", "value", "effect"))
            self.label_key(str(m["key"]), f"{tw}.key")
            if m["effect"] not in TAINT_EFFECTS:
                self.fail(f"{tw}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, got {m['effect']!r}")
            value = m.get("value")
            value = "" if value is None else str(value)
            if value and not _LABEL_VALUE.match(value):
                self.fail(f"{tw}.value", f"invalid taint value {value!r}")
            out.append(Taint(key=str(m["key"]), effect=m["effect"], value=value))
        return tuple(out)

    def resources(self, raw: Any, where: str) -> dict[str, str]:
        m = self.mapping(raw, where)
        out: dict[str, str] = {}
        for k, val in m.items():
            rw = f"{where}.{k}"
            if k not in ("cpu", "memory", "pods", "ephemeral-storage") and "/" not in k:
                self.fail(rw, "unknown resource; extended resources need a domain, e.g. nvidia.com/gpu")
            if isinstance(val, bool) or val is None:
                self.fail(rw, f"must be a quantity, got {val!r}")
            if isinstance(val, (int, float)) and val < 0:
                self.fail(rw, f"must be >= 0, got {val}")
            text = str(val)
            if not _QUANTITY.match(text):
                self.fail(rw, f"must be a non-negative quantity like 8, 500m or 64Gi, got {text!r}")
            if (k == "pods" or "/" in k) and not text.isdigit():
                self.fail(rw, f"must be a whole number >= 0, got {text!r}")
            out[k] = text
        return out


def join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def kind_of(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__
