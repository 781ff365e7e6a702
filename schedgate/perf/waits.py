"""What a comparison's turns and rounds create, wait on and read: pods made in parallel, every pod bound
inside its nodes, the ``Scheduled`` events' times, a namespace gone, a scheduler's CPU time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from schedgate.cluster import Cluster
from schedgate.cluster.nodes import CREATE_WORKERS
from schedgate.kube.watch import MATCH, Check, fail, pending, wait_for_items
from schedgate.objects.builders import PodBuilder
from schedgate.objects.matchers import pod_condition
from schedgate.objects.metrics import MetricsSnapshot, parse_metrics
from schedgate.objects.pods import Namespace
from schedgate.report.timing import event_time
from schedgate.runtime.procs import ProcessHandle
from schedgate.runtime.scheduler import Scheduler

CPU_METRIC = "process_cpu_seconds_total"  # every Kubernetes component's /metrics has it (legacyregistry)


def create_all(cluster: Cluster, ns: Namespace, pods: Sequence[PodBuilder]) -> None:
    """Create ``pods`` in ``ns``, :data:`CREATE_WORKERS` at a time, in about their order (one at a time, 300
    pods took 2.2-2.6 s of a turn)."""
    with ThreadPoolExecutor(max_workers=CREATE_WORKERS, thread_name_prefix="schedgate-perf") as pool:
        list(pool.map(lambda b: cluster.core.create_namespaced_pod(ns.name, cluster.pod_manifest(b)), pods))


def process_cpu(s: Scheduler) -> float:
    """The scheduler process's CPU seconds so far: from /proc when schedgate runs it here (to the
    nanosecond), else from its /metrics (``process_cpu_seconds_total``, in 10 ms ticks)."""
    exact = s.cpu_seconds() if isinstance(s, ProcessHandle) else None
    return exact if exact is not None else cpu_seconds_in(s.metrics_text())


def cpu_seconds_in(text: str) -> float:
    """:func:`cpu_seconds` from a scrape's text, its one line found without parsing the rest (a scrape is
    thousands of histogram lines: parsed whole, 0.2-0.5 s, in each paired round on kind)."""
    for line in text.splitlines():
        if line.startswith(CPU_METRIC + " "):
            return float(line.split()[-1])
    return cpu_seconds(parse_metrics(text))


def bound_by_side(placed: dict[str, tuple[set[str], str]], count: int) -> Callable[[list[dict[str, Any]]], Check]:
    """Every pod bound, each inside its own side's nodes (its ``schedulerName`` says the side)."""
    checks = {profile: all_bound(nodes, 0) for profile, (nodes, _) in placed.items()}

    def check(items: list[dict[str, Any]]) -> Check:
        by: dict[str, list[dict[str, Any]]] = {p: [] for p in placed}
        for p in items:
            by.setdefault((p.get("spec") or {}).get("schedulerName", ""), []).append(p)
        for profile, mine in by.items():
            if profile not in checks:
                return fail(f"pod {mine[0]['metadata']['name']} of scheduler {profile!r} in a paired round")
            c = checks[profile](mine)
            if c != MATCH:
                return c
        return MATCH if len(items) >= count else pending(f"{len(items)} of {count} pods created")

    return check


def cpu_seconds(m: MetricsSnapshot) -> float:
    """The scheduler process's CPU time so far (user and system), as its /metrics says."""
    return m.value(CPU_METRIC)


@dataclass(frozen=True)
class NamespaceGone:
    """The namespace ``name``, as a collection of at most one."""

    cluster: Cluster
    name: str

    def describe(self) -> str:
        return f"namespace {self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.cluster.core.list_namespace, (), {"field_selector": f"metadata.name={self.name}"}

    def check_health(self) -> None:
        self.cluster.check_health()


def all_bound(nodes: set[str], count: int) -> Callable[[list[dict[str, Any]]], Check]:
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


def scheduled_times(ns: Namespace, count: int, timeout: float, prefix: str) -> dict[str, float]:
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
