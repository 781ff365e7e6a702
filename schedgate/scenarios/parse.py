"""What every step's parser shares: the file's validator, its cluster, the pods created so far, the
templates, and the checks for node sets, pod sets, templates, timeouts and referenced files."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from schedgate.objects.builders import PodBuilder, make_pod
from schedgate.objects.claims import DeviceRequest
from schedgate.spec.cluster import ClusterDefinition, NodeSpec
from schedgate.spec.manifest import check_manifest, merged, pod_fragment
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.shipped import resolve_user_path
from schedgate.spec.validate import MAX_SECONDS, Validator, kind_of

T = TypeVar("T")
DEFAULT_TIMEOUT = 30.0
MAX_PODS = 10_000        # pods one scenario creates


@dataclass(frozen=True)
class Template:
    """A validated pod template: the shorthand fields of a scenario file, as a builder makes them."""

    gpus: int | None = None
    requests: tuple[tuple[str, str], ...] = ()
    scheduler: str | None = None
    require_labels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    forbid_labels: tuple[str, ...] = ()
    tolerations: tuple[tuple[str, str, str], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    node: str | None = None
    priority_class: str | None = None
    pod: dict[str, Any] | None = None  # a Pod manifest fragment, merged over the rest
    devices: tuple[DeviceRequest, ...] = ()  # through a DRA claim of the pod's own

    def merged(self, other: Template) -> Template:
        """``other``'s fields over this one's (a step's own fields over its template's)."""
        changes = {k: v for k, v in other.__dict__.items() if v not in (None, ())}
        if other.requests:
            changes["requests"] = tuple({**dict(self.requests), **dict(other.requests)}.items())
        if other.pod and self.pod:
            changes["pod"] = merged(self.pod, other.pod)
        return replace(self, **changes)

    def builder(self, name: str) -> PodBuilder:
        b = make_pod(name).no_requests()  # a file's pod asks for what it says, nothing hidden
        if self.gpus is not None:
            b = b.gpus(self.gpus)
        for r, q in self.requests:
            b = b.request(r, q)
        if self.scheduler:
            b = b.scheduler(self.scheduler)
        for key, values in self.require_labels:
            b = b.require_label(key, *values)
        for key in self.forbid_labels:
            b = b.forbid_label(key)
        for key, value, effect in self.tolerations:
            b = b.tolerate(key, value, effect)
        if self.devices:
            b = b.devices(*self.devices)
        if self.pod:
            b = b.manifest(self.pod)
        for k, v in self.labels:
            b = b.label(k, v)
        for k, v in self.annotations:
            b = b.annotate(k, v)
        if self.node:
            b = b.on_node(self.node)
        if self.priority_class:
            b = b.priority(self.priority_class)
        return b


TEMPLATE_FIELDS = ("gpus", "cpu", "memory", "requests", "scheduler", "requireLabels", "forbidLabels",
                   "tolerations", "labels", "annotations", "node", "priorityClass", "pod", "devices")


@dataclass
class Parser:
    """The state of one scenario file's parse, in step order."""

    path: Path
    v: Validator
    definition: ClusterDefinition
    load_config: Callable[[Path], SchedulerConfig]
    created: list[str] = field(default_factory=list)
    templates: dict[str, Template] = field(default_factory=dict)
    _created: set[str] = field(default_factory=set)  # the same names, for look-ups
    added: dict[str, NodeSpec] = field(default_factory=dict)  # nodes addNodes steps create, in order
    applied: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> apiVersion, by apply

    def referenced(self, value: str) -> Path:
        """A file named relative to the scenario's folder, else to schedgate's shipped files."""
        return resolve_user_path(value, self.path.parent)

    def timeout(self, m: dict[str, Any], w: str) -> float:
        return self.v.number(m.get("timeout", DEFAULT_TIMEOUT), f"{w}.timeout", minimum=0.1, maximum=MAX_SECONDS)

    @cached_property
    def defined_nodes(self) -> dict[str, None]:
        """Every node's name in definition order, made once: a file may name nodes thousands of times."""
        return dict.fromkeys(n.name for n in self.definition.nodes())

    @property
    def node_names(self) -> dict[str, None]:
        """The definition's nodes, then those earlier ``addNodes`` steps create."""
        return {**self.defined_nodes, **dict.fromkeys(self.added)} if self.added else self.defined_nodes

    @cached_property
    def pools(self) -> dict[str, list[str]]:
        return {p.name: p.node_names() for p in self.definition.pools}

    def node_set(self, raw: Any, where: str) -> list[str]:
        """Node and pool names, expanded to node names in definition order."""
        out: dict[str, None] = {}
        for i, n in enumerate(dict.fromkeys(self.v.strings(raw, where))):
            if n in self.pools:
                out.update(dict.fromkeys(self.pools[n]))
            elif n in self.node_names:
                out[n] = None
            else:
                self.v.fail(f"{where}[{i}]" if isinstance(raw, list) else where,
                            f"unknown node or pool {n!r} in cluster {self.definition.name!r} "
                            f"(pools: {', '.join(self.pools)})")
        return list(out)

    def pod_set(self, raw: Any, where: str) -> list[str]:
        """Pod names or globs (``infer-*``), each matching a pod an earlier step created."""
        out: dict[str, None] = {}
        for i, pattern in enumerate(dict.fromkeys(self.v.strings(raw, where))):
            if pattern in self._created:  # a pod's own name (names are DNS labels: no glob characters)
                hits = [pattern]
            else:
                match = re.compile(fnmatch.translate(pattern)).match  # as fnmatchcase, compiled once
                hits = [p for p in self.created if match(p)]
            if not hits:
                self.v.fail(f"{where}[{i}]" if isinstance(raw, list) else where,
                            f"no pod created by an earlier step matches {pattern!r}")
            out.update(dict.fromkeys(hits))
        return list(out)

    def create(self, names: list[str], w: str) -> None:
        """Record the pods step ``w`` creates; too many pods, or a name used twice, fails here."""
        if len(self.created) + len(names) > MAX_PODS:
            self.v.fail(f"{w}.count", f"a scenario creates at most {MAX_PODS} pods; this step would make it "
                                      f"{len(self.created) + len(names)}")
        for n in names:
            if n in self._created:
                self.v.fail(f"{w}.name", f"pod {n!r} is already created by an earlier step")
            if len(n) > 63:
                self.v.fail(f"{w}.name", f"pod name {n!r} is longer than 63 characters")
        self.created += names
        self._created.update(names)

    def config(self, name: str) -> SchedulerConfig:
        return self.load_config(self.referenced(name))

    def check_pod(self, template: Template, where: str) -> None:
        """The pod ``template`` makes must be one the pinned API accepts (a ``pod:`` fragment can be wrong)."""
        if template.pod is not None:
            check_manifest(self.v, template.builder("pod").obj(), f"{where}.pod")

    def template(self, raw: Any, where: str) -> Template:
        """The shorthand pod fields of a template or a ``createPods`` step."""
        v = self.v
        m = {k: x for k, x in v.mapping(raw, where).items() if k in TEMPLATE_FIELDS}
        requests: dict[str, str] = {}
        for r in ("cpu", "memory"):
            if r in m:
                requests.update(v.resources({r: m[r]}, where))
        if "requests" in m:
            requests.update(v.resources(m["requests"], f"{where}.requests"))
        require: list[tuple[str, tuple[str, ...]]] = []
        for key, vals in (v.mapping(m["requireLabels"], f"{where}.requireLabels") if "requireLabels" in m
                          else {}).items():
            w = f"{where}.requireLabels.{key}"
            v.label_key(key, w)
            values = vals if isinstance(vals, list) else [v.labels({key: vals}, f"{where}.requireLabels")[key]]
            require.append((key, tuple(v.strings(values, w))))
        forbid = v.strings(m["forbidLabels"], f"{where}.forbidLabels") if "forbidLabels" in m else []
        for i, key in enumerate(forbid):
            v.label_key(key, f"{where}.forbidLabels[{i}]")
        node = m.get("node")
        if "node" in m and (not isinstance(node, str) or node not in self.node_names):
            v.fail(f"{where}.node", f"must be the name of one node in cluster {self.definition.name!r}, got {node!r}")
        return Template(
            gpus=v.whole(m["gpus"], f"{where}.gpus") if "gpus" in m else None,
            requests=tuple(requests.items()),
            scheduler=v.string(m["scheduler"], f"{where}.scheduler") if "scheduler" in m else None,
            require_labels=tuple(require), forbid_labels=tuple(forbid),
            tolerations=self._tolerations(m["tolerations"], f"{where}.tolerations") if "tolerations" in m else (),
            labels=tuple(v.labels(m["labels"], f"{where}.labels").items()) if "labels" in m else (),
            annotations=tuple((a, str(x)) for a, x in v.mapping(m["annotations"], f"{where}.annotations").items())
            if "annotations" in m else (),
            node=node if "node" in m else None,
            priority_class=v.dns_label(m["priorityClass"], f"{where}.priorityClass") if "priorityClass" in m else None,
            pod=pod_fragment(v, m["pod"], f"{where}.pod") if "pod" in m else None,
            devices=self._devices(m["devices"], f"{where}.devices") if "devices" in m else ())

    def _devices(self, raw: Any, w: str) -> tuple[DeviceRequest, ...]:
        """``devices``: one request or a list, each ``class`` (a DeviceClass of the cluster definition),
        ``count``, ``sameAttribute`` (a name or list: a matchAttribute constraint) and ``selector`` (CEL)."""
        v = self.v
        classes = [c.name for c in self.definition.device_classes]
        drivers = {ds.driver for n in [*self.definition.nodes(), *self.added.values()] for ds in n.devices}
        out = []
        for i, item in enumerate(raw if isinstance(raw, list) else [raw]):
            rw = f"{w}[{i}]" if isinstance(raw, list) else w
            m = v.mapping(item, rw, required=("class",), allowed=("class", "count", "sameAttribute", "selector"))
            cls = v.string(m["class"], f"{rw}.class")
            if cls not in classes:
                v.fail(f"{rw}.class", f"unknown device class {cls!r}: cluster {self.definition.name!r} defines "
                                      + (", ".join(classes) if classes else "no deviceClasses"))
            same = []
            for a in v.strings(m["sameAttribute"], f"{rw}.sameAttribute") if "sameAttribute" in m else []:
                if "/" not in a:
                    if len(drivers) != 1:
                        v.fail(f"{rw}.sameAttribute", f"{a!r} needs its driver's domain ('driver/{a}'): "
                                                      f"the cluster's devices come from {len(drivers)} drivers")
                    a = f"{next(iter(drivers))}/{a}"
                same.append(a)
            selectors = v.strings(m["selector"], f"{rw}.selector") if "selector" in m else []
            out.append(DeviceRequest(cls, v.whole(m.get("count", 1), f"{rw}.count", minimum=1, maximum=128),
                                     tuple(same), tuple(selectors)))
        return tuple(out)

    def _tolerations(self, raw: Any, w: str) -> tuple[tuple[str, str, str], ...]:
        v = self.v
        if not isinstance(raw, list):
            v.fail(w, f"must be a list, got {kind_of(raw)}")
        out = []
        for i, t in enumerate(raw):
            tw = f"{w}[{i}]"
            tm = v.mapping(t, tw, required=("key",), allowed=("key", "value", "effect"))
            v.label_key(str(tm["key"]), f"{tw}.key")
            effect = v.taint_effect(tm["effect"], f"{tw}.effect") if tm.get("effect") is not None else "NoSchedule"
            out.append((str(tm["key"]), str(tm.get("value") or ""), effect))
        return tuple(out)
