"""Providers side by side, from one run: cluster start to ready, node image build, suite wall time.

    .venv/bin/python bench/providers.py                 # starts: local x3, kind x1; image warm and cold
    .venv/bin/python bench/providers.py --suites        # also pytest e2e on each provider, one after the other, -n 2

Cold image build = the node image rebuilt from the cached binaries and Debian
rootfs (the Go builds themselves are measured by `make tools` / scripts/node-binaries).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedgate.providers import ClusterRequest, start_cluster  # noqa: E402
from schedgate.spec.cluster import load_definition  # noqa: E402
from schedgate.spec.schedconfig import load_scheduler_config  # noqa: E402


def request(provider: str) -> ClusterRequest:
    return ClusterRequest(provider, load_definition(ROOT / "clusters/inference.yaml"),
                          load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml"))


def start_once(provider: str) -> float:
    t0 = time.monotonic()
    started = start_cluster(replace(request(provider)), out=None)
    ready = time.monotonic() - t0
    started.stop()
    return ready


def image_build(cold: bool) -> float:
    name = subprocess.run([str(ROOT / "scripts/kind-image")], capture_output=True, text=True, check=True)
    image = name.stdout.strip().splitlines()[-1]
    if cold:
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True, check=False)
    t0 = time.monotonic()
    subprocess.run([str(ROOT / "scripts/kind-image")], capture_output=True, text=True, check=True)
    return time.monotonic() - t0


def suite(provider: str, jobs: int) -> tuple[float, str]:
    """``pytest e2e`` on ``provider`` as ``make e2e`` runs it (``jobs`` pytest-xdist workers; 1: one process)."""
    t0 = time.monotonic()
    workers = ["-n", str(jobs)] if jobs > 1 else []
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "e2e", "--provider",
                          provider, *workers, "--artifacts-on", "never"], cwd=ROOT, capture_output=True, text=True)
    lines = out.stdout.splitlines()
    last = [x for x in lines if " passed" in x or " failed" in x]
    failed = [x.split(" - ")[0] for x in lines if x.startswith(("FAILED ", "ERROR "))]  # -q's short summary
    said = last[-1] if last else f"exit {out.returncode}"
    return time.monotonic() - t0, said + "".join(f"\n      {x}" for x in failed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--local-starts", type=int, default=3)
    ap.add_argument("--kind-starts", type=int, default=1)
    ap.add_argument("--suites", action="store_true", help="also time pytest e2e on each provider")
    ap.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers of each suite, as make e2e (1: none)")
    args = ap.parse_args()
    rows: list[tuple[str, str]] = []
    local = [start_once("local") for _ in range(args.local_starts)]
    rows.append(("local: start to ready (s)", f"median {statistics.median(local):.2f} over {len(local)}: "
                 + ", ".join(f"{x:.2f}" for x in local)))
    rows.append(("kind: node image, present (s)", f"{image_build(cold=False):.1f}"))
    rows.append(("kind: node image, rebuilt from cached inputs (s)", f"{image_build(cold=True):.1f}"))
    kind = [start_once("kind") for _ in range(args.kind_starts)]
    rows.append(("kind: create to ready, its control plane + 9 kwok nodes (s)",
                 f"median {statistics.median(kind):.1f} over {len(kind)}: " + ", ".join(f"{x:.1f}" for x in kind)))
    if args.suites:
        for provider in ("local", "kind"):
            took, result = suite(provider, args.jobs)
            rows.append((f"{provider}: pytest e2e -n {args.jobs} wall time (s)", f"{took:.1f} ({result})"))
    width = max(len(k) for k, _ in rows)
    print("schedgate providers, side by side")
    for k, v in rows:
        print(f"  {k.ljust(width)}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
