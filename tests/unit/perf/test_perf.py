"""Performance gates without a cluster: histogram quantiles, the turn order, the baseline's configuration,
budgets and their messages, the scenario-file grammar and the artifacts (the measured runs are the
``performance-*`` scenario files and their mutants)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.objects.metrics import parse_metrics
from schedgate.perf import BASELINE, UNDER_TEST, Budget, Comparison, Side, Turn, Workload, broken, figures, perf_files
from schedgate.perf.histogram import EXTENSION_POINTS, merged, quantile
from schedgate.perf.measure import order, turn_nodes
from schedgate.perf.stats import PairedCpu, PairedRound
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import NodeSpec
from schedgate.spec.schedconfig import IN_TREE_PLUGINS, load_scheduler_config, parse_scheduler_config

ROOT = Path(__file__).resolve().parents[3]


def histogram(name: str, labels: str, buckets: dict[str, int]) -> str:
    rows = [f'{name}_bucket{{{labels},le="{le}"}} {n}' for le, n in buckets.items()]
    total = list(buckets.values())[-1]
    return "\n".join([f"# TYPE {name} histogram", *rows, f"{name}_sum{{{labels}}} 1",
                      f"{name}_count{{{labels}}} {total}"])


def point(ep: str, buckets: dict[str, int], plugin: str = "") -> str:
    text = histogram(EXTENSION_POINTS, f'extension_point="{ep}",profile="p",status="Success"', buckets)
    if plugin:
        text += "\n" + histogram("scheduler_plugin_execution_duration_seconds",
                                 f'extension_point="{ep}",plugin="{plugin}",status="Success"', buckets)
    return text


def test_a_quantile_is_interpolated_inside_its_bucket_and_floored_in_the_last():
    snap = parse_metrics(point("Filter", {"0.001": 50, "0.002": 100, "+Inf": 100}))
    q = quantile(snap, EXTENSION_POINTS, 0.75, extension_point="Filter")
    assert q is not None and q.seconds == pytest.approx(0.0015) and not q.above
    over = parse_metrics(point("Filter", {"0.001": 10, "0.002": 10, "+Inf": 100}))
    q = quantile(over, EXTENSION_POINTS, 0.99, extension_point="Filter")
    assert q is not None and q.above and q.seconds == pytest.approx(0.002) and q.shown() == ">2.00 ms"
    assert quantile(snap, EXTENSION_POINTS, 0.5, extension_point="Bind") is None


def test_two_runs_merge_by_adding_their_buckets():
    a = parse_metrics(point("Filter", {"0.001": 100, "0.002": 100, "+Inf": 100}))
    b = parse_metrics(point("Filter", {"0.001": 0, "0.002": 100, "+Inf": 100}))
    q = quantile(merged([a, b]), EXTENSION_POINTS, 0.5, extension_point="Filter")
    assert q is not None and q.count == 200 and q.seconds == pytest.approx(0.001)


def test_turns_alternate_abba_so_drift_favours_neither_side():
    assert order(1) == [0, 1]
    assert order(2) == [0, 1, 1, 0]
    assert order(3) == [0, 1, 1, 0, 0, 1]


def test_the_comparison_has_nodes_of_its_own_name_and_label():
    spec = NodeSpec(name="x", pool="x", labels={"a": "b"}, taints=(), capacity={"cpu": "4"}, allocatable={"cpu": "4"},
                    annotations={"k": "v"})
    wl = Workload(nodes=3, node=spec, pod=lambda n: None)  # type: ignore[arg-type, return-value]
    nodes = turn_nodes(wl, "abc-1")
    assert [n.name for n in nodes] == ["perf-abc-1-1", "perf-abc-1-2", "perf-abc-1-3"]
    assert nodes[0].labels == {"a": "b", "kubernetes.io/hostname": "perf-abc-1-1", "schedgate.io/perf-run": "abc-1"}
    assert nodes[2].annotations == {"k": "v"} and nodes[2].capacity == {"cpu": "4"}


def test_the_in_tree_baseline_drops_out_of_tree_plugins_and_keeps_the_rest():
    cfg = load_scheduler_config(ROOT / "clusters/profiles/network-slots.yaml")
    base, dropped = cfg.in_tree_only()
    assert dropped == ["NetworkSlots"]
    prof = base.doc["profiles"][0]
    assert prof["plugins"]["multiPoint"]["enabled"] == []
    assert prof["plugins"]["bind"] == {"disabled": [{"name": "DefaultBinder"}], "enabled": [{"name": "DefaultBinder"}]}
    assert prof.get("pluginConfig") == []
    star = parse_scheduler_config({"profiles": [{"schedulerName": "s", "plugins": {"score": {
        "disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}, {"name": "Mine"}]}}}]})
    kept, gone = star.in_tree_only()
    assert gone == ["Mine"] and kept.doc["profiles"][0]["plugins"]["score"]["disabled"] == [{"name": "*"}]
    packing = load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")
    assert packing.in_tree_only()[1] == []


@pytest.mark.parametrize("plugins", [
    pytest.param({"multiPoint": {"enabled": [{"name": "MyAffinity"}], "disabled": [{"name": "NodeAffinity"}]}},
                 id="multiPoint"),
    pytest.param({"filter": {"enabled": [{"name": "MyAffinity"}], "disabled": [{"name": "NodeAffinity"}]},
                  "score": {"enabled": [{"name": "MyAffinity"}], "disabled": [{"name": "NodeAffinity"}]}},
                 id="filter-and-score"),
    pytest.param({"multiPoint": {"disabled": [{"name": "NodeAffinity"}]},
                  "filter": {"enabled": [{"name": "MyAffinity"}]}}, id="disabled-at-multiPoint"),
])
def test_the_in_tree_baseline_enables_again_the_in_tree_plugin_a_dropped_one_replaced(plugins):
    """A profile that swaps NodeAffinity for a wrapper: its baseline, without the wrapper, must not run
    without node affinity (its pods would land outside the measured nodes)."""
    cfg = parse_scheduler_config({"profiles": [{"schedulerName": "s", "plugins": plugins,
                                                "pluginConfig": [{"name": "MyAffinity", "args": {}}]}]})
    base, dropped = cfg.in_tree_only()
    assert dropped == ["MyAffinity"]
    after = base.doc["profiles"][0]["plugins"]
    assert not any(p["name"] == "NodeAffinity" for point in after.values() for p in point.get("disabled") or []), after
    assert not any(p["name"] == "MyAffinity" for point in after.values() for p in point.get("enabled") or []), after


def test_an_in_tree_plugin_disabled_where_nothing_replaces_it_stays_disabled_in_the_baseline():
    cfg = parse_scheduler_config({"profiles": [{"schedulerName": "s", "plugins": {
        "score": {"disabled": [{"name": "ImageLocality"}]}, "filter": {"enabled": [{"name": "Mine"}]}}}]})
    base, _ = cfg.in_tree_only()
    assert base.doc["profiles"][0]["plugins"]["score"]["disabled"] == [{"name": "ImageLocality"}]


def test_the_in_tree_plugin_list_is_the_pinned_schedulers_own():
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, cwd=ROOT / "go").stdout
    except OSError:
        pytest.skip("no Go toolchain")
    version = re.search(r"^\s*k8s.io/kubernetes (v\S+)", (ROOT / "go/go.mod").read_text(), re.M)
    assert version
    names = Path(cache.strip()) / f"k8s.io/kubernetes@{version.group(1)}/pkg/scheduler/framework/plugins/names/names.go"
    if not names.is_file():
        pytest.skip(f"{names}: not in the module cache (make tools fetches it)")
    assert set(re.findall(r'^\s*\w+\s*=\s*"(\w+)"', names.read_text(), re.M)) == IN_TREE_PLUGINS


def test_a_side_is_unthrottled_unless_its_configuration_sets_a_rate():
    cfg = load_scheduler_config(ROOT / "clusters/profiles/network-slots.yaml")
    assert cfg.unthrottled().doc["clientConnection"] == {"qps": 5000, "burst": 5000}
    own = parse_scheduler_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                  "clientConnection": {"qps": 20}, "profiles": [{"schedulerName": "s"}]})
    assert own.unthrottled() is own
    assert cfg.profile("gpu-network-slots").profile_names == ["gpu-network-slots"]
    with pytest.raises(DefinitionError, match="no profile 'x'"):
        cfg.profile("x")


def comparison(ut_filter: dict[str, int], base_filter: dict[str, int], tp: tuple[float, float] = (100.0, 100.0),
               lat: tuple[float, float] = (0.02, 0.02), cpu: tuple[float, float] = (3.0, 3.0)) -> Comparison:
    cfg = load_scheduler_config(ROOT / "clusters/profiles/network-slots.yaml")
    spec = NodeSpec(name="x", pool="x", labels={}, taints=(), capacity={}, allocatable={})
    c = Comparison(Workload(nodes=10, node=spec, pod=lambda n: None),  # type: ignore[arg-type, return-value]
                   (Side(UNDER_TEST, cfg.renamed("-u")), Side(BASELINE, cfg.renamed("-b"))))
    for i, side in enumerate((UNDER_TEST, BASELINE, BASELINE, UNDER_TEST)):
        mine = side == UNDER_TEST
        text = point("Filter", ut_filter if mine else base_filter, plugin="NetworkSlots" if mine else "")
        c.turns.append(Turn(side=side, index=i, throughput=tp[0] if mine else tp[1],
                            latencies=[lat[0] if mine else lat[1]] * 30, metrics=parse_metrics(text), seconds=1.0,
                            pods=100, cpu=(0.05, 0.05 + (cpu[0] if mine else cpu[1]), 9.0)))
    return c


def test_budgets_hold_for_equal_sides_and_name_the_point_and_plugin_that_grew():
    fast = {"0.0001": 0, "0.0002": 100, "+Inf": 100}
    slow = {"0.0001": 0, "0.0002": 0, "0.05": 100, "+Inf": 100}
    budget = Budget(throughput=0.8, p50=1.5, p99=1.5, extension_points={"Filter": {"p99": 3.0}})
    assert broken(figures(comparison(fast, fast)), budget) == []
    f = figures(comparison(slow, fast, tp=(30.0, 100.0), lat=(0.05, 0.02)))
    problems = broken(f, budget)
    assert problems[0] == "throughput 0.30 of the baseline's (30.0 vs 100.0 pods/s; budget at least 0.8)"
    assert problems[1].startswith("create->bound p50 2.50 times the baseline's (50.0 vs 20.0 ms")
    assert any(p.startswith("Filter p99 ") and "budget at most 3.0" in p for p in problems)
    assert f.where_grew() == ("Filter p99 49.50 ms vs 0.20 ms in the baseline; in it plugin NetworkSlots p99 "
                              "49.50 ms per call, not in the baseline")


def test_a_point_five_times_slower_by_a_millisecond_is_noise_beside_a_pod_that_takes_twenty():
    base = {"0.0001": 0, "0.0002": 100, "+Inf": 100}                  # p99 0.2 ms
    mine = {"0.0001": 0, "0.0002": 0, "0.0016": 100, "+Inf": 100}     # p99 ~1.6 ms, 8 times that
    budget = Budget(extension_points={"Filter": {"p99": 3.0}})
    assert figures(comparison(mine, base)).point_ratio("Filter") > 3.0
    assert broken(figures(comparison(mine, base, lat=(0.02, 0.02))), budget) == []      # 1.4 ms < 2 ms
    assert len(broken(figures(comparison(mine, base, lat=(0.01, 0.01))), budget)) == 1  # 1.4 ms > 1 ms


def test_a_point_budget_on_the_median_sees_what_a_noisy_tail_hides():
    base = {"0.0001": 90, "0.0002": 98, "0.05": 100, "+Inf": 100}     # p50 0.06 ms, p99 ~25 ms
    mine = {"0.0001": 0, "0.0002": 0, "0.05": 100, "+Inf": 100}       # p50 ~25 ms, p99 ~50 ms
    f = figures(comparison(mine, base))
    assert broken(f, Budget(extension_points={"Filter": {"p99": 3.0}})) == []
    problems = broken(f, Budget(extension_points={"Filter": {"p50": 3.0}}))
    assert len(problems) == 1 and problems[0].startswith("Filter p50 ")


def test_a_point_is_judged_by_its_median_turn_so_one_stalled_turn_breaks_no_budget_and_a_slow_build_does():
    fast = {"0.001": 99, "0.002": 100, "+Inf": 100}                    # p99 ~2 ms
    stalled = {"0.001": 90, "0.002": 90, "0.256": 100, "+Inf": 100}   # one turn: p99 ~230 ms
    budget = Budget(extension_points={"Filter": {"p99": 3.0}})
    c = comparison(fast, fast)
    c.turns[0] = dataclasses.replace(c.turns[0], metrics=parse_metrics(point("Filter", stalled, plugin="NetworkSlots")))
    f = figures(c)
    assert quantile(f.under_test.metrics, EXTENSION_POINTS, 0.99, extension_point="Filter").seconds > 0.2  # added up
    assert f.point_ratio("Filter") == 1.0
    assert broken(f, budget) == []
    c.turns[3] = dataclasses.replace(c.turns[3], metrics=c.turns[0].metrics)  # both turns of the side under test
    assert broken(figures(c), budget)[0].startswith("Filter p99 ")


def test_a_cpu_budget_compares_cpu_seconds_per_backlog_pod_from_ready_to_the_backlog_bound():
    same = {"0.001": 100, "+Inf": 100}
    f = figures(comparison(same, same, cpu=(3.6, 3.0)))
    assert f.under_test.cpu_per_pod == pytest.approx(0.036) and f.cpu_per_pod == pytest.approx(1.2)
    assert broken(f, Budget(cpu_per_pod=1.25)) == []
    assert broken(f, Budget(cpu_per_pod=1.1)) == ["CPU per pod 1.200 times the baseline's (36.00 vs 30.00 ms; "
                                                  "budget at most 1.1)"]
    # wall-clock figures equal, a slower build shows only in its CPU
    assert f.throughput == 1.0 and f.p50 == 1.0


def test_a_cpu_budget_without_the_cpu_metric_fails_and_says_why():
    same = {"0.001": 100, "+Inf": 100}
    problems = broken(figures(comparison(same, same, cpu=(0.0, 3.0))), Budget(cpu_per_pod=1.25))
    assert problems == ["CPU per pod cannot be compared: a side's scheduler reported no process_cpu_seconds_total "
                        "in its /metrics"]


def paired(ratios: list[float], pods: int = 100) -> list[PairedRound]:
    return [PairedRound(index=i, pods=pods, under_test=0.4 * r, baseline=0.4, seconds=3.0)
            for i, r in enumerate(ratios)]


def test_paired_rounds_give_a_geometric_mean_ratio_and_its_95_percent_interval():
    pc = PairedCpu.of(paired([0.95, 1.0, 1.05, 1.0]))
    assert pc is not None and pc.rounds == 4 and pc.ratio == pytest.approx(0.99937, abs=1e-5)
    # sd of the logs 0.0409, t(3) 3.182: half-width 0.0651 in logs
    assert pc.low == pytest.approx(0.9365, abs=1e-4) and pc.high == pytest.approx(1.0665, abs=1e-4)
    assert pc.under_test == pytest.approx(0.004) and pc.baseline == pytest.approx(0.004)
    assert PairedCpu.of([]) is None
    assert PairedCpu.of(paired([1.0])).high == float("inf")  # type: ignore[union-attr]


@pytest.mark.parametrize("ratios, budget, problem", [
    ([0.97, 1.02, 1.0, 0.99, 1.03, 0.98], 1.12, None),
    ([1.30, 1.28, 1.33, 1.31, 1.29, 1.32], 1.12, "CPU per pod 1.305 (95 % 1.285-1.325 over 6 paired rounds) times the "
                                                 "baseline's (5.220 vs 4.000 ms; budget at most 1.12)"),
    # a mean within the budget but an interval reaching over it does not pass by default
    ([0.90, 1.25, 1.0, 1.15], 1.12, "CPU per pod undecided: 1.067 (95 % 0.846-1.345 over 4 paired rounds) times "
                                    "the baseline's, an interval reaching over the budget of 1.12"),
    ([1.0, 1.0], 1.12, "CPU per pod cannot be decided from 2 paired round(s); at least 3 (pairedRounds)"),
])
def test_a_cpu_budget_on_paired_rounds_passes_only_when_its_whole_interval_is_within(ratios, budget, problem):
    same = {"0.001": 100, "+Inf": 100}
    c = comparison(same, same, cpu=(9.0, 3.0))  # the turns' CPU, 3 times the baseline's: paired rounds decide
    c.paired = paired(ratios)
    problems = broken(figures(c), Budget(cpu_per_pod=budget))
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(problem)


def test_the_artifacts_carry_both_sides_every_turn_and_a_plot():
    c = comparison({"0.001": 100, "+Inf": 100}, {"0.001": 100, "+Inf": 100})
    files = perf_files(c, figures(c))
    assert files["perf.csv"].splitlines()[0] == f"figure,{UNDER_TEST},{BASELINE},ratio"
    # the header and the two baseline turns
    assert files["perf.csv"].count(f",{BASELINE},") == 3 and "throughput (pods/s),100.0,100.0,1.00" in files["perf.csv"]
    assert "<svg" in files["perf.html"] and files["perf.html"].count("<polyline") == 2
    c.paired = paired([1.0, 1.1, 0.9])
    text = perf_files(c, figures(c))["perf.csv"]
    assert "CPU per pod in paired rounds (ms),4.000,4.000,0.997 (95 % 0.777-1.279 over 3 paired rounds)" in text
    assert "\n3,100,3.600,4.000,0.900,3.0\n" in text


STEP = """\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: perf
cluster: {cluster}
steps:
  - measurePerformance:
      config: network-slots
      nodes: {{count: 10, like: gpu-net, annotations: {{schedgate.io/network-slots: "8"}}}}
      pods: {{gpus: 1}}
  - expect: {{performance: {{throughput: {{atLeast: 0.8}}, extensionPoints: {{Filter: {{p99: {{atMost: 3}}}}}}}}}}
"""


def test_a_performance_file_parses_into_a_workload_and_a_budget(tmp_path):
    p = tmp_path / "p.scenario.yaml"
    p.write_text(STEP.format(cluster=ROOT / "clusters/inference.yaml"))
    sc = load_scenario(p)
    measure, expect = sc.steps[0].action, sc.steps[1].action
    assert measure.nodes.count == 10 and measure.baseline == "in-tree" and measure.config == "network-slots"
    assert measure.nodes.node.annotations == {"schedgate.io/network-slots": "8"}
    assert measure.nodes.node.labels["infra.example.com/high-speed-network"] == "true"
    assert expect.outcome.budget == Budget(throughput=0.8, extension_points={"Filter": {"p99": 3.0}})
    p.write_text(p.read_text().replace("{p99: {atMost: 3}}", "{p50: {atMost: 2}, p99: {atMost: 3}}"))
    budget = load_scenario(p).steps[1].action.outcome.budget
    assert budget.extension_points == {"Filter": {"p50": 2.0, "p99": 3.0}}


@pytest.mark.parametrize("old, new, problem", [
    ("like: gpu-net", "like: nope", "steps[0].measurePerformance.nodes.like: no pool 'nope'"),
    ("pods: {gpus: 1}", "pods: {gpus: 1, scheduler: x}", "steps[0].measurePerformance.pods.scheduler: each side"),
    ("config: network-slots", "config: network-slots\n      baseline: old",
     "steps[0].measurePerformance.baseline: must be one of in-tree, same"),
    ("{atLeast: 0.8}", "{atMost: 0.8}", "steps[1].expect.performance.throughput"),
    ("{atLeast: 0.8}", "{atLeast: 0.8}, cpuPerPod: {atMost: 0}", "steps[1].expect.performance.cpuPerPod.atMost"),
    ("{atLeast: 0.8}", "{atLeast: 0.8}, cpuPerPod: 1.2", "steps[1].expect.performance.cpuPerPod"),
    ("count: 10", "count: 0", "steps[0].measurePerformance.nodes.count"),
    ("pods: {gpus: 1}", "pods: {gpus: 1}\n      pairedRounds: 31", "steps[0].measurePerformance.pairedRounds"),
    ("pods: {gpus: 1}", "pods: {gpus: 1}\n      pairedPods: 5", "steps[0].measurePerformance.pairedPods"),
    ("{p99: {atMost: 3}}", "{}", "steps[1].expect.performance.extensionPoints.Filter: needs a budget: p50 or p99"),
    ("{p99: {atMost: 3}}", "{p90: {atMost: 3}}", "steps[1].expect.performance.extensionPoints.Filter"),
])
def test_a_bad_performance_field_is_one_line_naming_it(tmp_path, old, new, problem):
    p = tmp_path / "p.scenario.yaml"
    p.write_text(STEP.format(cluster=ROOT / "clusters/inference.yaml").replace(old, new))
    with pytest.raises(DefinitionError) as e:
        load_scenario(p)
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_rounds_are_added_only_while_the_cpu_interval_straddles_the_budget():
    """A shared machine's noise leaves the interval reaching over the budget: more rounds, not a verdict."""
    from schedgate.perf.stats import straddles
    noisy = paired([1.0, 0.9, 1.12, 1.02, 0.93, 1.08])
    assert straddles(noisy, 1.05)                       # ratio within, interval over: undecided
    assert not straddles(noisy, 2.0)                    # decided within
    assert not straddles(paired([1.5, 1.6, 1.55]), 1.12)  # decided over: a verdict, no more rounds
    assert not straddles(noisy[:2], 1.12)               # too few rounds to ask
    assert not straddles(noisy, None)                   # no budget to decide


class _Nodes:
    def add_many(self, specs):
        return None

    def remove_added(self, names):
        return None


class _Ns:
    name = "perf-x"

    def clean(self, timeout):
        return None


class _Cluster:
    nodes = _Nodes()

    def settle(self):
        return None

    def new_namespace(self, hint):
        return _Ns()


@pytest.mark.parametrize(("slow_turns", "turns", "fails"), [
    (set(), 4, False),       # nothing broken: the four turns asked for
    ({0}, 8, False),         # one slow turn: four more, and over all eight the budget holds
    ({0, 4, 7}, 8, True),    # slow again in the added turns: a regression, still broken over all
    ({0, 3}, 4, True),       # broken in each round of turns on its own: a regression, no turn added
])
def test_a_budget_the_turns_break_gets_one_more_set_of_turns_judged_over_all(monkeypatch, slow_turns, turns, fails):
    from schedgate.perf import measure

    fast, slow = 100.0, 10.0

    def run_turn(cluster, side, workload, names, ns, tag, index):
        mine = side.label == UNDER_TEST
        tp = slow if mine and index in slow_turns else fast
        return Turn(side=side.label, index=index, throughput=tp, latencies=[0.02] * 5,
                    metrics=parse_metrics(""), seconds=1.0, pods=100, cpu=(0.0, 3.0, 4.0))

    monkeypatch.setattr(measure, "run_turn", run_turn)
    monkeypatch.setattr(measure, "wait_for_items", lambda *a, **k: None)
    cfg = load_scheduler_config(ROOT / "clusters/profiles/network-slots.yaml")
    spec = NodeSpec(name="x", pool="x", labels={}, taints=(), capacity={}, allocatable={})
    budget = Budget(throughput=0.6)
    c = measure.compare(_Cluster(), Side(UNDER_TEST, cfg.renamed("-u")), Side(BASELINE, cfg.renamed("-b")),  # type: ignore[arg-type]
                        Workload(nodes=1, node=spec, pod=lambda n: None),  # type: ignore[arg-type, return-value]
                        broken=lambda comp: broken(figures(comp), budget))
    assert [t.index for t in c.turns] == list(range(turns))
    assert [t.side for t in c.turns] == [UNDER_TEST, BASELINE, BASELINE, UNDER_TEST] * (turns // 4)
    assert bool(broken(figures(c), budget)) is fails
