"""缓存变化 — a pending pod that a change makes placeable is bound promptly.

Each case makes the pod Unschedulable for a stated reason, checks the
scheduler names that reason, changes the cluster (a label added, GPUs coming
back online, a pod deleted), and waits for the bind on exactly the node the
change opened. The deadline is far below the scheduler's 5-minute flush of
unschedulable pods: only event-driven requeueing meets it.
"""

from __future__ import annotations

import time

from schedgate import HIGH_SPEED_NET, scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import PACKING, fill_gpus, gpu_pod

PROMPTLY = 20.0  # seconds; the unschedulable-pod flush is 300


def test_label_added_to_a_node_with_room_binds_the_waiting_pod_there(cluster, ns, events, report):
    net, plain, cpu = cluster.pool("gpu-net"), cluster.pool("gpu-plain"), cluster.pool("cpu")
    fill_gpus(ns, net)
    pod = gpu_pod("infer").create(ns)
    wait_for(pod, unschedulable(message=rf"\b{len(plain) + len(cpu)} node\(s\) didn't match Pod's node affinity"))

    target = plain[0]
    changed = time.monotonic()
    cluster.nodes.label(target, HIGH_SPEED_NET, "true")

    wait_for(pod, scheduled_on([target], never=net + plain[1:] + cpu), timeout=PROMPTLY)
    report.figure("label added -> bound", time.monotonic() - changed, "s")
    events.expect_scheduled(pod, by=PACKING, node=target)


def test_gpus_back_online_bind_the_waiting_pod_and_offline_gpus_are_never_used(cluster, ns, report):
    net, plain = cluster.pool("gpu-net"), cluster.pool("gpu-plain")
    shrunk, back, *offline = net
    # shrunk: 6 of its 8 devices go offline while 2 are in use; the rest go offline entirely.
    gpu_pod("resident", 2, PACKING).on_node(shrunk).create(ns)
    cluster.nodes.set_gpus(shrunk, 2)
    for node in [back, *offline]:
        cluster.nodes.set_gpus(node, 0)

    pod = gpu_pod("infer").create(ns)
    wait_for(pod, unschedulable(message=rf"\b{len(net)} Insufficient nvidia\.com/gpu"))

    changed = time.monotonic()
    cluster.nodes.set_gpus(back, 8)

    wait_for(pod, scheduled_on([back], never=[shrunk, *offline, *plain]), timeout=PROMPTLY)
    report.figure("GPUs online -> bound", time.monotonic() - changed, "s")


def test_deleting_a_pod_frees_its_node_for_the_waiting_pod(cluster, ns, report):
    net = cluster.pool("gpu-net")
    fillers = fill_gpus(ns, net)
    pod = gpu_pod("infer", 8).create(ns)
    wait_for(pod, unschedulable(message=rf"\b{len(net)} Insufficient nvidia\.com/gpu"))

    freed = net[2]
    changed = time.monotonic()
    fillers[freed].delete()

    wait_for(pod, scheduled_on([freed], never=[n for n in cluster.node_names if n != freed]), timeout=PROMPTLY)
    report.figure("pod deleted -> bound", time.monotonic() - changed, "s")
