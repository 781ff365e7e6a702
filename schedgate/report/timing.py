"""Per-pod timings: create→scheduled, scheduled→Ready, scheduling attempts.

create→scheduled runs from the moment schedgate created the pod (its own
clock) to the ``Scheduled`` event's ``eventTime`` (microseconds, stamped by
the scheduler on the same host). Attempts are the ``FailedScheduling``
events about the pod (with their series counts) plus the one that bound it.
scheduled→Ready needs something that runs pods: kind's kubelets, or the local
provider's node agent. A condition's ``lastTransitionTime`` is whole seconds;
the node agent also writes the moment in nanoseconds into its Ready condition's
message (``AGENT_READY``), which is read first. Without it (a kubelet's), the pod
became Ready within the second the condition names, so scheduled→Ready is given
as the most it can be, that second's end less the bind: ``<=0.541``, never a
truncated 0.000.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from schedgate.cluster import is_sync_node
from schedgate.kube.api import read_json
from schedgate.kube.watch import MATCH, Check, WaitTimeout, pending, wait_for_items
from schedgate.objects.groups import group_of

# The node agent's Ready message (go/kwok/stages.yaml): "schedgate node agent: ready at <RFC 3339, ns>".
AGENT_READY = re.compile(r"^schedgate node agent: ready at (\S+)$")


@dataclass(frozen=True)
class PodTiming:
    pod: str
    scheduler: str
    node: str
    create_to_scheduled: float | None
    scheduled_to_ready: float | None
    attempts: int
    state: str  # bound, pre-bound, pending: <reason>
    born: float | None = None      # created (epoch seconds)
    bound_at: float | None = None  # the Scheduled event (epoch seconds), when a scheduler bound it
    group: tuple[str, int] | None = None  # gang (group, minimum members)
    has_claims: bool = False       # its own ResourceClaims, or the one the scheduler made for an extended resource
    ready_at_most: bool = False    # scheduled_to_ready is an upper bound (a Ready time in whole seconds)

    def row(self) -> list[str]:
        return [self.pod, self.scheduler, self.node or "-", _fmt(self.create_to_scheduled),
                _fmt(self.scheduled_to_ready, self.ready_at_most), str(self.attempts), self.state]


HEADER = ["pod", "scheduler", "node", "create->scheduled (s)", "scheduled->ready (s)", "attempts", "state"]


def _fmt(v: float | None, at_most: bool = False) -> str:
    return "-" if v is None else f"{'<=' if at_most else ''}{v:.3f}"


def parse_time(s: str | None) -> float | None:
    if not s:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ready_time(cond: dict[str, Any]) -> float | None:
    """When a True Ready condition became so: the node agent's stamp in its message, else the whole second."""
    if cond.get("status") != "True":
        return None
    return _stamp(cond) or parse_time(cond.get("lastTransitionTime"))


def _stamp(cond: dict[str, Any]) -> float | None:
    stamp = AGENT_READY.match(cond.get("message") or "")
    return parse_time(stamp.group(1)) if stamp else None


def event_time(e: dict[str, Any]) -> float | None:
    """When the event happened: ``eventTime`` (µs), else the series' last, else the deprecated stamps."""
    series = e.get("series") or {}
    return (parse_time(series.get("lastObservedTime")) or parse_time(e.get("eventTime"))
            or parse_time(e.get("deprecatedLastTimestamp")) or parse_time((e.get("metadata") or {})
                                                                         .get("creationTimestamp")))


def event_count(e: dict[str, Any]) -> int:
    series = e.get("series") or {}
    return int(series.get("count") or e.get("deprecatedCount") or 1)


def pod_timings(core: Any, events_api: Any, namespace: str,
                created: dict[str, float] | None = None) -> list[PodTiming]:
    """Timings of every pod in ``namespace``; ``created`` maps pod name to its creation (epoch seconds)."""
    pods = read_json(core.list_namespaced_pod, namespace).get("items") or []
    events = read_json(events_api.list_namespaced_event, namespace).get("items") or []
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        reg = e.get("regarding") or {}
        if reg.get("kind") == "Pod":
            by_pod.setdefault(reg.get("name", ""), []).append(e)
    out = []
    for p in pods:
        meta, spec = p.get("metadata") or {}, p.get("spec") or {}
        name = meta.get("name", "")
        mine = by_pod.get(name, [])
        scheduled = [e for e in mine if e.get("reason") == "Scheduled"]
        failed = sum(event_count(e) for e in mine if e.get("reason") == "FailedScheduling")
        born = (created or {}).get(name) or parse_time(meta.get("creationTimestamp"))
        conds = {c.get("type"): c for c in (p.get("status") or {}).get("conditions") or []}
        placed = conds.get("PodScheduled") or {}
        # The Scheduled event is written asynchronously; until it is, the condition (1 s resolution) stands in.
        bound_at = event_time(scheduled[-1]) if scheduled else (
            parse_time(placed.get("lastTransitionTime")) if placed.get("status") == "True" else None)
        by_scheduler = bool(scheduled) or placed.get("status") == "True"
        ready_cond = conds.get("Ready") or {}
        ready_at = ready_time(ready_cond)
        whole = ready_at is not None and _stamp(ready_cond) is None  # within the second it names
        ready_end = ready_at + 1.0 if ready_at is not None and whole else ready_at
        node = spec.get("nodeName") or ""
        if node:
            state = "bound" if by_scheduler else "pre-bound"
        else:
            state = f"pending: {placed.get('reason') or 'not tried yet'}"
        out.append(PodTiming(
            pod=name, scheduler=spec.get("schedulerName", ""), node=node,
            create_to_scheduled=max(0.0, bound_at - born) if bound_at and born else None,
            scheduled_to_ready=max(0.0, ready_end - bound_at) if ready_end and bound_at else None,
            ready_at_most=whole,
            attempts=failed + (1 if node and by_scheduler else 0), state=state, born=born,
            bound_at=bound_at if node and by_scheduler else None, group=group_of(p),
            has_claims=bool(spec.get("resourceClaims") or (p.get("status") or {}).get("extendedResourceClaimStatus"))))
    return out


def summary_row(timings: list[PodTiming]) -> tuple[int, int, str, str, int, str]:
    """(pods, bound by a scheduler, median and max create->scheduled, max attempts, median scheduled->Ready)."""
    lat = [t.create_to_scheduled for t in timings if t.create_to_scheduled is not None]
    med = f"{statistics.median(lat):.3f}" if lat else "-"
    top = f"{max(lat):.3f}" if lat else "-"
    ready = [t for t in timings if t.scheduled_to_ready is not None]
    return (len(timings), len(lat), med, top, max((t.attempts for t in timings), default=0),
            _fmt(statistics.median(t.scheduled_to_ready for t in ready if t.scheduled_to_ready is not None),
                 any(t.ready_at_most for t in ready)) if ready else "-")


def wait_bound_pods_ready(namespace: Any, timeout: float = 30.0, cut_off: Collection[str] = ()) -> str:
    """Wait until every bound pod in ``namespace`` (a schedgate Namespace) is Ready; '' or why not.

    Only where kubelets run pods: it gives scheduled->Ready its end. Pods bound to
    schedgate's sync node (no kubelet), to a node in ``cut_off`` (its heartbeat stopped: the node
    lifecycle controller marks its pods not Ready) and pods that have finished are not waited for.
    """
    def ready(items: list[dict[str, Any]]) -> Check:
        waiting = []
        for p in items:
            node = (p.get("spec") or {}).get("nodeName")
            done = (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")  # a Job's: not Ready any more
            if (not node or is_sync_node(node) or node in cut_off or done
                    or (p.get("metadata") or {}).get("deletionTimestamp")):
                continue
            conds = {c.get("type"): c.get("status") for c in (p.get("status") or {}).get("conditions") or []}
            if conds.get("Ready") != "True":
                waiting.append(p["metadata"]["name"])
        return MATCH if not waiting else pending(f"not Ready yet: {', '.join(waiting)}")

    try:
        wait_for_items(namespace, ready, "every bound pod Ready", timeout)
    except WaitTimeout as e:
        return str(e).splitlines()[0]
    return ""
