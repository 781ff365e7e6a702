"""硬条件验证 — the network is a hard constraint, not a preference.

Only GPU nodes without the high-speed-network label have room: the pod must
stay Unschedulable (not fall back to a wrong node), say why, and bind to a
network node — that one and no other — as soon as one has room.
"""

from __future__ import annotations

from schedgate import scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import PACKING, fill_gpus, gpu_pod

ATTEMPTS = "scheduler_schedule_attempts_total"


def test_gpu_pod_stays_unschedulable_while_only_nodes_without_the_network_have_room(cluster, ns, events):
    net, plain, cpu = cluster.pool("gpu-net"), cluster.pool("gpu-plain"), cluster.pool("cpu")
    scheduler = cluster.scheduler(PACKING)
    before = scheduler.metrics()
    fillers = fill_gpus(ns, net)  # every network GPU is taken; gpu-plain nodes are empty

    pod = gpu_pod("infer").create(ns)

    # gpu-plain nodes have 8 free GPUs each but no network: they must not be used.
    wait_for(pod, unschedulable(message=rf"^0/{cluster.node_count()} nodes are available"))
    assert pod.refresh().node_name is None
    # The reasons count each node once: network nodes are full, the others lack the label.
    events.expect_failed_scheduling(pod, by=PACKING, message=rf"\b{len(net)} Insufficient nvidia\.com/gpu")
    events.expect_failed_scheduling(
        pod, by=PACKING, message=rf"\b{len(plain) + len(cpu)} node\(s\) didn't match Pod's node affinity/selector")
    # The scheduler counts it as a rejection, not an error, and parks it with the plugins that rejected it.
    unsched = before.value(ATTEMPTS, profile=PACKING, result="unschedulable")
    after = scheduler.wait_for_metrics(
        lambda m: m.value(ATTEMPTS, profile=PACKING, result="unschedulable") > unsched, "counting the rejection")
    assert after.value(ATTEMPTS, profile=PACKING, result="error") == before.value(ATTEMPTS, profile=PACKING,
                                                                                    result="error")
    # Counted as a change: the gauge is the profile's, and v1.35.4's kept a pod an earlier test had parked
    # (NodeAffinity 2 with one pod in the unschedulable queue, in make matrix).
    parked = {p: after.value("scheduler_unschedulable_pods", profile=PACKING, plugin=p)
              - before.value("scheduler_unschedulable_pods", profile=PACKING, plugin=p)
              for p in ("NodeAffinity", "NodeResourcesFit")}
    assert parked == {"NodeAffinity": 1, "NodeResourcesFit": 1}

    # A network node gets room: the pod binds there, and only there.
    freed = net[1]
    fillers[freed].delete()
    wait_for(pod, scheduled_on([freed], never=plain + cpu + cluster.pool("train")))
    events.expect_scheduled(pod, by=PACKING, node=freed)

