"""The outcome ``baselineAgrees``: the scheduler under test and a baseline judge the same pods on the same cluster
(``schedgate fuzz --baseline``).

Once each of the test's pods is bound or Unschedulable, a baseline scheduler is started beside the one under
test (``in-tree``: the profile without its out-of-tree plugins; ``same``: the profile itself; run by the pinned
kube-scheduler unless ``--baseline-scheduler-binary``/``--baseline-scheduler-config`` say otherwise: another
version, another build). For each pod the scheduler under test left Unschedulable, in the order they were made,
the baseline (its PostFilter plugins disabled: it never evicts) is given a copy of the pod (its spec, for the
baseline's profile; claims from the same templates) in the state the scheduler under test refused it in:

- the baseline refuses the copy too: the verdicts agree; the copy is deleted (an unbound pod holds nothing);
- the baseline binds it: the pod fits. The copy is deleted, with the claims made for it; the scheduler under
  test then has the step's deadline, counted from there, to bind the pod (the deletion is an event its queue
  acts on, and the pod may have been owed a binding, still in its backoff). Still Unschedulable then: the
  verdicts differ, and the outcome fails naming the pod, the node the baseline chose and the baseline.

A pod the baseline cannot judge alike is not asked and is named in the step's figure: a member of a gang of
schedgate's Gang plugin where the baseline's profile does not enable it, and a member of a PodGroup (a copy would
join the group). The opposite difference (a pod the
scheduler under test bound that the baseline would refuse where it is) is not asked: it would mean taking
the pod off its node. The invariants judge bound pods.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, cast

from kubernetes import client as k8s

from schedgate.errors import NotHere
from schedgate.kube.api import read_json
from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.objects.groups import PLUGIN, group_of
from schedgate.scenarios.declare import DeclaredOutcome, arg
from schedgate.scenarios.invariants import _settled, wait_decided
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.perf_steps import BASELINES, _read_baseline
from schedgate.scenarios.run import Run
from schedgate.spec.schedconfig import SchedulerConfig

SUFFIX = "-baseline"  # the baseline's profile: the one under test's name with it; a copy's name too


def copy_of(pod: dict[str, Any], scheduler: str) -> dict[str, Any]:
    """The pod as the baseline is asked it: its labels, annotations and spec, for ``scheduler``, unbound; its
    priority and preemption policy left for admission to set again from its class."""
    meta = pod["metadata"]
    spec = {k: v for k, v in pod["spec"].items() if k not in ("nodeName", "priority", "preemptionPolicy")}
    spec.update(schedulerName=scheduler)
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": f"{meta['name']}{SUFFIX}", "labels": meta.get("labels") or {},
                         "annotations": meta.get("annotations") or {}}}


def not_asked(pod: dict[str, Any], baseline: str, gangs: bool) -> str:
    """Why the baseline (profile ``baseline``, admitting gangs of the Gang plugin or not) cannot judge ``pod`` as
    the scheduler under test did; "" when it can."""
    group = (group_of(pod) or ("",))[0]
    if group.startswith("PodGroup/"):
        return f"a member of {group}, which a copy would join"
    return f"a gang's member, and {baseline} does not admit gangs" if group and not gangs else ""


def never_preempting(config: SchedulerConfig) -> SchedulerConfig:
    """``config`` with every PostFilter plugin of its profiles disabled: a baseline that never evicts a pod to
    make room, so that asking it changes nothing of the state it is asked about."""
    doc = copy.deepcopy(config.doc)
    for prof in doc["profiles"]:
        plugins = prof.setdefault("plugins", {})
        plugins["postFilter"] = {"disabled": [{"name": "*"}]}
    return replace(config, doc=doc)


@outcome("baselineAgrees", about_pods=False)
@dataclass(frozen=True)
class BaselineAgrees(DeclaredOutcome):
    """Every pod the scheduler under test left Unschedulable is refused by a baseline too, asked in the same
    state, or is bound by the scheduler under test within the deadline once the baseline's copy is gone."""

    baseline: str = arg("baseline", "in-tree (default): the profile under test without out-of-tree plugins; "
                                    "same: the profile itself (another binary: --baseline-scheduler-binary)",
                        {"enum": list(BASELINES)}, _read_baseline, default="in-tree")

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        if r.baseline is None:
            raise NotHere("this run has no baseline scheduler (the pytest plugin and schedgate fuzz provide one)")
        core = k8s.CoreV1Api(r.cluster.api)
        items = wait_decided(r, core, timeout)
        refused = sorted((p for p in items if _settled(p) == "unschedulable"),
                         key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
        asked: list[str] = []
        skipped: list[str] = []
        differ: list[str] = []
        for profile in dict.fromkeys(p["spec"].get("schedulerName") for p in refused):
            mine = r.cluster.scheduler(profile).config.profile(profile)
            config, binary = r.baseline(mine, self.baseline)
            config = never_preempting(config.renamed(SUFFIX))
            theirs = config.profile_names[0]
            gangs = config.enabled_args(theirs, PLUGIN) is not None
            proc = r.cluster.start_scheduler(config, binary)
            try:
                for pod in (p for p in refused if p["spec"].get("schedulerName") == profile):
                    name = pod["metadata"]["name"]
                    if why := not_asked(pod, theirs, gangs):
                        skipped.append(f"pod {name}: {why}")
                        continue
                    asked.append(name)
                    if (node := self._ask(r, core, copy_of(pod, theirs), timeout)) is None:
                        continue
                    if not self._bound_after(core, r.ns.name, name, timeout):
                        differ.append(f"pod {name}: Unschedulable by {profile}, but the baseline {theirs} "
                                      f"bound a copy of it on {node} in the same state, and {timeout:.0f}s after "
                                      f"the copy was gone it was still Unschedulable")
            finally:
                r.cluster.stop_scheduler(proc)
        r.figure(f"step {index}: baseline asked", "; ".join(
            [f"{len(asked)} refused pod(s) asked ({', '.join(asked) or 'none'})",
             *(f"not asked: {s}" for s in skipped)]))
        if differ:
            raise AssertionError("the baseline differs:\n  " + "\n  ".join(differ))

    @staticmethod
    def _ask(r: Run, core: k8s.CoreV1Api, body: dict[str, Any], timeout: float) -> str | None:
        """The node the baseline binds ``body`` to, or ``None`` where it refuses it; the copy is gone after,
        with any claim made for it."""
        ns, name = r.ns.name, body["metadata"]["name"]
        core.create_namespaced_pod(ns, cast(Any, body))  # the API server's JSON, as read
        seen: dict[str, Any] = {}

        def decided() -> bool:
            seen.update(pod=read_json(core.read_namespaced_pod, name, ns))
            return _settled(seen["pod"]) in ("bound", "unschedulable")

        try:
            try:
                poll_until(decided, f"the baseline's verdict on {name}", timeout, interval=0.1)
            except PollTimeout:
                raise AssertionError(f"the baseline gave no verdict on {name} within {timeout:.0f}s "
                                     f"({_settled(seen.get('pod') or {}) or 'not tried'})") from None
            return (seen["pod"].get("spec") or {}).get("nodeName") or None
        finally:
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
            _gone(r, core, name, timeout)

    @staticmethod
    def _bound_after(core: k8s.CoreV1Api, ns: str, name: str, timeout: float) -> bool:
        try:
            poll_until(lambda: bool((read_json(core.read_namespaced_pod, name, ns).get("spec") or {}).get("nodeName")),
                       f"{name} bound", timeout, interval=0.25)
            return True
        except PollTimeout:
            return False


def _gone(r: Run, core: k8s.CoreV1Api, name: str, timeout: float) -> None:
    """Wait until pod ``name`` and the ResourceClaims it owns are gone from the API (their devices free)."""
    res = k8s.ResourceV1Api(r.cluster.api)
    ns = r.ns.name

    def gone() -> bool:
        pods = read_json(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}").get("items") or []
        claims = read_json(res.list_namespaced_resource_claim, ns).get("items") or []
        return not pods and not any(o.get("kind") == "Pod" and o.get("name") == name
                                    for c in claims for o in c["metadata"].get("ownerReferences") or [])

    poll_until(gone, f"{name} and its claims gone", timeout, interval=0.1)
