"""What every correct scheduler keeps, judged from the API alone by upstream's own helpers: the outcome
``invariants`` (what ``schedgate fuzz`` ends each generated scenario with).

It waits, under the step's deadline, until each of the test's pods is bound or marked Unschedulable (a pod
neither at the deadline fails, one still marked with a SchedulerError with its text: no pod is silently stuck;
a SchedulerError is no verdict, as the scheduler tries the pod again). Then, after a cache barrier, the
nodes (but schedgate's sync node) and every pod on them go to ``schedgate-oracle``, a small binary linked
from k8s.io/component-helpers of the pinned version (go/cmd/schedgate-oracle): no node holds more than its
allocatable of a resource, pods included; every bound pod matches its node's labels (nodeSelector, required
node affinity) and tolerates its NoSchedule and NoExecute taints and the unschedulable mark; no two bound pods
share a topology domain that a required pod anti-affinity term of either forbids, or hold one host port; upstream's
own InterPodAffinity filter passes every bound pod's required affinity where it is (a pod matching its own term,
which may have been the first of its kind, is named, not judged); upstream's
own PodTopologySpread filter passes every bound pod's hard spread constraints where it is, the other pods where
they are (judged only where every pod a constraint counts carries it: then the end state stands for each bind
time, provided no counted pod was deleted and no domain added after the pods came; a pod not judged is named);
every claim of a bound pod is allocated, reserved for it and allocated for its node, from devices published
there, and no device is allocated to two claims (unless its slice allows it). A group of schedgate's Gang
plugin (labels ``schedgate.io/gang`` and ``schedgate.io/gang-min``) with members bound binds whole: fewer
bound than its minimum fails at the deadline (its members bind one by one, so not at once). Each victim the
scheduler's "Preempted" events name has a lower priority than its preemptor (the victim's as the API server
admitted it when the test made it), was bound (its "Scheduled" event) to the node the event says it was
preempted on, and that node is not one the preemptor's own nodeSelector, required node affinity, taints or
requests alone exclude (a victim preempted in the scheduler's memory, never bound, is judged by priority). Where
the API server keeps an audit log schedgate reads (:mod:`schedgate.cluster.audit`: local, kind), every pod of the test a
scheduler's identity deleted or evicted is a victim too: one no "Preempted" event names is a violation (a
scheduler decides what it reports; the API server records every removal). With
``noMissedFit``, it then waits, under the same deadline, until no pod left Unschedulable fits a node in the
oracle's eyes (a pod with claims, or a gang's member, is not judged so, and is named): sound when nothing
was tightened after the pods came (a label only added, a taint only removed, nodes only added, pods only
deleted), as in a generated scenario. A broken rule of a pod the test did not make, or of a node holding none
of its pods, is left out and counted in the figure (an existing cluster's own pods are its business). The
checks the oracle ran, and those it left out for a pod (with why),
are printed as a figure; a constraint outside them is not judged.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from schedgate.cluster.abilities import Ability, AuditsRequests
from schedgate.cluster.audit import by_schedulers, marked, removals
from schedgate.cluster.sync_objects import SYNC_DRIVER
from schedgate.kube.api import read_json
from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.runtime.toolchain import ensure_tool
from schedgate.scenarios.declare import DeclaredOutcome, arg
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import BOOL

ORACLE = "schedgate-oracle"


def _settled(pod: dict[str, Any]) -> str | None:
    """``None`` while the pod waits for a verdict; else ``bound``, ``unschedulable`` or the error's text. A pod
    nominated to a node (``status.nominatedNodeName``: kube-scheduler's mark of a pod waiting at Permit or in its
    binding cycle, or of a preemptor waiting for its victims to go) is on its way: the verdict of an earlier
    attempt still on it is not its last."""
    if (pod.get("spec") or {}).get("nodeName"):
        return "bound"
    if (pod.get("status") or {}).get("nominatedNodeName"):
        return None
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            if c.get("reason") == "Unschedulable":
                return "unschedulable"
            if c.get("reason") == "SchedulerError":
                return f"SchedulerError: {c.get('message', '')}"
    return None


def judge(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], claims: Sequence[dict[str, Any]] = (),
          slices: Sequence[dict[str, Any]] = (), preemptions: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The oracle's verdict on these nodes, pods, ResourceClaims, ResourceSlices and preemptions
    (:func:`preemptions`): ``checks``, ``violations``, ``fits``, ``skipped`` (see its source)."""
    done = subprocess.run([str(ensure_tool(ORACLE))], input=json.dumps(
        {"nodes": nodes, "pods": pods, "claims": list(claims), "slices": list(slices),
         "preemptions": list(preemptions)}),
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"{ORACLE} failed: {done.stderr.strip()[-500:]}")
    verdict: dict[str, Any] = json.loads(done.stdout)
    return verdict


# kube-scheduler's events (v1.35-v1.37): a victim's "Preempted" (its preemptor's kind and UID), a pod's "Scheduled"
_PREEMPTED = re.compile(r"^Preempted by (.+) (\S+) on node (\S+?)( \(in kube-scheduler memory\)\.)?$")
_ASSIGNED = re.compile(r"^Successfully assigned \S+/\S+ to (\S+)$")


def preemptions(r: Run, events: list[dict[str, Any]], pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                                                              list[str]]:
    """Each victim the test's "Preempted" events name, for the oracle: its priority (as the API server admitted
    it when the test made it: the victim itself is gone), the node its "Scheduled" event bound it to, its
    preemptor (the test's pod of the UID the event names, among ``pods``) and the node preempted on; and the
    events not judged (a preemptor that is no pod, or gone), with why."""
    bound = {e["regarding"]["name"]: m.group(1) for e in events if e.get("reason") == "Scheduled"
             and (e.get("regarding") or {}).get("name") and (m := _ASSIGNED.match(e.get("note") or ""))}
    by_uid = {p["metadata"].get("uid"): p["metadata"]["name"] for p in pods}
    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    for e in events:
        victim = (e.get("regarding") or {}).get("name")
        if e.get("reason") != "Preempted" or not victim or not (m := _PREEMPTED.match(e.get("note") or "")):
            continue
        kind, uid, node, in_memory = m.groups()
        if kind != "pod" or uid not in by_uid:
            skipped.append(f"preemption: victim {victim}: its preemptor ({kind} {uid}) is "
                           + ("no pod" if kind != "pod" else "gone") + ", not judged")
            continue
        made = r.pods.get(victim)
        out.append({"victim": f"{r.ns.name}/{victim}", "victimPriority": made.priority if made else None,
                    "victimNode": bound.get(victim, ""), "preemptor": f"{r.ns.name}/{by_uid[uid]}",
                    "node": node, "inMemory": bool(in_memory)})
    return out, skipped


def verdicts(r: Run, core: k8s.CoreV1Api, items: list[dict[str, Any]] | None = None) -> dict[str, str | None]:
    """Each of the test's pods (or of ``items``) by name: its verdict so far (:func:`_settled`)."""
    if items is None:
        items = read_json(core.list_namespaced_pod, r.ns.name).get("items") or []
    return {p["metadata"]["name"]: _settled(p) for p in items}


def wait_decided(r: Run, core: k8s.CoreV1Api, timeout: float) -> list[dict[str, Any]]:
    """The test's pods once each is bound or Unschedulable (a SchedulerError is no verdict: the scheduler tries
    the pod again); one neither after ``timeout`` seconds fails, named with its error where it has one."""
    seen: dict[str, str | None] = {}
    items: list[dict[str, Any]] = []

    def settled() -> bool:
        items[:] = read_json(core.list_namespaced_pod, r.ns.name).get("items") or []
        seen.clear()
        seen.update(verdicts(r, core, items))
        return all(v in ("bound", "unschedulable") for v in seen.values())

    try:
        poll_until(settled, "every pod bound or Unschedulable", timeout, interval=0.1)
    except PollTimeout:
        stuck = sorted(f"{n} ({v})" if v else n for n, v in seen.items() if v not in ("bound", "unschedulable"))
        raise AssertionError(f"after {timeout:.0f}s neither bound nor Unschedulable: {', '.join(stuck)}") from None
    return items


@outcome("invariants", about_pods=False)
@dataclass(frozen=True)
class Invariants(DeclaredOutcome):
    """Every pod of the test bound or Unschedulable by the deadline (one still waiting, or still marked with a
    SchedulerError, which the scheduler retries, fails there); then, judged by upstream's helpers, no node over
    its allocatable, no bound pod on a node its nodeSelector, required node affinity or taints exclude, no
    two pods in one domain that a required pod anti-affinity term keeps apart or on one node with one host port,
    no bound pod where upstream's PodTopologySpread filter refuses its hard spread, no gang of the Gang plugin
    bound in part by the deadline, and no preemption's victim of the preemptor's priority or above, from another
    node than the one preempted on, or on a node the preemptor's own constraints exclude."""

    no_missed_fit: bool = arg("noMissedFit", "also wait, within the deadline, until no pod left Unschedulable fits "
                                             "a node: one that fits is owed a binding (sound when nothing was "
                                             "tightened after the pods came: no node label changed or removed, no "
                                             "taint added, no node cordoned or deleted)",
                              BOOL, lambda p, x, w: p.v.flag(x, w), default=False)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        core = k8s.CoreV1Api(r.cluster.api)
        deadline = time.monotonic() + timeout

        def settled() -> bool:
            return all(v in ("bound", "unschedulable") for v in verdicts(r, core).values())

        wait_decided(r, core, timeout)
        r.cluster.sync_schedulers()  # every scheduler has seen what the pods' verdicts were made from
        mine = f"{r.ns.name}/"  # the test's pods by their names alone: a message a replay can repeat

        def pod(key: str) -> str:
            return key.removeprefix(mine)

        missed: list[str] = []
        checks: list[str] = []

        def owed_nothing() -> bool:
            """Judged now: a violation fails at once (nothing after this step can undo it); a pod left
            Unschedulable that fits a node is owed a binding, which the scheduler may still be making."""
            if not settled():
                return False
            verdict = self.judged(r, core)
            judged = verdict.get("preempted")
            checks[:] = [*(verdict.get("checks") or []),
                         *([f"preemption: {judged} victim(s) judged"] if judged else []),
                         *(s.replace(mine, "") for s in verdict.get("skipped") or [])]
            broken = [f"{v['rule']}: " + (f"pod {pod(v['pod'])} on {v['node']}" if v.get("pod")
                                          else f"node {v['node']}") + f": {v['detail'].replace(mine, '')}"
                      for v in verdict.get("violations") or []]
            if broken:
                raise AssertionError("invariants broken:\n  " + "\n  ".join(broken))
            missed[:] = [f"{v['rule']}: {v['detail'].replace(mine, '')}" for v in verdict.get("partial") or []]
            # A Preempted event is sent after the deletion: one not there yet is waited for, to the deadline.
            missed.extend(f"{v['rule']}: pod {pod(v['pod'])} on {v['node']}: {v['detail']}"
                          for v in verdict.get("unreported") or [])
            if self.no_missed_fit:
                missed.extend(f"missed fit: pod {pod(p)} is Unschedulable but fits {', '.join(fits)}"
                              for p, fits in sorted((verdict.get("fits") or {}).items()) if fits and p.startswith(mine))
            return not missed

        try:  # after its backoff (10 s at most) the scheduler retries a pod the last edit made room for; a gang's
            # members bind one by one
            poll_until(owed_nothing, "no pod Unschedulable where it fits, no gang bound in part",
                       max(1.0, deadline - time.monotonic()), interval=0.5)
        except PollTimeout:
            raise AssertionError("invariants broken:\n  " + "\n  ".join(missed)) from None
        finally:
            r.figure(f"step {index}: invariants checked", "; ".join(checks))

    @staticmethod
    def judged(r: Run, core: k8s.CoreV1Api) -> dict[str, Any]:
        """The oracle's verdict on the nodes (but the sync node), every pod on them and the test's pods."""
        nodes = [n for n in read_json(core.list_node).get("items") or []
                 if n["metadata"]["name"] != r.cluster.sync_node]
        names = {n["metadata"]["name"] for n in nodes}
        everywhere = read_json(core.list_pod_for_all_namespaces).get("items") or []
        res = k8s.ResourceV1Api(r.cluster.api)
        claims = read_json(res.list_resource_claim_for_all_namespaces).get("items") or []
        slices = [s for s in read_json(res.list_resource_slice).get("items") or []
                  if (s.get("spec") or {}).get("driver") != SYNC_DRIVER]
        events = read_json(r.cluster.events_api.list_namespaced_event, r.ns.name).get("items") or []
        victims, unjudged = preemptions(r, events, [p for p in everywhere if p["metadata"]["namespace"] == r.ns.name])
        silent, unmarked, audited = unreported(r, events)
        verdict = judge(nodes, [p for p in everywhere if (p.get("spec") or {}).get("nodeName") in names
                                or p["metadata"]["namespace"] == r.ns.name], claims, slices, victims)
        mine = {(p.get("spec") or {}).get("nodeName") for p in everywhere if p["metadata"]["namespace"] == r.ns.name}
        kept = [v for v in verdict.get("violations") or [] if _ours(v, r.ns.name, mine)]
        others = len(verdict.get("violations") or []) - len(kept)
        verdict["violations"], verdict["preempted"], verdict["unreported"] = kept + unmarked, len(victims), silent
        verdict["checks"] = [*(verdict.get("checks") or []), audited]
        verdict["skipped"] = [*(verdict.get("skipped") or []), *unjudged, *(
            [f"{others} broken rule(s) of pods the test did not make, or of nodes holding none of its pods: left "
             "out (not this test's placements)"]
            if others else [])]
        return verdict


def unreported(r: Run, events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """The test's pods a scheduler's identity deleted or evicted (the API server's audit log) that no "Preempted"
    event names (waited for: the event follows the deletion), and those it deleted without first giving them a
    DisruptionTarget condition (final: the condition's write precedes the deletion; an eviction's is the API
    server's own), as violations: a preemption names its preemptor and marks its victim, and a scheduler that
    removes a pod without saying why is judged by what the API server recorded. And the figure's line."""
    if not r.cluster.can(Ability.AUDITS_REQUESTS):
        return [], [], "preemption: victims read from the schedulers' events only (no audit log of the API server here)"
    audit = r.cluster.use(AuditsRequests)  # type: ignore[type-abstract]
    lines = audit.audit_lines()
    removed = by_schedulers(removals(lines, r.ns.name))
    conditioned = marked(lines, r.ns.name)
    named = {f"{r.ns.name}/{(e.get('regarding') or {}).get('name')}" for e in events if e.get("reason") == "Preempted"}
    bound = {f"{r.ns.name}/{e['regarding']['name']}": m.group(1) for e in events if e.get("reason") == "Scheduled"
             and (e.get("regarding") or {}).get("name") and (m := _ASSIGNED.match(e.get("note") or ""))}
    seen = {f"{r.ns.name}/{name}": p.node_name for name, p in r.pods.items()}  # as the test last saw it bound
    silent = [{"rule": "preemption", "pod": x.pod, "node": bound.get(x.pod) or seen.get(x.pod) or "its node",
               "detail": f"{x.how} by {x.user} (the API server's audit log), and no Preempted event names it: "
                         "a preemption's victim names its preemptor"} for x in removed if x.pod not in named]
    unmarked = [{"rule": "preemption", "pod": x.pod, "node": bound.get(x.pod) or seen.get(x.pod) or "its node",
                 "detail": f"deleted by {x.user} (the API server's audit log) with no DisruptionTarget condition "
                           "written first: a preemption's victim is told why it goes"}
                for x in removed if x.how == "deleted" and x.pod not in conditioned]
    return silent, unmarked, f"preemption: {len(removed)} pod(s) removed by a scheduler (the API server's audit log)"


def _ours(v: dict[str, Any], ns: str, nodes: set[str | None]) -> bool:
    """A violation that concerns the test's placements: one of its pods, or a node holding one."""
    if v.get("pod"):
        return str(v["pod"]).startswith(f"{ns}/") or f"{ns}/" in str(v.get("detail", ""))
    return v.get("node") in nodes
