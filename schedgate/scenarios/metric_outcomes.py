"""The ``metric`` outcome: a scheduler's /metrics sample, counted from the scenario's start, the cache
barriers' own part taken off (:func:`schedgate.cluster.sync.barrier_counts`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from schedgate.cluster.sync import ATTEMPTS, PREEMPTIONS, barrier_counts
from schedgate.objects.metrics import MetricsSnapshot
from schedgate.runtime.scheduler import Scheduler
from schedgate.scenarios.bounds import BOUND_ATTRS, NEEDS_BOUND, NUMBER, bounds_read, needs_bound, read_bound
from schedgate.scenarios.declare import DeclaredOutcome, arg, read_first, read_string
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import SCALAR, STR, Schema


@outcome("metric", about_pods=False)
@dataclass(frozen=True)
class Metric(DeclaredOutcome):
    """A scheduler's /metrics sample (summed over matching labels) within bounds. A counter (and a
    histogram's count, sum and buckets) is counted from the scenario's start: the scheduler is the session's,
    and an earlier test's errors are not this scenario's (a counter that went back, a restarted scheduler,
    is counted from 0). What the cache barriers' probes (a sync step, the barrier after a node edit) added to
    scheduler_schedule_attempts_total and scheduler_preemption_attempts_total, as the scheduler's log counts
    them, is taken off: the barrier is the harness's, not the scenario's. A failure shows both figures."""

    RULE: ClassVar[Schema] = NEEDS_BOUND
    scheduler: str = arg("scheduler", "the profile of a running scheduler", STR, read_string)
    name: str = arg("name", "the sample's name", STR, read_string)
    labels: tuple[tuple[str, str], ...] = arg(
        "labels", "label -> value the samples summed must have", {"type": "object", "additionalProperties": SCALAR},
        lambda p, x, w: tuple((k, str(v)) for k, v in p.v.mapping(x or {}, w).items()), default=())
    equals: float | None = arg("equals", "exactly this value", NUMBER, read_bound, default=None)
    at_least: float | None = arg("atLeast", "at least this value", NUMBER, read_bound, default=None)
    at_most: float | None = arg("atMost", "at most this value", NUMBER, read_bound, default=None)
    bounds: tuple[tuple[str, float], ...] = ()  # the bounds given, as (key, value)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """The bounds (one at least) and labels are read before scheduler and name, as before."""
        values = read_first(cls, p, m, w, BOUND_ATTRS)
        needs_bound(p, m, w)
        return {**values, **read_first(cls, p, m, w, ("labels",))}

    @classmethod
    def read(cls, p: Parser, raw: Any, w: str) -> dict[str, Any]:
        values = super().read(p, raw, w)
        return {**values, "bounds": bounds_read(values)}

    @property
    def metrics_of(self) -> tuple[str, ...]:
        """The scheduler whose /metrics it reads: scraped when the scenario begins."""
        return (self.scheduler,)

    def value(self, s: MetricsSnapshot, start: MetricsSnapshot | None = None, own: float = 0.0) -> float:
        """The sample since the scenario began, less ``own`` (the barriers' part of it)."""
        now = s.value(self.name, **dict(self.labels))
        if start is None or self.name not in s.cumulative:
            return now - own
        before = start.value(self.name, **dict(self.labels))
        return (now - before if now >= before else now) - own

    def barriers(self, r: Run, proc: Scheduler) -> float:
        """What the cache barriers' probes added to this sample since the scenario began."""
        if self.name not in (ATTEMPTS, PREEMPTIONS):
            return 0.0
        want = dict(self.labels)
        return float(sum(1 for name, labels in barrier_counts(proc, r.cluster.system_namespace_name,
                                                               r.barriers_at_start)
                         if name == self.name and all(labels.get(k) == v for k, v in want.items())))

    def ok(self, s: MetricsSnapshot, start: MetricsSnapshot | None = None, own: float = 0.0) -> bool:
        v = self.value(s, start, own)
        test = {"equals": lambda b: v == b, "atLeast": lambda b: v >= b, "atMost": lambda b: v <= b}
        return all(test[k](b) for k, b in self.bounds)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        proc = r.cluster.scheduler(self.scheduler)
        start = r.metrics_at_start.get(self.scheduler)
        shown = ", ".join(f"{k} {b:g}" for k, b in self.bounds)
        sel = self.name + ("{" + ",".join(f'{k}="{x}"' for k, x in self.labels) + "}" if self.labels else "")
        try:  # the log is read after the sample: a probe's attempt counted in the sample is in the log by then
            proc.wait_for_metrics(lambda s: self.ok(s, start, self.barriers(r, proc)), f"{sel} {shown}",
                                  timeout=timeout)
        except AssertionError as e:
            last = proc.metrics()
            own = self.barriers(r, proc)
            since = " since the scenario began" if start is not None and self.name in last.cumulative else ""
            probes = f"; {self.value(last, start):g} with the cache barriers' probes' {own:g}" if own else ""
            raise AssertionError(f"{e} (last value {self.value(last, start, own):g}{since}{probes})") from None
