"""Resident memory of a running cluster's processes, for the benchmarks (bench/run.py, bench/fleet.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def print_memory(cluster: Any, width: int) -> float:
    """One line per control-plane process and the total (MiB); returns the total."""
    total = 0.0
    for p in cluster.backend.components():
        m = rss_mib(p.pid)
        total += m
        print(f"   {p.name:<{width}} {m:8.1f}")
    print(f"   {'total':<{width}} {total:8.1f}")
    return total
