"""Outcomes of pods that live (kubelets on kind, a node agent on local): ``running``, ``unbound``,
``evicted``, ``notEvicted``, ``nodeTainted`` and ``workloadReady`` (the pods a controller made, which a scenario cannot
name)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from kubernetes import client as k8s

from schedgate.cluster.abilities import Ability, AuditsRequests
from schedgate.cluster.audit import disruptions, removals
from schedgate.cluster.node_kinds import _NodeList
from schedgate.kube.api import read_json
from schedgate.kube.watch import MATCH, Check, Matcher, fail, pending, wait_for, wait_for_items
from schedgate.objects.matchers import describe_pod, evicted, pod_condition, running
from schedgate.scenarios.declare import (
    DeclaredOutcome,
    arg,
    read_first,
    read_label_key,
    read_nodes,
    read_string,
    true_body,
)
from schedgate.scenarios.outcomes import ONCE, WhenTrue, outcome
from schedgate.scenarios.parse import MAX_PODS, Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import BOOL, STR, ref, whole

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Kinds whose pods workloadReady finds: the owner a pod names, or (Deployment) the owner of that owner.
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


@outcome("running")
@dataclass(frozen=True)
class Running(WhenTrue):
    """Running and Ready, not being deleted. Being deleted, or ended, fails at once."""

    def matcher(self) -> Matcher:
        return running()


@outcome("unbound")
@dataclass(frozen=True)
class Unbound(WhenTrue):
    """Not bound, read once, at this step: put it after a positive signal (e.g. a preemption victim
    ``evicted`` and still terminating: the preemptor must wait for it to be gone)."""

    true: bool = true_body(ONCE)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        for name in pods:
            pod = r.pod(name).refresh()
            if pod.node_name:
                raise AssertionError(f"pod {name} is already bound to {pod.node_name}")


@outcome("notEvicted")
@dataclass(frozen=True)
class NotEvicted(WhenTrue):
    """Bound, not being deleted and not marked for disruption (no DisruptionTarget condition), read once at
    this step: after a positive signal (another pod of the same node ``evicted``), the pods whose tolerations
    keep them there."""

    true: bool = true_body(ONCE)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        for name in pods:
            raw = r.pod(name).read_raw()
            if raw is None or (raw.get("metadata") or {}).get("deletionTimestamp"):
                raise AssertionError(f"pod {name} is " + ("gone" if raw is None else "being deleted: "
                                                          + describe_pod(raw)))
            if not (raw.get("spec") or {}).get("nodeName"):
                raise AssertionError(f"pod {name} is not bound")
            marked = pod_condition(raw, "DisruptionTarget") or {}
            if marked.get("status") == "True":
                raise AssertionError(f"pod {name} is marked for disruption ({marked.get('reason')}: "
                                     f"{marked.get('message')})")


@outcome("evicted")
@dataclass(frozen=True)
class Evicted(DeclaredOutcome):
    """Being deleted with a DisruptionTarget condition (``reason``: e.g. DeletionByTaintManager,
    PreemptionByScheduler; another reason fails at once). ``true``: any reason. A pod already gone is judged
    by the API server's audit log where schedgate reads one (local, kind): removed, and given the condition
    first (an eviction's is the API server's own, EvictionByEvictionAPI)."""

    SHORTHANDS: ClassVar[tuple[Any, ...]] = (True,)
    reason: str | None = arg("reason", "DeletionByTaintManager, PreemptionByScheduler, ...", STR, read_string)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        if not r.cluster.can(Ability.AUDITS_REQUESTS):
            r.each(pods, evicted(self.reason), timeout)
            return
        audit = r.cluster.use(AuditsRequests)  # type: ignore[type-abstract]
        deadline = time.monotonic() + timeout
        for name in pods:
            gone = functools.partial(self._gone, audit, r.ns.name, name)
            wait_for(r.pod(name), _Recorded(evicted(self.reason), gone), timeout=max(0.5, deadline - time.monotonic()))

    def _gone(self, audit: AuditsRequests, ns: str, name: str) -> Check:
        lines, pod = audit.audit_lines(), f"{ns}/{name}"
        gone = [x for x in removals(lines, ns) if x.pod == pod]
        if not gone:
            return fail("gone, and the API server's audit log records no deletion or eviction of it")
        why = disruptions(lines, ns).get(pod)
        reason = why[0] if why else "EvictionByEvictionAPI" if any(x.how == "evicted" for x in gone) else None
        if reason is None:
            return fail(f"gone ({gone[0].how} by {gone[0].user}) with no DisruptionTarget condition written first "
                        "(the API server's audit log)")
        if self.reason in (None, reason):
            return MATCH
        return fail(f"disrupted for {reason!r}, expected {self.reason!r} (the API server's audit log)")


@dataclass(frozen=True)
class _Recorded:
    """``base``, and for an object gone, what ``gone`` reads of it."""

    base: Matcher
    gone: Callable[[], Check]

    @property
    def description(self) -> str:
        return self.base.description

    def __call__(self, obj: dict[str, Any] | None) -> Check:
        return self.gone() if obj is None else self.base(obj)


def _effect(p: Parser, raw: Any, w: str) -> str:
    effect = p.v.string(raw, w)
    if effect not in EFFECTS:
        p.v.fail(w, f"must be one of {', '.join(EFFECTS)}, got {effect!r}")
    return effect


@outcome("nodeTainted", about_pods=False)
@dataclass(frozen=True)
class NodeTainted(DeclaredOutcome):
    """Every node named carries a taint with ``key`` (and ``effect``, if given)."""

    nodes: tuple[str, ...] = arg("nodes", "node and pool names", ref("nodeSet"), read_nodes)
    key: str = arg("key", "the taint's key", STR, read_label_key)
    effect: str | None = arg("effect", "the taint's effect (default: any)",
                             {"enum": list(EFFECTS)}, _effect, default=None)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """effect and key are read before nodes, as before."""
        return read_first(cls, p, m, w, ("effect", "key"))

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        def tainted(items: list[dict[str, Any]]) -> Check:
            by_name = {i["metadata"]["name"]: i for i in items}
            waiting = []
            for n in self.nodes:
                taints = ((by_name.get(n) or {}).get("spec") or {}).get("taints") or []
                if not any(t.get("key") == self.key and self.effect in (None, t.get("effect")) for t in taints):
                    waiting.append(f"{n} ({', '.join(t.get('key', '') for t in taints) or 'no taints'})")
            return MATCH if not waiting else pending("not yet: " + "; ".join(waiting))

        what = f"{', '.join(self.nodes)} tainted {self.key}" + (f":{self.effect}" if self.effect else "")
        wait_for_items(_NodeList(r.cluster.core), tainted, what, timeout)


@outcome("workloadReady", about_pods=False)
@dataclass(frozen=True)
class WorkloadReady(DeclaredOutcome):
    """The pods a workload controller made for ``kind``/``name`` (an object an ``apply`` step made):
    exactly ``pods`` of them, each Running and Ready, each bound inside ``nodes`` (anywhere else fails at
    once), and with ``distinctNodes`` each on a node of its own."""

    kind: str = arg("kind", "the workload's kind", {"enum": list(WORKLOAD_KINDS)}, read_string)
    name: str = arg("name", "the workload's name (an earlier apply step made it)", STR, read_string)
    count: int = arg("pods", "exactly this many pods", whole(1, MAX_PODS),
                     lambda p, x, w: p.v.whole(x, w, minimum=1))
    on: tuple[str, ...] = arg("nodes", "node and pool names its pods must bind inside", ref("nodeSet"), read_nodes)
    distinct: bool = arg("distinctNodes", "each pod on a node of its own", BOOL, lambda p, x, w: p.v.flag(x, w),
                         default=False)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """kind and name read together (an earlier apply step made that object), then distinctNodes, as
        before."""
        kind, name = p.v.string(m["kind"], f"{w}.kind"), p.v.string(m["name"], f"{w}.name")
        if kind not in WORKLOAD_KINDS:
            p.v.fail(f"{w}.kind", f"must be one of {', '.join(WORKLOAD_KINDS)}, got {kind!r}")
        if (kind, name) not in p.applied:
            p.v.fail(f"{w}.name", f"no earlier apply step made {kind}/{name}")
        return {"kind": kind, "name": name, **read_first(cls, p, m, w, ("distinct",))}

    def _owners(self, r: Run) -> set[tuple[str, str]]:
        if self.kind != "Deployment":
            return {(self.kind, self.name)}
        sets = read_json(k8s.AppsV1Api(r.cluster.api).list_namespaced_replica_set, r.ns.name)["items"]
        return {("ReplicaSet", s["metadata"]["name"]) for s in sets
                if any((o.get("kind"), o.get("name")) == ("Deployment", self.name)
                       for o in s["metadata"].get("ownerReferences") or [])}

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        allowed = set(self.on)

        def ready(items: list[dict[str, Any]]) -> Check:
            owners = self._owners(r)
            mine = [i for i in items if any((o.get("kind"), o.get("name")) in owners
                                            for o in i["metadata"].get("ownerReferences") or [])]
            live = [i for i in mine if not i["metadata"].get("deletionTimestamp")]
            for i in live:
                node = (i.get("spec") or {}).get("nodeName")
                if node and node not in allowed:
                    return fail(f"pod {i['metadata']['name']} bound to {node!r}, outside {sorted(allowed)}")
            up = [i for i in live if running()(i) == MATCH]
            nodes = [i["spec"]["nodeName"] for i in up]
            shown = ", ".join(f"{i['metadata']['name']}@{i['spec'].get('nodeName') or '-'}" for i in live)
            if self.distinct and len(set(nodes)) < len(nodes):
                return fail(f"two of its pods share a node: {shown}")
            if len(up) == self.count == len(live):
                return MATCH
            return pending(f"{len(up)} of {len(live)} pods Running and Ready, want {self.count}: {shown or 'none'}")

        wait_for_items(r.ns, ready, f"{self.kind}/{self.name}: {self.count} pods Running and Ready", timeout)
        r.figure(f"step {index}: {self.kind}/{self.name} pods", self.count)
