"""``measurePerformance`` and ``expect: {performance: ...}``: the scheduler under test against a baseline in
the same run (:mod:`schedgate.perf`), with budgets relative to the baseline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.errors import NotHere
from schedgate.perf import BASELINE, UNDER_TEST, Budget, Side, Workload, check, compare, figures, perf_files
from schedgate.perf.budget import ALL_POINTS, QUANTILES
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import MAX_PODS, Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.scenarios.template import Template
from schedgate.spec.cluster import MAX_NODES, NodeSpec
from schedgate.spec.roles import SCENARIO_ROLES
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.validate import MAX_SECONDS

BASELINES = ("in-tree", "same")
NODE_FIELDS = ("count", "like", "capacity", "labels", "annotations")


@step("measurePerformance")
@dataclass(frozen=True)
class MeasurePerformance:
    """Run a workload through the scheduler under test and a baseline, turns alternating. ``config`` (a role
    or file) or ``profile`` (of the configuration under test) is the side under test; ``baseline``: its
    profile minus out-of-tree plugins (``in-tree``, the default) or the same (``same``), through the pinned
    kube-scheduler, unless ``--baseline-scheduler-config``/``--baseline-scheduler-binary`` say otherwise.
    ``nodes``: ``count`` nodes (made once, empty at each turn) ``like`` a pool, with ``capacity``, ``labels`` and
    ``annotations`` over the pool's; ``pods``: template fields; ``backlog``, ``oneAtATime``, ``rounds``;
    ``pairedRounds`` rounds of both sides at once, ``pairedPods`` pods each, for CPU per pod."""

    role: str | None
    config: SchedulerConfig | None
    profile: str | None
    baseline: str
    node: NodeSpec
    count: int
    pods: Template
    backlog: int
    one_at_a_time: int
    rounds: int
    timeout: float
    paired_rounds: int = 0
    paired_pods: int = 100

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> MeasurePerformance:
        v = p.v
        m = v.mapping(raw, w, required=("nodes", "pods"), allowed=(
            "config", "profile", "baseline", "nodes", "pods", "backlog", "oneAtATime", "rounds", "pairedRounds",
            "pairedPods", "timeout"))
        if ("config" in m) == ("profile" in m):
            v.fail(w, "needs exactly one of: profile (of the configuration under test), config (a role or file)")
        role = config = profile = None
        if "profile" in m:
            profile = v.string(m["profile"], f"{w}.profile")
        else:
            name = v.string(m["config"], f"{w}.config")
            role, config = (name, None) if name in SCENARIO_ROLES else (None, p.config(name))
        baseline = v.string(m.get("baseline", "in-tree"), f"{w}.baseline")
        if baseline not in BASELINES:
            v.fail(f"{w}.baseline", f"must be one of {', '.join(BASELINES)}, got {baseline!r}")
        n = v.mapping(m["nodes"], f"{w}.nodes", required=("count", "like"), allowed=NODE_FIELDS)
        like = v.string(n["like"], f"{w}.nodes.like")
        if like not in p.pools:
            v.fail(f"{w}.nodes.like", f"no pool {like!r} in the cluster (pools: {', '.join(p.pools)})")
        pool = p.definition.pool(like)
        extra = v.resources(n.get("capacity") or {}, f"{w}.nodes.capacity")
        node = NodeSpec(name="perf", pool="perf", labels={**pool.labels, **v.labels(n.get("labels") or {},
                        f"{w}.nodes.labels")}, taints=pool.taints, capacity={**pool.capacity, **extra},
                        allocatable={**pool.allocatable, **extra},
                        annotations={str(k): v.string(x, f"{w}.nodes.annotations.{k}") for k, x in
                                     v.mapping(n.get("annotations") or {}, f"{w}.nodes.annotations").items()})
        pods = p.template(m["pods"], f"{w}.pods")
        p.check_pod(pods, f"{w}.pods")
        if pods.get("scheduler"):
            v.fail(f"{w}.pods.scheduler", "each side's pods go to its own scheduler; remove 'scheduler'")
        return cls(role=role, config=config, profile=profile, baseline=baseline, node=node,
                   count=v.whole(n["count"], f"{w}.nodes.count", minimum=1, maximum=MAX_NODES), pods=pods,
                   backlog=v.whole(m.get("backlog", 200), f"{w}.backlog", minimum=2, maximum=MAX_PODS),
                   one_at_a_time=v.whole(m.get("oneAtATime", 30), f"{w}.oneAtATime", minimum=2, maximum=MAX_PODS),
                   rounds=v.whole(m.get("rounds", 2), f"{w}.rounds", minimum=1, maximum=10),
                   paired_rounds=v.whole(m.get("pairedRounds", 0), f"{w}.pairedRounds", minimum=0, maximum=30),
                   paired_pods=v.whole(m.get("pairedPods", 100), f"{w}.pairedPods", minimum=10, maximum=MAX_PODS),
                   timeout=v.number(m.get("timeout", 300), f"{w}.timeout", minimum=1, maximum=MAX_SECONDS))

    def _under_test(self, r: Run) -> SchedulerConfig:
        if self.profile is not None:
            return r.cluster.scheduler(self.profile).config.profile(self.profile)
        cfg = r.role_config(self.role) if self.role else self.config
        assert cfg is not None
        return cfg

    def run(self, r: Run) -> None:
        mine = self._under_test(r)
        if r.baseline is None:
            raise NotHere("this run has no baseline scheduler (the pytest plugin provides one)")
        base_cfg, base_bin = r.baseline(mine, self.baseline)
        under_test = Side(UNDER_TEST, mine.renamed("-under-test"))
        baseline = Side(BASELINE, base_cfg.renamed("-baseline"), base_bin)
        workload = Workload(nodes=self.count, node=self.node, pod=self.pods.builder, backlog=self.backlog,
                            one_at_a_time=self.one_at_a_time, rounds=self.rounds, timeout=self.timeout,
                            paired_rounds=self.paired_rounds, paired_pods=self.paired_pods)
        r.performance = compare(r.cluster, under_test, baseline, workload)
        f = figures(r.performance)
        for name, mine_, theirs, ratio in f.rows()[:5 if f.paired else 4]:
            r.figure(f"{name}: under test / baseline", f"{mine_} / {theirs} = {ratio}")
        if r.report:
            for fname, text in perf_files(r.performance, f).items():
                r.report.attach(fname, text)


@outcome("performance", about_pods=False)
@dataclass(frozen=True)
class Performance:
    """Budgets on the last ``measurePerformance``, as ratios to the baseline: ``throughput: {atLeast: R}``,
    ``p50``/``p99``: ``{atMost: R}`` (create->bound), ``cpuPerPod: {atMost: R}`` (the scheduler's CPU
    time per pod: of the paired rounds when there are some, its whole 95 % interval within R; else per
    backlog pod of the turns), ``extensionPoints: {Filter: {p99: {atMost: R}}, PreBind:
    {p50: {atMost: R}}, ...}`` (``"*"``: every point)."""

    budget: Budget

    @classmethod
    def parse(cls, p: Parser, body: Any, m: dict[str, Any], w: str) -> Performance:
        v = p.v
        b = v.mapping(body, w, allowed=("throughput", "p50", "p99", "cpuPerPod", "extensionPoints"))
        if not b:
            v.fail(w, "needs a budget: throughput, p50, p99, cpuPerPod or extensionPoints")

        def ratio(raw: Any, where: str, key: str) -> float:
            return v.number(v.mapping(raw, where, required=(key,), allowed=(key,))[key], f"{where}.{key}",
                            minimum=0.001, maximum=1000)

        points: dict[str, dict[str, float]] = {}
        for point, body_ in v.mapping(b.get("extensionPoints") or {}, f"{w}.extensionPoints").items():
            pw = f"{w}.extensionPoints.{point}"
            qs = v.mapping(body_, pw, allowed=tuple(QUANTILES))
            if not qs:
                v.fail(pw, "needs a budget: p50 or p99")
            points[str(point)] = {q: ratio(raw, f"{pw}.{q}", "atMost") for q, raw in qs.items()}
        return cls(budget=Budget(
            throughput=ratio(b["throughput"], f"{w}.throughput", "atLeast") if "throughput" in b else None,
            p50=ratio(b["p50"], f"{w}.p50", "atMost") if "p50" in b else None,
            p99=ratio(b["p99"], f"{w}.p99", "atMost") if "p99" in b else None,
            cpu_per_pod=ratio(b["cpuPerPod"], f"{w}.cpuPerPod", "atMost") if "cpuPerPod" in b else None,
            extension_points=points))

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        if r.performance is None:
            raise AssertionError("expect performance needs a measurePerformance step before it")
        f = figures(r.performance)
        for point, limits in sorted(self.budget.extension_points.items()):
            for q in sorted(limits):
                ratio = f.point_ratio(point, q) if point != ALL_POINTS else None
                if ratio is not None:
                    r.figure(f"step {index}: {point} {q} under test / baseline", f"{ratio:.2f}")
        check(r.performance, self.budget)
