"""``make bench-fleet``: the local provider at fleet sizes, figures side by side from one run.

    make bench-fleet                       # or: .venv/bin/python bench/fleet.py --live 10000,50000 --sizes 1000,5000

First the live fleet (``--live NODES,PODS``: nodes kwok heartbeats, pods that run; see bench/fleet_live.py).
Then, per size N (API-only 8-GPU network nodes):
1. cluster start to ready, each phase, and the node creation rate;
2. control-plane resident memory (and, across sizes, its growth per 1,000 nodes);
3. two workloads, each run three times — through the scheduler alone (pods
   created by one bare client, completion seen by one namespace watch), once
   in a cluster whose schedulers run without schedgate's verbosity flags and
   once with them, and through schedgate (each pod made by the harness and
   awaited by its own ``wait_for``) — the order alternating by size:
   plain pods (100m cpu, ``default-scheduler``) and the design's GPU mix
   (1-GPU inference pods with an 8-GPU training pod every tenth, through
   ``gpu-packing-scheduler``, percentageOfNodesToScore 100);
   for each: pods/s (first create to last ``Scheduled`` event), p50 and p99
   create->scheduled (µs event times), the scheduler's own attempt count and
   mean attempt time (its ``scheduling_attempt_duration_seconds``), and the
   harness's overhead as ratios of throughput and of attempt time: its watches
   and waits, the verbosity flags its ``explain`` reads, and both. Where the
   scheduler keeps up with one client creating pods, pods/s is that client's
   pace and the attempt time is what shows the cost;
4. where the verbosity goes: for each workload's "alone" run, the scheduler
   log's lines and bytes per pod by source (klog's ``file.go:line``), top five.
Upstream scheduler_perf minimums are printed beside, labelled: measured on
other machines, with 10,000 pods and their own workloads.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fleet_live import live, print_start  # noqa: E402  (bench/, the script's own folder)
from memory import print_memory  # noqa: E402

import schedgate.runtime.scheduler as sched  # noqa: E402
from schedgate import scheduled_on, wait_for  # noqa: E402
from schedgate.cluster import Cluster  # noqa: E402
from schedgate.kube.watch import MATCH, pending, wait_for_items  # noqa: E402
from schedgate.objects.builders import PodBuilder, make_pod  # noqa: E402
from schedgate.objects.schedlog import log_flags  # noqa: E402
from schedgate.providers import ClusterRequest, start_cluster  # noqa: E402
from schedgate.report.timing import pod_timings  # noqa: E402
from schedgate.spec.cluster import parse_definition  # noqa: E402
from schedgate.spec.schedconfig import load_scheduler_config  # noqa: E402
from schedgate.workloads.gpu import PACKING, gpu_pod  # noqa: E402

UPSTREAM = {"plain": "SchedulingBasic, 5,000 nodes: 680 pods/s", "gpu": "extended resources, 5,000 nodes: 180 pods/s"}


def definition(n: int) -> object:
    return parse_definition({
        "apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": f"fleet-{n}",
        "pools": [{"name": "gpu", "count": n, "labels": {"infra.example.com/high-speed-network": "true"},
                   "capacity": {"cpu": "64", "memory": "512Gi", "pods": 110, "nvidia.com/gpu": 8}}]},
        source=f"fleet-{n}")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def workload(kind: str, count: int) -> list[PodBuilder]:
    if kind == "plain":
        return [make_pod(f"p-{i}").request("cpu", "100m").request("memory", "64Mi") for i in range(count)]
    return [gpu_pod(f"g-{i}", 8 if i % 10 == 9 else 1, PACKING) for i in range(count)]


ATTEMPT = "scheduler_scheduling_attempt_duration_seconds"


def attempts(c: Cluster, scheduler: str) -> tuple[float, float]:
    """(attempts so far, seconds spent in them): the scheduler's own counters."""
    m = c.scheduler(scheduler).metrics()
    return m.value("scheduler_schedule_attempts_total"), m.histogram_sum(ATTEMPT)


_SOURCE = re.compile(rb"^[IWEF]\d{4} [\d:.]+\s+\d+ ([^\]]+)\]")


def log_sources(log: Path | None, offset: int) -> Counter[tuple[bytes, str]]:
    """Lines and bytes the scheduler wrote since ``offset``, by source (a multi-line entry counts its lines)."""
    out: Counter[tuple[bytes, str]] = Counter()
    if log is None:
        return out
    source = b"?"
    with open(log, "rb") as f:
        f.seek(offset)
        for line in f:
            m = _SOURCE.match(line)
            source = m.group(1) if m else source
            out[(source, "lines")] += 1
            out[(source, "bytes")] += len(line)
    return out


def run(c: Cluster, kind: str, count: int, harness: bool) -> dict[str, float]:
    log = c.scheduler(workload(kind, 1)[0].scheduler_name).log_path
    offset = log.stat().st_size if log and log.exists() else 0
    ns = c.new_namespace(f"bench-{kind}-{'harness' if harness else 'alone'}")
    pods = workload(kind, count)
    scheduler = pods[0].scheduler_name
    before = attempts(c, scheduler)
    created: dict[str, float] = {}
    if harness:
        handles = []
        for b in pods:
            created[b.name] = time.time()
            handles.append(b.create(ns))
        nodes = list(c.node_names)
        for h in handles:
            wait_for(h, scheduled_on(nodes), timeout=600)
    else:
        core = c.core
        bodies = [(b.name, c.pod_manifest(b)) for b in pods]
        c.settle()
        for name, body in bodies:
            created[name] = time.time()
            core.create_namespaced_pod(ns.name, body)

        def all_bound(items: list[dict[str, object]]) -> object:
            left = sum(1 for p in items if not (p.get("spec") or {}).get("nodeName"))  # type: ignore[union-attr]
            return MATCH if len(items) == count and not left else pending(f"{left} of {count} not bound")

        wait_for_items(ns, all_bound, f"{count} pods bound", timeout=600)  # type: ignore[arg-type]
    timings = pod_timings(c.core, c.events_api, ns.name, created)
    lat = [t.create_to_scheduled for t in timings if t.create_to_scheduled is not None]
    ends = [t.bound_at for t in timings if t.bound_at]
    span = max(ends) - min(created.values())
    after = attempts(c, scheduler)
    tries = after[0] - before[0]
    out: dict[str, object] = {"pods/s": count / span, "p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
                              "attempts": tries, "attempt ms": (after[1] - before[1]) / tries * 1000 if tries else 0.0,
                              "log": log_sources(log, offset)}
    ns.clean(timeout=300)
    return out  # type: ignore[return-value]


def start(n: int, config: object, quiet: bool) -> object:
    """A cluster of ``n`` nodes; ``quiet``: its schedulers with ``--v=2`` only, not schedgate's verbosity
    flags (which ``explain``, ``attempts`` and the claim figures read; score lines only up to
    ``SCORED_UP_TO`` nodes), to measure what those flags cost the scheduler."""
    if quiet:
        sched.log_flags = lambda nodes: ("--v=2",)  # type: ignore[assignment]
    try:
        return start_cluster(ClusterRequest("local", definition(n), config), out=None)  # type: ignore[arg-type]
    finally:
        sched.log_flags = log_flags


def show(kind: str, side: str, r: dict[str, float]) -> None:
    print(f"   {kind:<8} {side:<22} {r['pods/s']:8.1f} {r['p50']:8.3f} {r['p99']:8.3f} {r['attempts']:9.0f} "
          f"{r['attempt ms']:11.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000", help="node counts, comma-separated")
    ap.add_argument("--pods", type=int, default=300, help="pods per workload run")
    ap.add_argument("--live", default="10000,50000",
                    help="NODES,PODS of the live fleet (kwok's heartbeats, pods that run; bench/fleet_live.py), "
                         "run first; '' for none")
    args = ap.parse_args()
    if args.live:
        nodes, pods = (int(x) for x in args.live.split(","))
        live(nodes, pods, ROOT)
    config = load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")
    memory: dict[int, float] = {}
    for k, n in enumerate(int(x) for x in args.sizes.split(",") if x):
        results: dict[tuple[str, str], dict[str, float]] = {}
        for quiet in ((True, False) if k % 2 == 0 else (False, True)):
            t0 = time.monotonic()
            started = start(n, config, quiet)
            wall = time.monotonic() - t0
            c = started.cluster  # type: ignore[attr-defined]
            try:
                if not quiet:
                    print_start(c, n, wall, f"{n} nodes")
                    print(f"== {n} nodes: control-plane resident memory, MiB (idle, after start)")
                    memory[n] = print_memory(c, 34)
                for kind in ("plain", "gpu"):
                    sides = (("alone, quiet", False),) if quiet else \
                        ((("alone", False), ("harness", True)) if k % 2 == 0 else (("harness", True), ("alone", False)))
                    for side, harness in sides:
                        results[(kind, side)] = run(c, kind, args.pods, harness)
            finally:
                started.stop()  # type: ignore[attr-defined]
        print(f"== {n} nodes: {args.pods} pods per run (pods/s: first create to last Scheduled event; "
              "quiet: schedulers without schedgate's verbosity flags)")
        print(f"   {'workload':<8} {'side':<22} {'pods/s':>8} {'p50 (s)':>8} {'p99 (s)':>8} {'attempts':>9} "
              f"{'attempt ms':>11}")
        for kind in ("plain", "gpu"):
            for side in ("alone, quiet", "alone", "harness"):
                show(kind, side, results[(kind, side)])
            q, a, h = (results[(kind, x)]["pods/s"] for x in ("alone, quiet", "alone", "harness"))
            dq, da, dh = (results[(kind, x)]["attempt ms"] for x in ("alone, quiet", "alone", "harness"))
            print(f"   {kind:<8} overhead, throughput: watches and waits {a / h:.2f}, verbosity flags {q / a:.2f}, "
                  f"both {q / h:.2f}; attempt time: {dh / da:.2f}, {da / dq:.2f}, {dh / dq:.2f}")
            print(f"   {kind:<8} upstream minimum, measured elsewhere: {UPSTREAM[kind]}")
            for side in ("alone, quiet", "alone"):
                logged: Counter[tuple[bytes, str]] = results[(kind, side)]["log"]  # type: ignore[assignment]
                total = sum(v for (_, what), v in logged.items() if what == "bytes")
                top = sorted(((v, src) for (src, what), v in logged.items() if what == "lines"), reverse=True)[:5]
                print(f"   {kind:<8} scheduler log, {side}: {total / args.pods / 1024:.1f} KiB per pod; lines per pod: "
                      + ", ".join(f"{src.decode()} {v / args.pods:.0f} ({logged[(src, 'bytes')] / max(total, 1):.0%})"
                                  for v, src in top))
    if len(memory) > 1:
        (a, ma), (b, mb) = min(memory.items()), max(memory.items())
        print(f"== control-plane memory growth: {(mb - ma) / (b - a) * 1000:.1f} MiB per 1,000 nodes "
              f"({a} -> {b} nodes, idle after start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
