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

Then, with ``paired_rounds``, CPU per pod is measured with both sides' schedulers running at once, each on
its own copy of the nodes: in each round schedgate creates ``paired_pods`` pods of each side, one of A,
one of B, in turn, waits for all to bind, deletes them and waits until they are gone; each scheduler's
CPU time over that round, over its pods, is its CPU per pod. The machine's speed changes from second to
second on a shared host (the same build's CPU per pod ranged 2.7-3.8 ms from one turn to the next here,
with the API server's moving with it), and a paired round sees the same machine on both sides: the same
build's ratio ranged 0.95-1.10 per round. The rounds' ratios give a 95 % confidence interval
(:class:`PairedCpu`). A round counts the pods' deletion too, so a scheduler's debt from one round is not
paid in the next. One round of ``PAIRED_WARM_UP`` pods runs first, not measured.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from schedgate.cluster import Cluster
from schedgate.kube.watch import MATCH, pending, wait_for, wait_for_items
from schedgate.objects.builders import PodBuilder
from schedgate.objects.matchers import scheduled_on
from schedgate.objects.metrics import MetricsSnapshot
from schedgate.objects.pods import Namespace
from schedgate.perf.stats import MIN_PAIRED_ROUNDS, PairedRound, straddles
from schedgate.perf.waits import (
    NamespaceGone,
    all_bound,
    bound_by_side,
    cpu_seconds,
    create_all,
    process_cpu,
    scheduled_times,
)
from schedgate.runtime.progress import LIVE
from schedgate.runtime.scheduler import Scheduler
from schedgate.spec.cluster import HOSTNAME, NodeSpec
from schedgate.spec.schedconfig import SchedulerConfig

log = logging.getLogger("schedgate")
RUN_LABEL = "schedgate.io/perf-run"
UNDER_TEST, BASELINE = "under test", "baseline"
PHASES = ("create backlog", "start scheduler", "backlog bound", "one at a time", "stop scheduler", "delete pods")
WARM_UP = 200  # backlog pods of the unmeasured warm-up turn (after one of 50, the first turn was the slowest)
PAIRED_WARM_UP = 20  # pods of each side in the unmeasured first paired round
PAIRED_TAG = "-b"  # the baseline's copy of the nodes in the paired rounds: label <tag>-b
# Rounds added while CPU per pod is undecided, as a multiple of those asked for: on kind (both schedulers in
# the control-plane container beside the API server) twelve rounds of the correct build once left 0.943-1.143
# around a budget of 1.12; the ratio itself never adds a round.
ADDED_ROUNDS = 2
# Sets of turns (A B B A) added when the turns break a budget, judged then over all turns: on kind one slow
# turn of the correct build once put its Filter p99 at 3.62 times the baseline's (two histogram buckets)
# against 2.5. A real regression breaks it again over twice the turns; noise seldom does. Where each round
# of turns (A B, then B A) breaks it on its own, none is added (:func:`every_round_breaks`).
ADDED_TURNS = 1


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
    paired_rounds: int = 0      # rounds of both sides at once (CPU per pod), after the turns; 0: none
    paired_pods: int = 100      # pods of each side in a paired round
    # The cpuPerPod budget the paired rounds are for: while its 95 % interval straddles it after the rounds
    # asked for, rounds are added, one at a time, up to ADDED_ROUNDS times as many (a shared machine's noise, not
    # a verdict).
    cpu_budget: float | None = None


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
    """Both sides' turns, in the order they ran, and the paired rounds after them."""

    workload: Workload
    sides: tuple[Side, Side]
    turns: list[Turn] = field(default_factory=list)
    paired: list[PairedRound] = field(default_factory=list)

    def of(self, side: str) -> list[Turn]:
        return [t for t in self.turns if t.side == side]


def order(rounds: int) -> list[int]:
    """Which side (0: under test, 1: baseline) runs each turn: 0 1 1 0 0 1 1 0 ... (ABBA)."""
    return [(i + (i // 2)) % 2 for i in range(2 * rounds)]


def every_round_breaks(c: Comparison, broken: Callable[[Comparison], list[str]] | None) -> bool:
    """Whether each round of turns (one turn of each side, as they ran) breaks a budget on its own: a
    regression, not one slow turn, which more turns would only confirm."""
    rounds = [c.turns[i:i + 2] for i in range(0, len(c.turns), 2)]
    return broken is not None and bool(rounds) and all(broken(replace(c, turns=r, paired=[])) for r in rounds)


def compare(cluster: Cluster, under_test: Side, baseline: Side, workload: Workload,
            broken: Callable[[Comparison], list[str]] | None = None) -> Comparison:
    """Run ``workload`` through both sides, turns alternating (see :func:`order`); while ``broken`` names a
    budget the turns so far break, up to ``ADDED_TURNS`` more sets of them."""
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
        turns = order(workload.rounds)
        for added in range(ADDED_TURNS + 1):
            if added:
                why = broken(result) if broken is not None else []
                if not why:
                    break
                if every_round_breaks(result, broken):
                    log.info("performance: %s in each round of turns; no turn added", why[0], extra=LIVE)
                    break
                log.info("performance: %s after %d turns; %d more, judged with them", why[0], len(result.turns),
                         len(turns), extra=LIVE)
            for which in turns:
                side, i = result.sides[which], len(result.turns)
                log.info("performance: turn %d of %d, %s (%s), %d nodes", i + 1, len(turns) * (added + 1), side.label,
                         side.profile, workload.nodes, extra=LIVE)
                result.turns.append(run_turn(cluster, side, workload, names, ns, tag, i))
        if workload.paired_rounds:
            result.paired = run_paired(cluster, result.sides, workload, names, ns, tag)
    finally:
        ns.clean(timeout=workload.timeout)
        # The namespace controller then deletes the turns' events: wait for it, so that work does not fall
        # into the next test.
        wait_for_items(NamespaceGone(cluster, ns.name), lambda items: MATCH if not items else pending("terminating"),
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
        create_all(cluster, ns, [workload.pod(f"{turn}backlog-{i}").scheduler(side.profile)
                                 .require_label(RUN_LABEL, tag) for i in range(1, workload.backlog + 1)])
        marks.append(time.monotonic())
        proc = cluster.start_scheduler(side.config, side.binary)
        cpu_ready = cpu_seconds(proc.metrics())
        marks.append(time.monotonic())
        wait_for_items(ns, all_bound(set(names), workload.backlog), f"{workload.backlog} backlog pods bound "
                       f"by {side.label} ({side.profile})", workload.timeout)
        times = scheduled_times(ns, workload.backlog, workload.timeout, f"{turn}backlog-")
        drain = max(times.values()) - min(times.values())
        cpu_backlog = cpu_seconds(proc.metrics())
        marks.append(time.monotonic())
        for i in range(1, workload.one_at_a_time + 1):
            b = workload.pod(f"{turn}single-{i}").scheduler(side.profile).require_label(RUN_LABEL, tag)
            pod = b.create(ns)
            wait_for(pod, scheduled_on(names), timeout=workload.timeout)
        singles = scheduled_times(ns, workload.one_at_a_time, workload.timeout, f"{turn}single-")
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


def run_paired(cluster: Cluster, sides: tuple[Side, Side], workload: Workload, names: list[str], ns: Namespace,
               tag: str) -> list[PairedRound]:
    """The paired rounds: both sides' schedulers at once, the side under test on the comparison's nodes
    ``names`` (label ``tag``), the baseline on a copy of them made now (label ``tag`` + ``PAIRED_TAG``)."""
    copy = turn_nodes(workload, tag + PAIRED_TAG)
    cluster.nodes.add_many(copy)
    cluster.settle()
    placed = {sides[0].profile: (set(names), tag), sides[1].profile: ({s.name for s in copy}, tag + PAIRED_TAG)}
    procs: list[Scheduler] = []
    rounds: list[PairedRound] = []
    try:
        for side in sides:
            procs.append(cluster.start_scheduler(side.config, side.binary))
        i = -1
        most = (1 + ADDED_ROUNDS) * workload.paired_rounds
        while i < workload.paired_rounds or (
                i < most and straddles(rounds, workload.cpu_budget, MIN_PAIRED_ROUNDS)):
            pods = PAIRED_WARM_UP if i < 0 else workload.paired_pods
            added = " (added: CPU per pod still undecided)" if i >= workload.paired_rounds else ""
            log.info("performance: paired round %d of %d%s, both sides at once, %d pods each", i + 1,
                     workload.paired_rounds, added, pods, extra=LIVE)
            before = [process_cpu(p) for p in procs]
            t0 = time.monotonic()
            create_all(cluster, ns, [workload.pod(f"p{i + 1}-{side.profile}-{k}").scheduler(side.profile)
                                     .require_label(RUN_LABEL, placed[side.profile][1])
                                     for k in range(1, pods + 1) for side in sides])
            wait_for_items(ns, bound_by_side(placed, 2 * pods), f"{pods} pods of each side bound (paired round "
                           f"{i + 1})", workload.timeout)
            ns.delete_pods(workload.timeout)
            after = [process_cpu(p) for p in procs]
            if i >= 0:
                rounds.append(PairedRound(index=i, pods=pods, under_test=after[0] - before[0],
                                          baseline=after[1] - before[1], seconds=time.monotonic() - t0))
            i += 1
    finally:
        for p in procs:
            cluster.stop_scheduler(p)
        ns.delete_pods(workload.timeout)
        cluster.nodes.remove_added([s.name for s in copy])
    return rounds
