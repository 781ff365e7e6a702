"""策略隔离 — switching schedulerName moves only the workloads that ask for it.

Each pod is handled by the scheduler it names and no other; taints and pool
boundaries hold under both; pods naming a scheduler that is not running stay
Pending untouched, and the documented rollback (recreate them for the default
scheduler) places them.
"""

from __future__ import annotations

import pytest

from schedgate import scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import DEFAULT, PACKING, cpu_pod, gpu_pod

POOL = "schedgate.io/pool"
TRAINING_TAINT = "schedgate.io/dedicated"
NOT_RUNNING = "gpu-canary-scheduler"


def test_each_pod_is_scheduled_by_the_scheduler_it_names_and_by_no_other(cluster, ns, events):
    plain_pod = cpu_pod("web", 2).create(ns)
    gpu = gpu_pod("infer").create(ns)

    wait_for(plain_pod, scheduled_on(cluster.nodes_except("train"), never=cluster.pool("train")))
    wait_for(gpu, scheduled_on(cluster.pool("gpu-net"), never=cluster.pool("gpu-plain") + cluster.pool("cpu")))
    events.expect_scheduled(plain_pod, by=DEFAULT, node=plain_pod.node_name)
    events.expect_scheduled(gpu, by=PACKING, node=gpu.node_name)
    assert events.deciders(plain_pod) == {DEFAULT}
    assert events.deciders(gpu) == {PACKING}


@pytest.mark.parametrize("scheduler", [DEFAULT, PACKING])
def test_tainted_training_pool_admits_only_pods_that_tolerate_it(cluster, ns, events, scheduler):
    train = cluster.pool("train")
    elsewhere = cluster.nodes_except("train")
    intruder = gpu_pod("intruder", scheduler=scheduler).require_label(POOL, "train").create(ns)
    trainer = (gpu_pod("trainer", scheduler=scheduler).require_label(POOL, "train")
               .tolerate(TRAINING_TAINT, "training").create(ns))

    wait_for(intruder, unschedulable(message=r"untolerated taint"))
    events.expect_failed_scheduling(intruder, by=scheduler, message=rf"\b{len(train)} node\(s\) had untolerated taint")
    wait_for(trainer, scheduled_on(train, never=elsewhere))


def test_pods_for_a_scheduler_that_is_not_running_stay_pending_until_recreated_for_the_default(cluster, ns, events):
    net = cluster.pool("gpu-net")
    orphans = [gpu_pod(f"canary-{i}", scheduler=NOT_RUNNING).create(ns) for i in range(2)]
    # Pods created after the orphans, one per running scheduler: once both are bound,
    # each scheduler has looked at everything queued before them.
    witnesses = [gpu_pod("witness-default", scheduler=DEFAULT).create(ns),
                 gpu_pod("witness-packing", scheduler=PACKING).create(ns)]
    for w in witnesses:
        wait_for(w, scheduled_on(net))

    for pod in orphans:
        pod.refresh()
        assert pod.node_name is None, f"{pod.name} for {NOT_RUNNING} was bound to {pod.node_name}"
        assert pod.condition("PodScheduled") is None, f"{pod.name} was touched: {pod.state()}"
        assert events.for_pod(pod) == [], f"{pod.name} has events: {events.for_pod(pod)}"

    # Rollback as documented: stop pointing pods at the canary scheduler, recreate pending ones for the default.
    moved = [pod.recreate(scheduler=DEFAULT) for pod in orphans]
    for pod in moved:
        wait_for(pod, scheduled_on(net, never=cluster.nodes_except("gpu-net")))
        events.expect_scheduled(pod, by=DEFAULT, node=pod.node_name)
