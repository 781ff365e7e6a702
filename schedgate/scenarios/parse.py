"""What every step's parser shares: the file's validator, its cluster, the pods created so far, the
templates, and the checks for node sets, pod sets, templates, timeouts and referenced files."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from schedgate.objects.claims import DeviceRequest
from schedgate.scenarios.template import Template, read_template
from schedgate.spec.cluster import ClusterDefinition, NodeSpec
from schedgate.spec.manifest import check_manifest
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.shipped import resolve_user_path
from schedgate.spec.validate import MAX_SECONDS, Validator

T = TypeVar("T")
DEFAULT_TIMEOUT = 30.0
MAX_PODS = 10_000        # pods one scenario creates


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
    custom_kinds: dict[tuple[str, str], Any] = field(default_factory=dict)  # served by CRDs applied: spec.crds
    group_members: dict[str, list[str]] = field(default_factory=dict)  # PodGroup -> the pods that name it
    group_devices: dict[str, tuple[DeviceRequest, ...]] = field(default_factory=dict)  # PodGroup -> its claim's

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
        if template.get("pod") is not None:
            check_manifest(self.v, template.builder("pod").obj(), f"{where}.pod")

    def join_group(self, template: Template, names: list[str], where: str) -> Template:
        """Record the pods step ``where`` creates as members of their ``podGroup``, which an earlier step made;
        the template, its members using the group's claim if the group has devices."""
        group = template.get("podGroup")
        if group is None:
            return template
        if ("PodGroup", group) not in self.applied:
            self.v.fail(f"{where}.podGroup", f"no earlier createPodGroup (or apply) step made PodGroup {group!r}")
        self.group_members.setdefault(group, []).extend(names)
        devices = self.group_devices.get(group)
        return template.with_value("podGroup", (group, devices)) if devices else template

    def template(self, raw: Any, where: str) -> Template:
        """The pod fields of a template or a ``createPods`` step (scenarios.template declares them)."""
        return read_template(self, raw, where)
