"""Running a scenario file's steps against a cluster (see :mod:`schedgate.scenario`).

Every action is a call on the same API the Python scenarios use; every
expectation waits on a positive signal under a hard deadline and fails with
an ``AssertionError`` naming the file, the step and its line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from schedgate.builders import Pod, PodBuilder, make_pod
from schedgate.cluster import Cluster, Namespace
from schedgate.events import summarize
from schedgate.extender import Extender
from schedgate.metrics import MetricsSnapshot
from schedgate.report import Report
from schedgate.scenario import Scenario, Step
from schedgate.schedconfig import SchedulerConfig
from schedgate.scheduler import Scheduler
from schedgate.waits import (
    MATCH,
    Check,
    FnMatcher,
    Matcher,
    gone,
    pending,
    pod_condition,
    scheduled_on,
    scheduling_error,
    unschedulable,
    wait_for,
)


@dataclass
class Run:
    """What the steps act on. ``role_config`` turns a role name (``network-slots``) into the run's file."""

    scenario: Scenario
    cluster: Cluster
    ns: Namespace
    start_scheduler: Callable[[SchedulerConfig], Scheduler]
    role_config: Callable[[str], SchedulerConfig]
    report: Report | None = None
    pods: dict[str, Pod] = field(default_factory=dict)
    extender: Extender | None = None
    transcript: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.extender is not None:
            self.extender.down()

    # -- the run -------------------------------------------------------------
    def run(self) -> None:
        started = time.monotonic()
        try:
            for step in self.scenario.steps:
                t0 = time.monotonic()
                try:
                    ACTIONS[step.kind](self, step)
                except AssertionError as e:
                    self.transcript.append(f"{time.monotonic() - started:7.2f}s  {step.title()}: FAILED")
                    raise AssertionError(f"{self.scenario.source}: {step.title()}: {e}") from None
                self.transcript.append(f"{time.monotonic() - started:7.2f}s  {step.title()}: ok "
                                       f"({time.monotonic() - t0:.2f}s)")
        finally:
            self.close()

    def pod(self, name: str) -> Pod:
        return self.pods[name]

    # -- actions -------------------------------------------------------------
    def create_pods(self, step: Step) -> None:
        a = step.args
        for name in a["names"]:
            pod = builder(name, a["pod"]).create(self.ns)
            self.pods[name] = pod
            if a["oneAtATime"]:
                wait_for(pod, decided(), timeout=a["timeout"])

    def delete_pods(self, step: Step) -> None:
        for name in step.args["pods"]:
            self.pod(name).delete()

    def annotate_pods(self, step: Step) -> None:
        for name in step.args["pods"]:
            for k, v in step.args["annotations"].items():
                self.pod(name).annotate(k, v)

    def nodes(self, step: Step) -> None:
        a, c = step.args, self.cluster
        for n in a["nodes"]:
            if step.kind == "label":
                c.label(n, a["key"], a.get("value", ""))
            elif step.kind == "unlabel":
                c.unlabel(n, a["key"])
            elif step.kind == "annotateNodes":
                for k, v in a["annotations"].items():
                    c.annotate(n, k, v)
            elif step.kind == "taint":
                c.taint(n, a["key"], a.get("value", ""), a.get("effect", "NoSchedule"))
            elif step.kind == "untaint":
                c.untaint(n, a["key"])
            elif step.kind == "setGPUs":
                c.set_gpus(n, a["count"])
            elif step.kind == "deleteNodes":
                c.delete_node(n)

    def scheduler(self, step: Step) -> None:
        a = step.args
        if "profile" in a:
            proc = self.cluster.scheduler(a["profile"])
            if step.kind == "stopScheduler":
                proc.stop()
            elif not proc.alive():
                proc.start()
            return
        if step.kind == "stopScheduler":
            raise AssertionError("stopScheduler takes a profile")  # the loader refuses this already
        self.start_scheduler(self.role_config(a["role"]) if "role" in a else a["config"])

    def extender_step(self, step: Step) -> None:
        a = step.args
        if self.extender is None:
            if "kind" not in a:
                raise AssertionError("the first extender step must say its kind (hard or soft)")
            self.extender = Extender(host=self.cluster.extender_host).up()
        ext = self.extender
        if "slots" in a:
            ext.slots = dict(a["slots"])
        if "faults" in a:
            f = a["faults"]
            ext.faults.clear()
            ext.faults.latency = f.get("latency", 0.0)
            ext.faults.status = f.get("status")
            ext.faults.malformed = f.get("malformed", False)
            ext.faults.drop = set(f.get("drop", ()))
            if f.get("down"):
                ext.down()
            else:
                ext.up()
        if "kind" in a:
            self.start_scheduler(self.role_config(f"extender-{a['kind']}").with_extender(ext.url))

    def sync(self, step: Step) -> None:
        self.cluster.sync_schedulers()

    def wait(self, step: Step) -> None:
        a = step.args
        matcher = {"scheduled": bound(), "unschedulable": unschedulable(), "schedulingError": scheduling_error(),
                   "decided": decided(), "gone": gone()}[a["until"]]
        self._each(a["pods"], matcher, a["timeout"])

    def _each(self, names: list[str], matcher: Matcher, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for name in names:
            wait_for(self.pod(name), matcher, timeout=max(0.5, deadline - time.monotonic()))

    def expect(self, step: Step) -> None:
        a = step.args
        what, timeout = a["outcome"], a["timeout"]
        if what == "scheduledOn":
            self._each(a["pods"], scheduled_on(a["nodes"], never=a["never"]), timeout)
            used = sorted({self.pod(n).node_name or "" for n in a["pods"]})
            if "distinctNodes" in a and len(used) != a["distinctNodes"]:
                raise AssertionError(f"{len(a['pods'])} pods landed on {len(used)} distinct nodes {used}; "
                                     f"expected {a['distinctNodes']}")
            if self.report:
                self.report.figure(f"step {step.index}: nodes used", ", ".join(used))
        elif what == "unschedulable":
            self._each(a["pods"], unschedulable(a["message"]), timeout)
        elif what == "schedulingError":
            self._each(a["pods"], scheduling_error(a["message"]), timeout)
        elif what == "gone":
            self._each(a["pods"], gone(), timeout)
        elif what == "untouched":
            for name in a["pods"]:
                pod = self.pod(name).refresh()
                touched = self.ns.events.for_pod(pod)
                if pod.node_name or pod.condition() is not None or touched:
                    raise AssertionError(f"pod {name} was touched by a scheduler: {pod.state()}; events: "
                                         + ("; ".join(summarize(e) for e in touched) or "none"))
        elif what == "event":
            for name in a["pods"]:
                self.ns.events.expect(self.pod(name), a["reason"], by=a["by"], message=a["message"],
                                      type=a["type"], timeout=timeout)
        elif what == "metric":
            self.expect_metric(a, timeout)
        elif what == "wholeFreeNodes":
            whole = self.cluster.whole_free_nodes(a["nodes"], a["size"])
            if self.report:
                self.report.figure(f"step {step.index}: whole free {a['size']}-GPU nodes", len(whole))
            if len(whole) != a["count"]:
                raise AssertionError(f"{len(whole)} whole free {a['size']}-GPU nodes {whole} among "
                                     f"{a['nodes']}; expected {a['count']}")

    def expect_metric(self, a: Mapping[str, Any], timeout: float) -> None:
        proc = self.cluster.scheduler(a["scheduler"])
        labels = a["labels"]

        def value(s: MetricsSnapshot) -> float:
            return s.value(a["name"], **labels)

        def ok(s: MetricsSnapshot) -> bool:
            v = value(s)
            return (("equals" not in a or v == a["equals"]) and ("atLeast" not in a or v >= a["atLeast"])
                    and ("atMost" not in a or v <= a["atMost"]))

        bounds = ", ".join(f"{k} {a[k]:g}" for k in ("equals", "atLeast", "atMost") if k in a)
        sel = a["name"] + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
        try:
            proc.wait_for_metrics(ok, f"{sel} {bounds}", timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e} (last value {value(proc.metrics()):g})") from None


ACTIONS: dict[str, Callable[[Run, Step], None]] = {
    "createPods": Run.create_pods,
    "deletePods": Run.delete_pods,
    "annotatePods": Run.annotate_pods,
    **{k: Run.nodes for k in ("label", "unlabel", "annotateNodes", "taint", "untaint", "setGPUs", "deleteNodes")},
    "stopScheduler": Run.scheduler,
    "startScheduler": Run.scheduler,
    "extender": Run.extender_step,
    "sync": Run.sync,
    "wait": Run.wait,
    "expect": Run.expect,
}


def builder(name: str, t: dict[str, Any]) -> PodBuilder:
    """A pod builder from a validated template."""
    b = make_pod(name)
    if "gpus" in t:
        b = b.gpus(t["gpus"])
    for r in ("cpu", "memory"):
        if r in t:
            b = b.request(r, t[r])
    for r, q in t.get("requests", {}).items():
        b = b.request(r, q)
    if "scheduler" in t:
        b = b.scheduler(t["scheduler"])
    for key, values in t.get("requireLabels", {}).items():
        b = b.require_label(key, *values)
    for key in t.get("forbidLabels", ()):
        b = b.forbid_label(key)
    for key, value, effect in t.get("tolerations", ()):
        b = b.tolerate(key, value, effect)
    for k, v in t.get("labels", {}).items():
        b = b.label(k, v)
    for k, v in t.get("annotations", {}).items():
        b = b.annotate(k, v)
    if "node" in t:
        b = b.on_node(t["node"])
    if "priorityClass" in t:
        b = b.priority(t["priorityClass"])
    return b


def bound() -> Matcher:
    """Bound to a node — a sequencing wait, never an outcome: ``expect scheduledOn`` names the nodes."""
    return FnMatcher("bound to a node", lambda p: MATCH if (p.get("spec") or {}).get("nodeName") else pending())


def decided() -> Matcher:
    """Bound, or the scheduler has recorded why not (PodScheduled=False)."""

    def check(p: dict[str, Any]) -> Check:
        cond = pod_condition(p)
        if (p.get("spec") or {}).get("nodeName") or (cond and cond.get("status") == "False"):
            return MATCH
        return pending()

    return FnMatcher("bound or PodScheduled=False", check)


