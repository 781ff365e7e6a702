"""The design's GPU workloads as builders: inference pods, training pods, fillers.

Pods ask for memory in proportion to CPU (8Gi per core, the ratio of the
nodes in ``clusters/inference.yaml``), so BalancedAllocation scores every node
alike and placement differences come from the profile's resource strategy.
"""

from __future__ import annotations

from collections.abc import Iterable

from schedgate.kube.watch import wait_for
from schedgate.objects.builders import HIGH_SPEED_NET, PodBuilder, make_pod
from schedgate.objects.matchers import scheduled_on
from schedgate.objects.pods import Namespace, Pod

PACKING = "gpu-packing-scheduler"
DEFAULT = "default-scheduler"


def gpu_pod(name: str, gpus: int = 1, scheduler: str = PACKING, cpu_per_gpu: int = 4) -> PodBuilder:
    """A GPU pod that must land on a high-speed-network node (required node affinity)."""
    cpu = gpus * cpu_per_gpu
    return (make_pod(name).gpus(gpus).cpu(cpu).memory(f"{cpu * 8}Gi")
            .scheduler(scheduler).require_label(HIGH_SPEED_NET, "true"))


def cpu_pod(name: str, cpu: int, scheduler: str = DEFAULT) -> PodBuilder:
    """A pod with CPU and proportional memory and no GPU."""
    return make_pod(name).cpu(cpu).memory(f"{cpu * 8}Gi").scheduler(scheduler)


def fill_gpus(ns: Namespace, nodes: Iterable[str], gpus: int = 8) -> dict[str, Pod]:
    """Pre-bind a pod holding ``gpus`` GPUs on each node (no scheduler involved)."""
    return {n: make_pod(f"filler-{n}").gpus(gpus).cpu(1).memory("8Gi").on_node(n).create(ns) for n in nodes}


def place_in_order(ns: Namespace, builders: Iterable[PodBuilder], allowed: Iterable[str]) -> list[Pod]:
    """Create pods one at a time, each after the previous is bound inside ``allowed``."""
    allowed = list(allowed)
    placed = []
    for b in builders:
        placed.append(wait_for(b.create(ns), scheduled_on(allowed)))
    return placed
