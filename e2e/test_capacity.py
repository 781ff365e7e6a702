"""容量与碎片 — packing keeps whole 8-GPU nodes free for training.

One fixed arrival sequence of 1- and 4-GPU pods, then an 8-GPU training pod,
run once through the packing profile and once through the default scheduler.
Each outcome is asserted exactly: "at least as many whole nodes" would pass a
broken profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from schedgate import scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import DEFAULT, PACKING, cpu_pod, gpu_pod, place_in_order

# Four 1-GPU inference pods, then a 4-GPU one, all on the 4 network nodes.
ARRIVALS = (1, 1, 1, 1, 4)


@dataclass(frozen=True)
class Outcome:
    nodes_used_by_small_pods: int
    whole_nodes_left: int
    training_pod_placed: bool


@pytest.mark.parametrize(
    "scheduler, expected",
    [
        # MostAllocated with nvidia.com/gpu weighted 4: all small pods share one node (8/8 GPUs).
        pytest.param(PACKING, Outcome(nodes_used_by_small_pods=1, whole_nodes_left=3, training_pod_placed=True),
                     id="packing-profile-keeps-three-whole-nodes"),
        # Upstream LeastAllocated spreads the 1-GPU pods over all four nodes: no whole node is left.
        pytest.param(DEFAULT, Outcome(nodes_used_by_small_pods=4, whole_nodes_left=0, training_pod_placed=False),
                     id="default-scheduler-spreads-and-strands-training"),
    ],
)
def test_mixed_arrivals_leave_whole_nodes_for_training_only_when_packed(cluster, ns, report, scheduler, expected):
    net = cluster.pool("gpu-net")
    small = place_in_order(ns, [gpu_pod(f"infer-{i}-{g}gpu", g, scheduler) for i, g in enumerate(ARRIVALS)], net)
    used = sorted({p.node_name for p in small})
    whole = cluster.whole_free_nodes(net)
    report.figure("nodes used by small pods", len(used))
    report.figure("whole free 8-GPU nodes", len(whole))

    assert len(used) == expected.nodes_used_by_small_pods, f"small pods landed on {used}"
    assert len(whole) == expected.whole_nodes_left, f"whole free nodes: {whole}"

    training = gpu_pod("train-8gpu", 8, scheduler).create(ns)
    if expected.training_pod_placed:
        wait_for(training, scheduled_on(whole, never=used))
    else:
        wait_for(training, unschedulable(message=rf"\b{len(net)} Insufficient nvidia\.com/gpu"))
    report.figure("training pod placed", training.refresh().node_name or "no")


def test_one_gpu_pod_joins_the_node_with_gpus_in_use_not_the_node_with_more_cpu_in_use(cluster, ns):
    gpu_busy, cpu_busy, *empty = cluster.pool("gpu-net")
    # gpu_busy holds 1 of 8 GPUs and 1 of 64 cores; cpu_busy holds no GPU but 12 cores.
    gpu_pod("resident", 1, PACKING, cpu_per_gpu=1).on_node(gpu_busy).create(ns)
    cpu_pod("batch", 12).on_node(cpu_busy).create(ns)

    # With nvidia.com/gpu weighted 4 the GPU share decides; with cpu/memory alone cpu_busy would win.
    pod = gpu_pod("infer", 1, PACKING, cpu_per_gpu=1).create(ns)

    wait_for(pod, scheduled_on([gpu_busy], never=[cpu_busy, *empty]))
