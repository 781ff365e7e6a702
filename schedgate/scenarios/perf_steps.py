"""``measurePerformance`` and ``expect: {performance: ...}``: the scheduler under test against a baseline in
the same run (:mod:`schedgate.perf`), with budgets relative to the baseline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from schedgate.errors import NotHere, SchedgateError
from schedgate.perf import BASELINE, UNDER_TEST, Budget, Side, Workload, check, compare, figures, perf_files
from schedgate.perf.budget import ALL_POINTS, QUANTILES, broken
from schedgate.scenarios.declare import TIMEOUT, Declared, DeclaredOutcome, Read, arg, read_first, read_string
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import MAX_PODS, Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.scenarios.template import Template
from schedgate.spec.cluster import MAX_NODES, NodeSpec
from schedgate.spec.jsontypes import CONFIG, STR, Schema, ref, whole
from schedgate.spec.roles import SCENARIO_ROLES
from schedgate.spec.schedconfig import API_VERSION, KIND, SchedulerConfig
from schedgate.spec.validate import MAX_SECONDS

BASELINES = ("in-tree", "same")
# The baseline of a configuration under test: (its configuration, the binary that runs it) for a mode of BASELINES.
Baseline = Callable[[SchedulerConfig, str], tuple[SchedulerConfig, Path | None]]
NODE_FIELDS = ("count", "like", "capacity", "labels", "annotations")


def _read_config(p: Parser, raw: Any, w: str) -> str | SchedulerConfig:
    """A role's name (SCENARIO_ROLES), else the configuration file it names, loaded."""
    name = p.v.string(raw, w)
    return name if name in SCENARIO_ROLES else p.config(name)


def _read_baseline(p: Parser, raw: Any, w: str) -> str:
    baseline = p.v.string(raw, w)
    if baseline not in BASELINES:
        p.v.fail(w, f"must be one of {', '.join(BASELINES)}, got {baseline!r}")
    return baseline


@dataclass(frozen=True)
class PerfNodes:
    """``count`` nodes like a pool (``node``: the pool's, with the step's capacity, labels and annotations over it)."""

    node: NodeSpec
    count: int


def _perf_node(p: Parser, raw: Any, w: str) -> NodeSpec:
    """The node of ``nodes`` (all but its count)."""
    v = p.v
    n = v.mapping(raw, w, required=("count", "like"), allowed=NODE_FIELDS)
    like = v.string(n["like"], f"{w}.like")
    if like not in p.pools:
        v.fail(f"{w}.like", f"no pool {like!r} in the cluster (pools: {', '.join(p.pools)})")
    pool = p.definition.pool(like)
    extra = v.resources(n.get("capacity") or {}, f"{w}.capacity")
    return NodeSpec(name="perf", pool="perf", labels={**pool.labels, **v.labels(n.get("labels") or {}, f"{w}.labels")},
                    taints=pool.taints, capacity={**pool.capacity, **extra}, allocatable={**pool.allocatable, **extra},
                    annotations={str(k): v.string(x, f"{w}.annotations.{k}") for k, x in
                                 v.mapping(n.get("annotations") or {}, f"{w}.annotations").items()})


def _node_count(p: Parser, raw: Any, w: str) -> int:
    return p.v.whole(raw["count"], f"{w}.count", minimum=1, maximum=MAX_NODES)


def _read_pods(p: Parser, raw: Any, w: str) -> Template:
    pods = p.template(raw, w)
    p.check_pod(pods, w)
    if pods.get("scheduler"):
        p.v.fail(f"{w}.scheduler", "each side's pods go to its own scheduler; remove 'scheduler'")
    return pods


def _whole(minimum: int, maximum: int) -> Read:
    return lambda p, x, w: p.v.whole(x, w, minimum=minimum, maximum=maximum)


NODES_DOC = "nodes made once, empty at each turn"
NODES: Schema = {"type": "object", "required": ["count", "like"], "additionalProperties": False,
                 "description": NODES_DOC, "properties": {
                     "count": whole(1, MAX_NODES), "like": {**STR, "description": "a pool"},
                     "capacity": ref("resources"), "labels": ref("labels"), "annotations": ref("annotations")}}


@step("measurePerformance")
@dataclass(frozen=True, kw_only=True)
class MeasurePerformance(Declared):
    """Run a workload through the scheduler under test and a baseline, turns alternating. ``config`` (a role
    or file) or ``profile`` (of the configuration under test) is the side under test; ``baseline``: its
    profile minus out-of-tree plugins (``in-tree``, the default) or the same (``same``), through the pinned
    kube-scheduler, unless ``--baseline-scheduler-config``/``--baseline-scheduler-binary`` say otherwise.
    ``nodes``: ``count`` nodes (made once, empty at each turn) ``like`` a pool, with ``capacity``, ``labels`` and
    ``annotations`` over the pool's; ``pods``: template fields; ``backlog``, ``oneAtATime``, ``rounds``;
    ``pairedRounds`` rounds of both sides at once, ``pairedPods`` pods each, for CPU per pod."""

    RULE: ClassVar[Schema] = {"oneOf": [{"required": ["config"]}, {"required": ["profile"]}]}

    config: str | SchedulerConfig | None = arg("config", CONFIG["description"],
                                               {**CONFIG, "examples": list(SCENARIO_ROLES)}, _read_config, default=None)
    profile: str | None = arg("profile", "a profile of the configuration under test", STR, read_string, default=None)
    baseline: str = arg("baseline", "in-tree (default): the profile without out-of-tree plugins; same: the profile "
                                    "itself", {"enum": list(BASELINES)}, _read_baseline, default="in-tree")
    nodes: PerfNodes = arg("nodes", NODES_DOC, NODES,
                           lambda p, x, w: PerfNodes(_perf_node(p, x, w), _node_count(p, x, w)))
    pods: Template = arg("pods", "template fields (no scheduler)", ref("template"), _read_pods)
    backlog: int = arg("backlog", "pods waiting when a side starts (200)", whole(2, MAX_PODS), _whole(2, MAX_PODS),
                       default=200)
    one_at_a_time: int = arg("oneAtATime", "pods created one at a time (30)", whole(2, MAX_PODS),
                             _whole(2, MAX_PODS), default=30)
    rounds: int = arg("rounds", "turns per side (2)", whole(1, 10), _whole(1, 10), default=2)
    paired_rounds: int = arg("pairedRounds", "rounds of both sides at once, for CPU per pod (0: none)", whole(0, 30),
                             _whole(0, 30), default=0)
    paired_pods: int = arg("pairedPods", "pods of each side in a paired round (100)", whole(10, MAX_PODS),
                           _whole(10, MAX_PODS), default=100)
    timeout: float = arg("timeout", "seconds each wait of a turn may take (default 300)",
                         {**TIMEOUT, "minimum": 1}, lambda p, x, w: p.v.number(x, w, minimum=1, maximum=MAX_SECONDS),
                         default=300.0)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """Exactly one of config and profile; then the fields in the order they were read before they were
        declared: the nodes' count after the pods."""
        if ("config" in m) == ("profile" in m):
            p.v.fail(w, "needs exactly one of: profile (of the configuration under test), config (a role or file)")
        values = read_first(cls, p, m, w, ("profile", "config", "baseline"))
        node = _perf_node(p, m["nodes"], f"{w}.nodes")
        values.update(read_first(cls, p, m, w, ("pods",)))
        return {**values, "nodes": PerfNodes(node, _node_count(p, m["nodes"], f"{w}.nodes"))}

    def _under_test(self, r: Run) -> SchedulerConfig:
        if self.profile is not None:
            return r.cluster.scheduler(self.profile).config.profile(self.profile)
        assert self.config is not None  # the rule
        return r.role_config(self.config) if isinstance(self.config, str) else self.config

    def _budget(self, r: Run) -> Budget | None:
        """The budget of the first ``performance`` outcome after this step: the one its turns and rounds decide."""
        steps = list(r.scenario.steps)
        here = next((i for i, s in enumerate(steps) if s.action is self), len(steps))
        for s in steps[here + 1:]:
            budget = getattr(getattr(s.action, "outcome", None), "budget", None)
            if isinstance(budget, Budget):
                return budget
        return None

    def run(self, r: Run) -> None:
        mine, budget = self._under_test(r), self._budget(r)
        if r.baseline is None:
            raise NotHere("this run has no baseline scheduler (the pytest plugin provides one)")
        base_cfg, base_bin = r.baseline(mine, self.baseline)
        under_test = Side(UNDER_TEST, mine.renamed("-under-test"))
        baseline = Side(BASELINE, base_cfg.renamed("-baseline"), base_bin)
        workload = Workload(nodes=self.nodes.count, node=self.nodes.node, pod=self.pods.builder, backlog=self.backlog,
                            one_at_a_time=self.one_at_a_time, rounds=self.rounds, timeout=self.timeout,
                            paired_rounds=self.paired_rounds, paired_pods=self.paired_pods,
                            cpu_budget=budget.cpu_per_pod if budget else None)
        # What the turns decide (CPU per pod is the paired rounds' where there are any): a budget they break
        # gets one more set of turns, judged over all of them (perf.measure.ADDED_TURNS).
        on_turns = replace(budget, cpu_per_pod=None) if budget and self.paired_rounds else budget
        r.performance = compare(r.cluster, under_test, baseline, workload,
                                broken=(lambda c: broken(figures(c), on_turns)) if on_turns else None)
        f = figures(r.performance)
        for name, mine_, theirs, ratio in f.rows()[:5 if f.paired else 4]:
            r.figure(f"{name}: under test / baseline", f"{mine_} / {theirs} = {ratio}")
        if r.report:
            for fname, text in perf_files(r.performance, f).items():
                r.report.attach(fname, text)


def _budget(key: str, what: str) -> Schema:
    return {"type": "object", "required": [key], "additionalProperties": False, "description": what,
            "properties": {key: {"type": "number", "minimum": 0.001, "maximum": 1000}}}


def _ratio(p: Parser, raw: Any, w: str, key: str) -> float:
    """``{key: R}``: a ratio to the baseline."""
    return p.v.number(p.v.mapping(raw, w, required=(key,), allowed=(key,))[key], f"{w}.{key}",
                      minimum=0.001, maximum=1000)


def _ratio_arg(key: str, bound: str, doc: str) -> Any:
    """An optional budget ``key: {bound: R}``."""
    return arg(key, doc, _budget(bound, doc), lambda p, x, w: _ratio(p, x, w, bound), default=None)


POINTS_DOC = "extension point (or \"*\") -> its p50 and p99 budgets"


def _points(p: Parser, raw: Any, w: str) -> dict[str, dict[str, float]]:
    points: dict[str, dict[str, float]] = {}
    for point, body in p.v.mapping(raw or {}, w).items():
        pw = f"{w}.{point}"
        qs = p.v.mapping(body, pw, allowed=tuple(QUANTILES))
        if not qs:
            p.v.fail(pw, "needs a budget: p50 or p99")
        points[str(point)] = {q: _ratio(p, x, f"{pw}.{q}", "atMost") for q, x in qs.items()}
    return points


@outcome("performance", about_pods=False)
@dataclass(frozen=True)
class Performance(DeclaredOutcome):
    """Budgets on the last ``measurePerformance``, as ratios to the baseline: ``throughput: {atLeast: R}``,
    ``p50``/``p99``: ``{atMost: R}`` (create->bound), ``cpuPerPod: {atMost: R}`` (the scheduler's CPU
    time per pod: of the paired rounds when there are some, its whole 95 % interval within R; else per
    backlog pod of the turns), ``extensionPoints: {Filter: {p99: {atMost: R}}, PreBind:
    {p50: {atMost: R}}, ...}`` (``"*"``: every point)."""

    RULE: ClassVar[Schema] = {"anyOf": [{"required": [k]} for k in (
        "throughput", "p50", "p99", "cpuPerPod", "extensionPoints")]}

    throughput: float | None = _ratio_arg("throughput", "atLeast", "under test / baseline pods/s")
    p50: float | None = _ratio_arg("p50", "atMost", "create->bound p50, under test / baseline")
    p99: float | None = _ratio_arg("p99", "atMost", "create->bound p99, under test / baseline")
    cpu_per_pod: float | None = _ratio_arg(
        "cpuPerPod", "atMost", "the scheduler process's CPU seconds per backlog pod, under test / baseline")
    extension_points: dict[str, dict[str, float]] | None = arg(
        "extensionPoints", POINTS_DOC, {"type": "object", "description": POINTS_DOC, "additionalProperties": {
            "type": "object", "minProperties": 1, "additionalProperties": False,
            "properties": {q: _budget("atMost", f"{q}, under test / baseline") for q in ("p50", "p99")}}},
        _points, default=None)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """One budget at least; the extension points are read first, as before."""
        if not m:
            p.v.fail(w, "needs a budget: throughput, p50, p99, cpuPerPod or extensionPoints")
        return read_first(cls, p, m, w, ("extension_points",))

    @property
    def budget(self) -> Budget:
        return Budget(throughput=self.throughput, p50=self.p50, p99=self.p99, cpu_per_pod=self.cpu_per_pod,
                      extension_points=self.extension_points or {})

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


def baseline_from(given: SchedulerConfig | None, binary: Path | None, pinned: Callable[[], Path]) -> Baseline:
    """(configuration, binary) of the baseline of a one-profile configuration under test: ``given`` (its profile
    of that name, or its only one), else the configuration itself (``same``) or without its out-of-tree plugins
    (``in-tree``; of a black box, kube-scheduler's default plugins); run by ``binary``, else the pinned
    kube-scheduler (``pinned()``)."""

    def resolve(mine: SchedulerConfig, mode: str) -> tuple[SchedulerConfig, Path | None]:
        run_by = binary or pinned()
        profile = mine.profile_names[0]
        if given is not None:
            if profile in given.profile_names:
                return given.profile(profile), run_by
            if len(given.profile_names) == 1:
                return given, run_by
            raise SchedgateError(f"--baseline-scheduler-config {given.source}: no profile {profile!r} and more "
                                 f"than one other ({', '.join(given.profile_names)}); name one {profile!r}")
        if mode == "same":
            return mine, run_by
        if mine.black_box is not None:  # no plugins to keep: kube-scheduler's own, under the profile's name
            doc = {"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"schedulerName": profile}]}
            return SchedulerConfig(source=f"{mine.source} (in-tree: kube-scheduler's default plugins)", doc=doc,
                                   fragment=False), run_by
        return mine.in_tree_only()[0], run_by

    return resolve
