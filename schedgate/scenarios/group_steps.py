"""Kubernetes' own gang scheduling in scenario files: ``createPodGroup``, the pod field ``podGroup``
(:mod:`schedgate.scenarios.template`) and the outcomes ``podGroupCondition`` and ``wholeGroups``.

A group is written once (its name and ``minCount``) and schedgate writes the API shape the pinned version
serves: ``scheduling.k8s.io/v1beta1`` PodGroup (1.37, feature ``GenericWorkload``; a file says
``requires: [GenericWorkload]``), with its members naming it in ``spec.schedulingGroup.podGroupName``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from schedgate.kube.watch import MATCH, Check, fail, pending, wait_for_items
from schedgate.objects.claims import DeviceRequest
from schedgate.scenarios.declare import Declared, DeclaredOutcome, arg, one_of
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.scenarios.template import DEVICES, read_devices
from schedgate.spec.jsontypes import BOOL, DNS, STR, listing, whole
from schedgate.workloads.podgroup import (
    API,
    CLAIMS,
    DISRUPTION_MODES,
    FEATURE,
    GROUP,
    TOPOLOGY,
    VERSION,
    make_claim_template,
    pod_group,
    wait_group_claim,
)

SCHEDULED = "PodGroupInitiallyScheduled"  # the condition the scheduler writes on a group it tried


def _group_name(p: Parser, raw: Any, w: str) -> str:
    name = p.v.dns_label(raw, w)
    if ("PodGroup", name) in p.applied:
        p.v.fail(w, f"PodGroup {name!r} is already made by an earlier step")
    if p.definition.gates.on(FEATURE) is not True:
        p.v.fail(w, f"a PodGroup needs the {FEATURE} feature: add 'requires: [{FEATURE}]' to the file")
    p.applied[("PodGroup", name)] = API
    return name


def _known_group(p: Parser, raw: Any, w: str) -> str:
    name = p.v.dns_label(raw, w)
    if ("PodGroup", name) not in p.applied:
        p.v.fail(w, f"no earlier createPodGroup (or apply) step made PodGroup {name!r}")
    return name


def _known_groups(p: Parser, raw: Any, w: str) -> tuple[str, ...]:
    names = p.v.strings(raw, w)
    if len(set(names)) != len(names):
        p.v.fail(w, "names a group twice")
    for i, name in enumerate(names):
        where = f"{w}[{i}]" if isinstance(raw, list) else w
        _known_group(p, name, where)
        if not p.group_members.get(name):
            p.v.fail(where, f"no earlier createPods step made a member of PodGroup {name!r} (podGroup: {name})")
    return tuple(names)


def _group_devices(p: Parser, raw: Any, w: str) -> tuple[DeviceRequest, ...]:
    if p.definition.gates.on(CLAIMS) is not True:
        p.v.fail(w, f"a group's devices need the {CLAIMS} feature: add 'requires: [{FEATURE}, {CLAIMS}]' "
                    "to the file")
    return read_devices(p, raw, w)


def _topology_key(p: Parser, raw: Any, w: str) -> str:
    key = p.v.string(raw, w)
    p.v.label_key(key, w)
    if p.definition.gates.on(TOPOLOGY) is not True:
        p.v.fail(w, f"a topology key needs the {TOPOLOGY} feature: add 'requires: [{FEATURE}, {TOPOLOGY}]' "
                    "to the file")
    if not any(key in n.labels for n in [*p.definition.nodes(), *p.added.values()]):
        p.v.fail(w, f"no node of cluster {p.definition.name!r} carries the label {key!r}")
    return key



@step("createPodGroup")
@dataclass(frozen=True)
class CreatePodGroup(Declared):
    """A PodGroup (Kubernetes' own gang): none of its members binds until ``minCount`` of them can, and
    then they bind together, inside one domain of ``topologyKey`` if given. Pods join it with the pod field
    ``podGroup``; deleted after the test."""

    name: str = arg("name", "the group's name (a DNS label); pods name it in their podGroup field", DNS,
                    _group_name)
    min_count: int = arg("minCount", "members that must be placeable together before any binds (gang "
                                     "policy; the API's field, which a patch step may change)", whole(1, 10_000),
                         lambda p, x, w: p.v.whole(x, w, minimum=1, maximum=10_000))
    topology_key: str | None = arg("topologyKey", "a node label (a rack's): every member lands inside one "
                                                  "of its domains (feature TopologyAwareWorkloadScheduling)",
                                   STR, _topology_key, default=None)
    priority_class: str | None = arg("priorityClass", "the group's PriorityClass: its members must have the same "
                                                      "priority (else the scheduler's SchedulerError)", DNS,
                                     lambda p, x, w: p.v.dns_label(x, w), default=None)
    disruption_mode: str | None = arg("disruptionMode", "All: a preemption takes every member or none; Single (the "
                                                        "API's default): each member on its own",
                                      {"enum": list(DISRUPTION_MODES)}, one_of(DISRUPTION_MODES), default=None)
    devices: tuple[DeviceRequest, ...] = arg(
        "devices", "devices the whole group shares (feature DRAWorkloadResourceClaims): one ResourceClaim for "
                   "the group, reserved for the PodGroup, which every member uses; as a pod's devices (the step "
                   "ends once the resourceclaim controller made the claim)",
        DEVICES, _group_devices, default=())

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> CreatePodGroup:
        made = super().parse(p, raw, w)
        if made.devices:
            p.group_devices[made.name] = made.devices
        return made

    def manifest(self) -> dict[str, Any]:
        return pod_group(self.name, self.min_count, self.topology_key, priority_class=self.priority_class,
                         disruption_mode=self.disruption_mode, devices=self.devices)

    def run(self, r: Run) -> None:
        r.cluster.settle()
        if self.devices:
            make_claim_template(r.cluster, r.ns.name, self.devices)
        r.objects.create(self.manifest())
        if self.devices:  # the step ends once the group's claim exists: no member races its creation
            wait_group_claim(r.cluster, r.ns.name, self.name)


@dataclass(frozen=True)
class _PodGroups:
    """The run's PodGroups, as a collection ``wait_for_items`` lists and watches."""

    api: Any
    namespace: str

    def describe(self) -> str:
        return f"PodGroups in {self.namespace}"

    def list_call(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return k8s.CustomObjectsApi(self.api).list_namespaced_custom_object, \
            (GROUP, VERSION, self.namespace, "podgroups"), {}

    def check_health(self) -> None:
        return None


def _condition(group: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (group.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None)


def _status(p: Parser, raw: Any, w: str) -> str:
    if raw in ("True", "False") or isinstance(raw, bool):
        return str(raw)
    p.v.fail(w, f"must be True or False, got {raw!r}")


@outcome("podGroupCondition", about_pods=False)
@dataclass(frozen=True)
class PodGroupCondition(DeclaredOutcome):
    """The PodGroup's status condition ``type`` has ``status`` (and ``reason``, and a ``message`` that holds
    the text given). ``PodGroupInitiallyScheduled`` True never turns False: waiting for False fails at once."""

    group: str = arg("group", "a PodGroup an earlier step made", DNS, _known_group)
    status: str = arg("status", "True or False", {"anyOf": [{"enum": ["True", "False"]}, BOOL]}, _status)
    type: str = arg("type", f"the condition's type (default {SCHEDULED})", STR, lambda p, x, w: p.v.string(x, w),
                    default=SCHEDULED)
    reason: str | None = arg("reason", "the condition's reason: Scheduled, Unschedulable, SchedulerError, ...",
                             STR, lambda p, x, w: p.v.string(x, w), default=None)
    message: str | None = arg("message", "text the condition's message holds", STR,
                              lambda p, x, w: p.v.string(x, w), default=None)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        def has(items: list[dict[str, Any]]) -> Check:
            group = next((i for i in items if i["metadata"]["name"] == self.group), None)
            if group is None:
                return pending("no such PodGroup")
            c = _condition(group, self.type)
            if c is None:
                return pending(f"no {self.type} condition")
            shown = f"{c.get('status')} ({c.get('reason')}: {c.get('message') or ''})"
            if self.type == SCHEDULED and self.status == "False" and c.get("status") == "True":
                return fail(f"{self.type} is True, which it stays: {shown}")
            if c.get("status") == self.status and self.reason in (None, c.get("reason")) \
                    and (self.message is None or self.message in (c.get("message") or "")):
                return MATCH
            return pending(f"{self.type} is {shown}")

        want = self.status + (f" ({self.reason})" if self.reason else "")
        wait_for_items(_PodGroups(r.cluster.api, r.ns.name), has, f"PodGroup {self.group}: {self.type} {want}",
                       timeout)
        r.figure(f"step {index}: PodGroup {self.group} {self.type}", self.status)


@outcome("wholeGroups", about_pods=False)
@dataclass(frozen=True)
class WholeGroups(DeclaredOutcome):
    """Of ``groups``, exactly ``count`` have every member bound, and every other group has none bound and
    each of its members told why (PodScheduled False): two groups contending for the same nodes, one binds
    whole, the other not at all, and nothing deadlocks. Fails at the deadline with each group's members."""

    groups: tuple[str, ...] = arg("groups", "PodGroups earlier steps made members of", listing(DNS, 1),
                                  _known_groups)
    count: int = arg("count", "how many of them bind whole", whole(), lambda p, x, w: p.v.whole(x, w))
    members: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def read(cls, p: Parser, raw: Any, w: str) -> dict[str, Any]:
        values = super().read(p, raw, w)
        if values["count"] > len(values["groups"]):
            p.v.fail(f"{w}.count", f"is more than the {len(values['groups'])} groups named")
        values["members"] = tuple((g, tuple(p.group_members[g])) for g in values["groups"])
        return values

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        def split(items: list[dict[str, Any]]) -> Check:
            by_name = {i["metadata"]["name"]: i for i in items}

            def node(name: str) -> str | None:
                return ((by_name.get(name) or {}).get("spec") or {}).get("nodeName")

            whole_groups, none_bound, states = [], [], []
            for group, names in self.members:
                bound = [n for n in names if node(n)]
                untold = [] if bound else [n for n in names if n not in by_name or not _rejected(by_name[n])]
                if len(bound) == len(names):
                    whole_groups.append(group)
                elif not bound and not untold:
                    none_bound.append(group)
                states.append(f"{group}: {len(bound)} of {len(names)} bound"
                              + (f" ({', '.join(f'{n} on {node(n)}' for n in bound)})" if bound else "")
                              + (f", {len(untold)} not yet told why" if untold else ""))
            if len(whole_groups) == self.count and len(whole_groups) + len(none_bound) == len(self.members):
                return MATCH
            if len(whole_groups) > self.count:
                return fail("; ".join(states))
            return pending("; ".join(states))

        wait_for_items(r.ns, split, f"{self.count} of {len(self.members)} groups bound whole, the rest not at all",
                       timeout)
        r.figure(f"step {index}: groups bound whole", self.count)


def _rejected(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               for c in (pod.get("status") or {}).get("conditions") or [])

