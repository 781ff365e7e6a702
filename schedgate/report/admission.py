"""Claim allocation and gang admission latencies per test: the summary's "claims and gangs" table.

Claim allocation is the scheduler's own time, from the start of the cycle that
bound a pod with claims to DynamicResources writing its last claim (allocation
and reservation) in PreBind: two klog times (µs) of the scheduler's log, run
with :data:`~schedgate.objects.schedlog.LOG_FLAGS`; a scheduler that does not
log them leaves the column empty. Gang admission runs from a group's first
member's creation (schedgate's clock) to its last member's ``Scheduled``
event, for each group (label ``schedgate.io/gang``, or a PodGroup the pod names
in ``spec.schedulingGroup``) all of whose members (at least its minimum) were
bound: it includes any wait at Permit, timeouts and retries.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from schedgate.objects.schedlog import PodLog, since
from schedgate.report.timing import PodTiming


@dataclass(frozen=True)
class Admission:
    claims: tuple[float, ...]  # per bound pod with claims: cycle start -> last claim written (s)
    gangs: tuple[float, ...]   # per admitted group: first member created -> last member bound (s)

    def row(self) -> tuple[str, ...]:
        return (str(len(self.claims)), *_median_max(self.claims), str(len(self.gangs)), *_median_max(self.gangs))


HEADER = ("test", "claim pods", "allocation median (s)", "max (s)", "gangs admitted", "admission median (s)",
          "max (s)")


def _median_max(values: tuple[float, ...]) -> tuple[str, str]:
    return (f"{statistics.median(values):.3f}", f"{max(values):.3f}") if values else ("-", "-")


def claim_allocations(namespace: str, timings: Iterable[PodTiming], logs: Mapping[str, PodLog]) -> list[float]:
    out = []
    for t in timings:
        log = logs.get(f"{namespace}/{t.pod}")
        if not (t.has_claims and t.bound_at and log):
            continue
        done = [a for a in log.attempts if a.bound_to and a.started is not None and a.claims_written is not None]
        if done:
            a = done[-1]
            out.append(since(a.started or 0.0, a.claims_written or 0.0))
    return out


def gang_admissions(timings: Iterable[PodTiming]) -> list[float]:
    groups: dict[str, list[PodTiming]] = {}
    for t in timings:
        if t.group:
            groups.setdefault(t.group[0], []).append(t)
    out = []
    for members in groups.values():
        need = max(max(m.group[1] for m in members if m.group), 1)
        bound = [m.bound_at for m in members if m.bound_at]
        born = [m.born for m in members if m.born]
        if len(bound) == len(members) >= need and born:
            out.append(max(bound) - min(born))
    return out


def admission(per_namespace: Mapping[str, list[PodTiming]], logs: Mapping[str, PodLog]) -> Admission | None:
    """The test's figures, or None when it had no pod with claims and no gang."""
    claims = [x for ns, ts in per_namespace.items() for x in claim_allocations(ns, ts, logs)]
    gangs = [x for ts in per_namespace.values() for x in gang_admissions(ts)]
    has = any(t.has_claims or t.group for ts in per_namespace.values() for t in ts)
    return Admission(tuple(claims), tuple(gangs)) if has else None
