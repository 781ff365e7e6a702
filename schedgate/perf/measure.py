"""Running one workload through the scheduler under test and through a baseline, in the same run.

Each *side* is a scheduler (a binary and a one-profile configuration) that runs only while its
turn lasts. The comparison makes ``nodes`` Node objects like the template, labelled
``schedgate.io/perf-run=<tag>``, once; every turn starts on them empty. A turn:

1. its pods, named ``t<turn>-...`` in the comparison's namespace;
2. ``backlog`` pods created while no scheduler serves their ``schedulerName``, then the side's
   scheduler is started: it lists them all and schedules them in one go. Throughput is
   (pods - 1) / (last - first ``Scheduled`` event), the scheduler's own pace, not the client's;
3. ``one_at_a_time`` pods, each created once the last is bound: create->bound (the ``Scheduled``
   event's µs time minus schedgate's clock at the create) of an idle scheduler, nothing queued;
4. its /metrics (extension point and plugin histograms, and ``process_cpu_seconds_total``, read also
   when it is ready and when the backlog is bound: CPU time per pod), then the scheduler is stopped and
   the turn's pods deleted (gone before the next turn: its scheduler hears no deletion). The namespace
   goes once, at the end.

A side whose configuration sets no ``clientConnection.qps``/``burst`` runs with them at 5,000: with
kube-scheduler's default (50 requests/s) the backlog is bound at the client limiter's pace (about 33
pods/s where each pod costs a bind, a status update and an event), which hides any slower scheduler.

Every pod must bind inside its turn's nodes; ``Unschedulable`` or ``SchedulerError`` fails at once.
The turns alternate A B B A (``rounds`` of each side), so a machine getting slower or faster during
the run does not favour either side; before them the baseline runs one warm-up turn (a backlog of up to
``WARM_UP`` pods), not measured.
"""

from __future__ import annotations

import logging
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from schedgate.cluster import Cluster
from schedgate.kube.watch import MATCH, Check, fail, pending, wait_for, wait_for_items
from schedgate.objects.builders import PodBuilder
from schedgate.objects.matchers import pod_condition, scheduled_on
from schedgate.objects.metrics import MetricsSnapshot
from schedgate.objects.pods import Namespace
from schedgate.report.timing import event_time
from schedgate.runtime.progress import LIVE
from schedgate.spec.cluster import HOSTNAME, NodeSpec
from schedgate.spec.schedconfig import SchedulerConfig

log = logging.getLogger("schedgate")
RUN_LABEL = "schedgate.io/perf-run"
UNDER_TEST, BASELINE = "under test", "baseline"
CPU_METRIC = "process_cpu_seconds_total"  # every Kubernetes component's /metrics has it (legacyregistry)
PHASES = ("create backlog", "start scheduler", "backlog bound", "one at a time", "stop scheduler", "delete pods")
WARM_UP = 200  # backlog pods of the unmeasured warm-up turn (after one of 50, the first turn was the slowest)


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a one-profile configuration and the binary that runs it."""

    label: str
    config: SchedulerConfig
    binary: Path | None = None  # None: the cluster's scheduler under test

    @property
    def profile(self) -> str:
        return self.config.profile_names[0]


@dataclass(frozen=True)
class Workload:
    """What each turn runs: ``nodes`` copies of ``node`` and pods made by ``pod(name)``."""

    nodes: int
    node: NodeSpec
    pod: Callable[[str], PodBuilder]
    backlog: int = 200
    one_at_a_time: int = 30
    rounds: int = 2
    timeout: float = 300.0


@dataclass
class Turn:
    """One side's turn: its figures and its scheduler's metrics."""

    side: str
    index: int
    throughput: float                  # pods/s of the backlog
    latencies: list[float]             # create->bound of the one-at-a-time pods, seconds
    metrics: MetricsSnapshot
    seconds: float                     # the whole turn, creating the backlog to its pods gone
    nodes: int = 0
    drain: float = 0.0                 # first to last Scheduled of the backlog
    pods: int = 0                      # backlog pods
    cpu: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the scheduler's CPU seconds: ready, backlog bound, end
    phases: dict[str, float] = field(default_factory=dict)  # seconds of each part of the turn (PHASES)

    @property
    def cpu_per_pod(self) -> float:
        """CPU seconds the scheduler process spent per backlog pod, from its ready to the backlog bound."""
        return (self.cpu[1] - self.cpu[0]) / self.pods if self.pods else 0.0


@dataclass
class Comparison:
    """Both sides' turns, in the order they ran."""

    workload: Workload
    sides: tuple[Side, Side]
    turns: list[Turn] = field(default_factory=list)

    def of(self, side: str) -> list[Turn]:
        return [t for t in self.turns if t.side == side]


def order(rounds: int) -> list[int]:
    """Which side (0: under test, 1: baseline) runs each turn: 0 1 1 0 0 1 1 0 ... (ABBA)."""
    return [(i + (i // 2)) % 2 for i in range(2 * rounds)]


def compare(cluster: Cluster, under_test: Side, baseline: Side, workload: Workload) -> Comparison:
    """Run ``workload`` through both sides, turns alternating (see :func:`order`)."""
    if under_test.profile == baseline.profile:
        raise ValueError(f"both sides serve profile {under_test.profile!r}; rename one")
    # Both sides' API clients unthrottled (unless a configuration sets its own limit): kube-scheduler's
    # default 50 requests/s caps a backlog at about 33 pods/s here, whatever the scheduler's speed.
    result = Comparison(workload, (replace(under_test, config=under_test.config.unthrottled()),
                                   replace(baseline, config=baseline.config.unthrottled())))
    tag = uuid.uuid4().hex[:5]
    specs = turn_nodes(workload, tag)
    names = [s.name for s in specs]
    cluster.nodes.add_many(specs)
    cluster.settle()  # the running schedulers have seen the nodes: no barrier falls inside the measurement
    ns = cluster.new_namespace(f"perf-{tag}")
    try:
        # A warm-up turn of the baseline, not measured: the first turn after a cluster starts ran at half the
        # pace of the others here, and it would always be the side under test's.
        log.info("performance: warm-up turn, %s (%s), not measured", BASELINE, baseline.profile, extra=LIVE)
        run_turn(cluster, result.sides[1], replace(workload, backlog=min(workload.backlog, WARM_UP),
                                                   one_at_a_time=min(workload.one_at_a_time, 5)),
                 names, ns, tag, -1)
        for i, which in enumerate(order(workload.rounds)):
            side = result.sides[which]
            log.info("performance: turn %d of %d, %s (%s), %d nodes", i + 1, 2 * workload.rounds, side.label,
                     side.profile, workload.nodes, extra=LIVE)
            result.turns.append(run_turn(cluster, side, workload, names, ns, tag, i))
    finally:
        ns.clean(timeout=workload.timeout)
        # The namespace controller then deletes the turns' events: wait for it, so that work does not fall
        # into the next test.
        wait_for_items(_Gone(cluster, ns.name), lambda items: MATCH if not items else pending("terminating"),
                       f"namespace {ns.name} gone", workload.timeout)
        cluster.nodes.remove_added(names)
    return result


def turn_nodes(workload: Workload, tag: str) -> list[NodeSpec]:
    """The comparison's nodes, made once: each turn's pods are gone before the next turn's scheduler
    starts, so every turn begins on the same empty nodes."""
    t = workload.node
    names = [f"perf-{tag}-{i}" for i in range(1, workload.nodes + 1)]
    return [replace(t, name=n, pool=f"perf-{tag}", labels={**t.labels, HOSTNAME: n, RUN_LABEL: tag}) for n in names]


def run_turn(cluster: Cluster, side: Side, workload: Workload, names: list[str], ns: Namespace, tag: str,
             index: int) -> Turn:
    """One turn (``index`` -1: the warm-up) on the comparison's nodes ``names``, labelled ``tag``, in its
    namespace ``ns``: the turn's pods are named ``t<turn>-...`` and deleted (gone) before it ends."""
    turn = f"t{index + 1}-"
    proc = None
    marks = [time.monotonic()]  # each part's start, and the end
    try:
        pods = [workload.pod(f"{turn}backlog-{i}").scheduler(side.profile).require_label(RUN_LABEL, tag)
                for i in range(1, workload.backlog + 1)]
        for b in pods:
            cluster.core.create_namespaced_pod(ns.name, cluster.pod_manifest(b))
        marks.append(time.monotonic())
        proc = cluster.start_scheduler(side.config, side.binary)
        cpu_ready = cpu_seconds(proc.metrics())
        marks.append(time.monotonic())
        wait_for_items(ns, _all_bound(set(names), workload.backlog), f"{workload.backlog} backlog pods bound "
                       f"by {side.label} ({side.profile})", workload.timeout)
        times = _scheduled_times(ns, workload.backlog, workload.timeout, f"{turn}backlog-")
        drain = max(times.values()) - min(times.values())
        cpu_backlog = cpu_seconds(proc.metrics())
        marks.append(time.monotonic())
        for i in range(1, workload.one_at_a_time + 1):
            b = workload.pod(f"{turn}single-{i}").scheduler(side.profile).require_label(RUN_LABEL, tag)
            pod = b.create(ns)
            wait_for(pod, scheduled_on(names), timeout=workload.timeout)
        singles = _scheduled_times(ns, workload.one_at_a_time, workload.timeout, f"{turn}single-")
        created = {p.name: p.created_wall for p in ns.pods}
        latencies = [max(0.0, at - created[name]) for name, at in singles.items()]
        metrics = proc.metrics()
        marks.append(time.monotonic())
    finally:
        if proc is not None:
            cluster.stop_scheduler(proc)
        marks.append(time.monotonic())
        ns.delete_pods(workload.timeout)  # gone: the next turn's scheduler hears no deletion of them
    marks.append(time.monotonic())
    return Turn(side=side.label, index=index, throughput=(len(times) - 1) / drain if drain > 0 else 0.0,
                latencies=latencies, metrics=metrics, seconds=marks[-1] - marks[0], nodes=len(names), drain=drain,
                pods=len(times), cpu=(cpu_ready, cpu_backlog, cpu_seconds(metrics)),
                phases={p: b - a for p, a, b in zip(PHASES, marks[:-1], marks[1:], strict=True)})


def cpu_seconds(m: MetricsSnapshot) -> float:
    """The scheduler process's CPU time so far (user and system), as its /metrics says."""
    return m.value(CPU_METRIC)


@dataclass(frozen=True)
class _Gone:
    """The namespace ``name``, as a collection of at most one."""

    cluster: Cluster
    name: str

    def describe(self) -> str:
        return f"namespace {self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.cluster.core.list_namespace, (), {"field_selector": f"metadata.name={self.name}"}

    def check_health(self) -> None:
        self.cluster.check_health()


def _all_bound(nodes: set[str], count: int) -> Callable[[list[dict[str, Any]]], Check]:
    allowed = sorted(nodes)[:3]

    def check(items: list[dict[str, Any]]) -> Check:
        left = 0
        for p in items:
            node = (p.get("spec") or {}).get("nodeName")
            name = p["metadata"]["name"]
            if node and node not in nodes:
                return fail(f"pod {name} bound to {node!r}, outside its turn's nodes ({', '.join(allowed)}, ...)")
            cond = pod_condition(p) or {}
            if not node and cond.get("status") == "False" and cond.get("reason") in ("Unschedulable",
                                                                                       "SchedulerError"):
                return fail(f"pod {name} is {cond['reason']}: {cond.get('message')!r}; a performance "
                            "workload must fit its nodes")
            left += not node
        return MATCH if len(items) >= count and not left else pending(f"{left} of {len(items)} not bound")

    return check


def _scheduled_times(ns: Namespace, count: int, timeout: float, prefix: str) -> dict[str, float]:
    """The ``Scheduled`` event time (µs, the scheduler's clock) of each pod named ``prefix*``, once ``count``
    of them have one (the scheduler writes events after binding, asynchronously)."""
    found: dict[str, float] = {}

    def have_all(items: Sequence[dict[str, Any]]) -> Check:
        found.clear()
        for e in items:
            reg = e.get("regarding") or {}
            at = event_time(e)
            name = reg.get("name", "")
            if e.get("reason") == "Scheduled" and reg.get("kind") == "Pod" and at is not None \
                    and name.startswith(prefix):
                found[name] = at
        return MATCH if len(found) >= count else pending(f"{len(found)} of {count} Scheduled events")

    wait_for_items(ns.events, have_all, f"{count} Scheduled events of pods {prefix}*", timeout)
    return dict(found)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0.0
