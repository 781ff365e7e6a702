"""The figures of a comparison, and budgets on them relative to the baseline.

A budget is a ratio, never a time: ``throughput`` at least this share of the baseline's pods/s,
``p50``/``p99`` create->bound at most this multiple of the baseline's, ``cpuPerPod`` the scheduler
process's CPU seconds per pod at most this multiple of the baseline's, and per extension point
(``Filter``, ``PreBind``, ... or ``*`` for each) a p50 or p99 at most this multiple. On a shared machine
an absolute number measures the machine; the same workload through a baseline in the same run,
turns alternating, measures the scheduler. A broken budget names the extension point whose time
grew most and, within it, the plugin (both from the schedulers' own histograms).

An extension point's ratio counts only when its p99 grew by more than a tenth of the baseline's
create->bound p50 (:data:`NEGLIGIBLE`): a point that takes 0.2 ms in the baseline and 1 ms under test
is five times slower and cannot be what slows a pod that takes 30 ms (histogram buckets below a
millisecond are a factor of two apart, and one scrape's p99 of them is mostly noise). A side's p50 or p99 of
an extension point is that of its median turn (the lower of two), not of its turns added up: on a loaded
machine one turn's stalls fill a whole side's tail (kind's Filter p99 at ten nodes: 155.65 ms against 43.24 ms
in one run, 98.99 against 155.65 in another), while a slower build is slower in each turn.

``cpuPerPod`` with paired rounds (:class:`~schedgate.perf.stats.PairedCpu`) holds only when the whole
95 % confidence interval of the ratio is within the budget: a ratio above it fails as over budget, an
interval that reaches over it fails as undecided (run more rounds), and fewer than
:data:`MIN_PAIRED_ROUNDS` rounds cannot decide. Without paired rounds it compares the turns' backlog CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from schedgate.objects.metrics import MetricsSnapshot
from schedgate.perf.histogram import EXTENSION_POINTS, PLUGINS, Quantile, label_values, merged, quantile
from schedgate.perf.measure import BASELINE, UNDER_TEST, Comparison
from schedgate.perf.stats import MIN_PAIRED_ROUNDS, PairedCpu, percentile

ALL_POINTS = "*"
QUANTILES = {"p50": 0.5, "p99": 0.99}
NEGLIGIBLE = 0.1  # an extension point's growth below this share of the baseline's create->bound p50 is noise


@dataclass(frozen=True)
class Budget:
    throughput: float | None = None   # under test / baseline pods/s, at least
    p50: float | None = None          # under test / baseline create->bound p50, at most
    p99: float | None = None
    cpu_per_pod: float | None = None  # under test / baseline CPU seconds per backlog pod, at most
    # point (or "*") -> {"p50"|"p99": ratio, at most}
    extension_points: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class SideFigures:
    throughput: float               # pods/s, mean of the side's turns
    p50: float                      # create->bound, seconds, every one-at-a-time pod of the side's turns
    p99: float
    metrics: MetricsSnapshot        # the side's turns' histograms added up
    cpu_per_pod: float = 0.0        # seconds, the side's turns' backlog CPU over their backlog pods
    turns: tuple[MetricsSnapshot, ...] = ()  # each turn's histograms

    def point(self, name: str, q: str = "p99") -> Quantile | None:
        """The quantile of the side's median turn (the lower one of an even number)."""
        each = sorted((x for x in (quantile(m, EXTENSION_POINTS, QUANTILES[q], extension_point=name)
                                   for m in self.turns or (self.metrics,)) if x is not None),
                      key=lambda x: x.seconds)
        return each[(len(each) - 1) // 2] if each else None

    def plugin(self, point: str, plugin: str) -> Quantile | None:
        return quantile(self.metrics, PLUGINS, 0.99, extension_point=point, plugin=plugin)


@dataclass(frozen=True)
class Figures:
    under_test: SideFigures
    baseline: SideFigures
    paired: PairedCpu | None = None

    @property
    def throughput(self) -> float:
        return _ratio(self.under_test.throughput, self.baseline.throughput)

    @property
    def p50(self) -> float:
        return _ratio(self.under_test.p50, self.baseline.p50)

    @property
    def p99(self) -> float:
        return _ratio(self.under_test.p99, self.baseline.p99)

    @property
    def cpu_per_pod(self) -> float:
        return _ratio(self.under_test.cpu_per_pod, self.baseline.cpu_per_pod)

    def points(self) -> list[str]:
        return sorted({*label_values(self.under_test.metrics, EXTENSION_POINTS, "extension_point"),
                       *label_values(self.baseline.metrics, EXTENSION_POINTS, "extension_point")})

    def point_ratio(self, name: str, q: str = "p99") -> float | None:
        a, b = self.under_test.point(name, q), self.baseline.point(name, q)
        return _ratio(a.seconds, b.seconds) if a and b else None

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(figure, under test, baseline, ratio) for the summary, JUnit and perf.csv."""
        u, b = self.under_test, self.baseline
        out = [("throughput (pods/s)", f"{u.throughput:.1f}", f"{b.throughput:.1f}", f"{self.throughput:.2f}"),
               ("CPU per pod (ms)", f"{u.cpu_per_pod * 1000:.2f}", f"{b.cpu_per_pod * 1000:.2f}",
                f"{self.cpu_per_pod:.3f}"),
               *([("CPU per pod in paired rounds (ms)", f"{self.paired.under_test * 1000:.3f}",
                   f"{self.paired.baseline * 1000:.3f}", self.paired.shown())] if self.paired else []),
               ("create->bound p50 (ms)", f"{u.p50 * 1000:.1f}", f"{b.p50 * 1000:.1f}", f"{self.p50:.2f}"),
               ("create->bound p99 (ms)", f"{u.p99 * 1000:.1f}", f"{b.p99 * 1000:.1f}", f"{self.p99:.2f}")]
        for p in self.points():
            for q in QUANTILES:
                qa, qb, r = u.point(p, q), b.point(p, q), self.point_ratio(p, q)
                out.append((f"{p} {q}", qa.shown() if qa else "-", qb.shown() if qb else "-",
                            f"{r:.2f}" if r is not None else "-"))
        return out

    def where_grew(self, among: list[str] | None = None) -> str:
        """The extension point (of ``among``, else of all) whose p99 grew most over the baseline's, and its
        plugin that grew most."""
        grown: list[tuple[float, str, str]] = []
        for p in among or self.points():
            qa, qb = self.under_test.point(p), self.baseline.point(p)
            if qa is None:
                continue
            base = qb.seconds if qb else 0.0
            grown.append((qa.seconds - base, p, f"{p} p99 {qa.shown()}"
                          f"{f' vs {qb.shown()} in the baseline' if qb else ', none in the baseline'}"))
        if not grown or max(grown)[0] <= 0:
            return "no extension point's p99 grew over the baseline's"
        _, point, text = max(grown)
        plugins: list[tuple[float, str]] = []
        for name in label_values(self.under_test.metrics, PLUGINS, "plugin", extension_point=point):
            qa, qb = self.under_test.plugin(point, name), self.baseline.plugin(point, name)
            if qa is None:
                continue
            plugins.append((qa.seconds - (qb.seconds if qb else 0.0),
                            f"plugin {name} p99 {qa.shown()} per call"
                            f"{f' vs {qb.shown()} in the baseline' if qb else ', not in the baseline'}"))
        if plugins and max(plugins)[0] > 0:
            text += f"; in it {max(plugins)[1]}"
        return text


def figures(c: Comparison) -> Figures:
    def side(label: str) -> SideFigures:
        turns = c.of(label)
        lat = [x for t in turns for x in t.latencies]
        pods = sum(t.pods for t in turns)
        cpu = sum(t.cpu[1] - t.cpu[0] for t in turns)
        return SideFigures(throughput=sum(t.throughput for t in turns) / len(turns), p50=percentile(lat, 0.5),
                           p99=percentile(lat, 0.99), metrics=merged(t.metrics for t in turns),
                           cpu_per_pod=cpu / pods if pods else 0.0, turns=tuple(t.metrics for t in turns))

    return Figures(side(UNDER_TEST), side(BASELINE), PairedCpu.of(c.paired))


def broken(f: Figures, budget: Budget) -> list[str]:
    """Each budget the figures break, as one line; empty when all hold."""
    return [line for _, line in _broken(f, budget)]


def _broken(f: Figures, budget: Budget) -> list[tuple[str, str]]:
    """(extension point or "", line) of each broken budget."""
    out: list[tuple[str, str]] = []
    u, b = f.under_test, f.baseline
    if budget.throughput is not None and f.throughput < budget.throughput:
        out.append(("", f"throughput {f.throughput:.2f} of the baseline's ({u.throughput:.1f} vs {b.throughput:.1f} "
                   f"pods/s; budget at least {budget.throughput})"))
    for name, limit in (("p50", budget.p50), ("p99", budget.p99)):
        if limit is None:
            continue
        ratio, mine, theirs = getattr(f, name), getattr(u, name), getattr(b, name)
        if ratio > limit:
            out.append(("", f"create->bound {name} {ratio:.2f} times the baseline's ({mine * 1000:.1f} vs "
                            f"{theirs * 1000:.1f} ms; budget at most {limit})"))
    if budget.cpu_per_pod is not None and f.paired is not None:
        pc, limit = f.paired, budget.cpu_per_pod
        if pc.rounds < MIN_PAIRED_ROUNDS:
            out.append(("", f"CPU per pod cannot be decided from {pc.rounds} paired round(s); at least "
                            f"{MIN_PAIRED_ROUNDS} (pairedRounds)"))
        elif pc.ratio > limit:
            out.append(("", f"CPU per pod {pc.shown()} times the baseline's ({pc.under_test * 1000:.3f} vs "
                            f"{pc.baseline * 1000:.3f} ms; budget at most {limit})"))
        elif pc.high > limit:
            out.append(("", f"CPU per pod undecided: {pc.shown()} times the baseline's, an interval reaching "
                            f"over the budget of {limit}; more paired rounds would decide"))
    elif budget.cpu_per_pod is not None:
        if u.cpu_per_pod <= 0 or b.cpu_per_pod <= 0:
            out.append(("", "CPU per pod cannot be compared: a side's scheduler reported no "
                            "process_cpu_seconds_total in its /metrics"))
        elif f.cpu_per_pod > budget.cpu_per_pod:
            out.append(("", f"CPU per pod {f.cpu_per_pod:.3f} times the baseline's ({u.cpu_per_pod * 1000:.2f} vs "
                            f"{b.cpu_per_pod * 1000:.2f} ms; budget at most {budget.cpu_per_pod})"))
    for point in f.points():
        limits = budget.extension_points.get(point, budget.extension_points.get(ALL_POINTS)) or {}
        for q, limit in sorted(limits.items()):
            ratio = f.point_ratio(point, q)
            qa, qb = u.point(point, q), b.point(point, q)
            grew = (qa.seconds if qa else 0.0) - (qb.seconds if qb else 0.0)
            if ratio is not None and ratio > limit and grew > NEGLIGIBLE * b.p50:
                out.append((point, f"{point} {q} {ratio:.2f} times the baseline's ({qa.shown() if qa else '-'} "
                                   f"vs {qb.shown() if qb else '-'}; budget at most {limit})"))
    return out


def check(c: Comparison, budget: Budget) -> Figures:
    """The comparison's figures; raises ``AssertionError`` naming every broken budget and where the time went."""
    f = figures(c)
    problems = _broken(f, budget)
    if problems:
        points = [p for p, _ in problems if p]
        raise AssertionError(f"{UNDER_TEST} vs {BASELINE}: " + "; ".join(line for _, line in problems)
                             + f". Where: {f.where_grew(points or None)}")
    return f


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else (1.0 if a <= 0 else float("inf"))
