"""schedgate benchmarks: figures printed side by side from one run (no timed tests).

    make bench                       # or: .venv/bin/python bench/run.py --starts 3 --binds 20

1. local cluster start to ready (each phase), over --starts runs;
2. resident memory of the running control plane;
3. bind latency after a cache change (a GPU filler deleted -> the waiting pod
   bound), over --binds rounds on one cluster;
4. wall time of the whole scenario suite (pytest e2e) in a subprocess, and where its CPU went: etcd,
   kube-apiserver, kube-controller-manager, every kube-scheduler, the Python side (bench/cpu.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cpu import CpuSplit, print_split  # noqa: E402  (bench/, the script's own folder)
from memory import print_memory  # noqa: E402

from schedgate import scheduled_on, unschedulable, wait_for  # noqa: E402
from schedgate.providers import ClusterRequest, start_cluster  # noqa: E402
from schedgate.spec.cluster import load_definition  # noqa: E402
from schedgate.spec.schedconfig import load_scheduler_config  # noqa: E402
from schedgate.workloads.gpu import fill_gpus, gpu_pod  # noqa: E402


def request() -> ClusterRequest:
    return ClusterRequest("local", load_definition(ROOT / "clusters/inference.yaml"),
                          load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml"))


def summary(xs: list[float]) -> str:
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return f"median {statistics.median(xs):.3f}  min {xs[0]:.3f}  p90 {p90:.3f}  max {xs[-1]:.3f}  (n={len(xs)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--binds", type=int, default=20)
    ap.add_argument("--no-suite", action="store_true")
    ap.add_argument("--suite-args", default="", help="more pytest arguments for the suite, e.g. '-n 2'")
    args = ap.parse_args()

    phases: dict[str, list[float]] = {}
    last = None
    for i in range(args.starts):
        t0 = time.monotonic()
        started = start_cluster(request(), out=None)
        wall = time.monotonic() - t0
        for k, v in started.cluster.timings.items():
            phases.setdefault(k, []).append(v)
        phases.setdefault("wall (incl. binary check)", []).append(wall)
        if i < args.starts - 1:
            started.stop()
        else:
            last = started
    print("== local cluster: start to ready, seconds")
    for k, v in phases.items():
        print(f"   {k:<28} {summary(v)}")

    assert last is not None
    c = last.cluster
    print("== local control plane: resident memory, MiB (cluster idle, after start)")
    print_memory(c, 28)

    print("== bind latency after a cache change (filler pod deleted -> waiting pod bound), seconds")
    net = c.pool("gpu-net")
    lat = []
    try:
        for i in range(args.binds):
            ns = c.new_namespace(f"bench-{i}")
            fillers = fill_gpus(ns, net)
            pod = gpu_pod("waiting", 8).create(ns)
            wait_for(pod, unschedulable())
            freed = net[i % len(net)]
            t = time.monotonic()
            fillers[freed].delete()
            wait_for(pod, scheduled_on([freed]))
            lat.append(time.monotonic() - t)
            ns.clean()
    finally:
        last.stop()
    print(f"   {'delete -> bound observed':<28} {summary(lat)}")

    if not args.no_suite:
        print("== scenario suite (pytest e2e, local provider, includes cluster start): wall time and CPU by process")
        t = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "e2e", "-q", "-p", "no:cacheprovider",
                                 *args.suite_args.split()], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        split = CpuSplit(proc.pid).start()
        out, _ = proc.communicate()
        wall = time.monotonic() - t
        cpu = split.stop()
        tail = [x for x in out.splitlines() if " passed" in x or " failed" in x][-1:]
        print(f"   {'pytest e2e':<28} {wall:.1f} s  ({tail[0].strip('= ') if tail else proc.returncode})")
        print_split(cpu, wall, len(split.seen), 28)
    return 0


if __name__ == "__main__":
    sys.exit(main())
