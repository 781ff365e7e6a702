"""依赖故障 — when the extender times out or fails, nothing unsafe slips through.

The network-capacity extender owns ``schedgate.io/network-slot``. As a hard
filter (``ignorable: false``) its failure must hold its pods with
``SchedulerError`` while other pods keep flowing; as a soft dependency
(``ignorable: true``) its failure lets pods schedule without it — but never
past an in-tree hard constraint. Garbage or a short answer from it never puts
a pod on a node it rejected.
"""

from __future__ import annotations

import re
import time

import pytest

from schedgate import scheduled_on, scheduling_error, wait_for
from schedgate.faults.extender import NETWORK_SLOT
from schedgate.workloads.gpu import fill_gpus, gpu_pod

HARD, SOFT = "gpu-extender-hard", "gpu-extender-soft"
RECOVERY = 30.0  # seconds; scheduler backoff tops out at 10


def slot_pod(name: str, scheduler: str):
    """A 1-GPU network pod that also needs one network slot from the extender."""
    return gpu_pod(name, 1, scheduler).request(NETWORK_SLOT, 1)


def test_hard_extender_timing_out_holds_its_pods_and_they_bind_where_it_allows_once_it_recovers(
        cluster, ns, events, extender, extender_scheduler, report):
    net, plain = cluster.pool("gpu-net"), cluster.pool("gpu-plain")
    allowed = net[2]
    extender.slots = {allowed: 2}
    extender_scheduler("hard")
    extender.faults.latency = 5.0  # past the profile's 2 s httpTimeout

    pod = slot_pod("needs-slot", HARD).create(ns)
    # The error names the extender's filter URL and the timeout.
    filter_url = rf"{re.escape(extender.host)}:{extender.port}/filter"
    wait_for(pod, scheduling_error(message=rf"{filter_url}.*(deadline exceeded|Timeout)"))
    events.expect_failed_scheduling(pod, by=HARD, message=filter_url)

    # A pod that needs no slot is not the extender's business: the same profile still places it.
    unmanaged = gpu_pod("no-slot", 1, HARD).create(ns)
    wait_for(unmanaged, scheduled_on(net, never=plain))

    recovered = time.monotonic()
    extender.faults.clear()
    wait_for(pod, scheduled_on([allowed], never=[n for n in cluster.node_names if n != allowed]), timeout=RECOVERY)
    report.figure("extender recovered -> bound", time.monotonic() - recovered, "s")


def test_soft_extender_down_lets_pods_schedule_without_it_but_never_past_in_tree_constraints(
        cluster, ns, extender, extender_scheduler):
    net, plain, cpu, train = (cluster.pool(p) for p in ("gpu-net", "gpu-plain", "cpu", "train"))
    # The extender would only allow gpu-plain-1, a node the pod's required affinity rules out.
    extender.slots = {plain[0]: 4}
    fill_gpus(ns, net[1:])  # and only gpu-net-1 has GPUs free
    extender_scheduler("soft")
    extender_scheduler("hard")
    extender.down()

    soft = slot_pod("soft", SOFT).create(ns)
    hard = slot_pod("hard", HARD).create(ns)

    # Side by side: the hard dependency holds its pod, the soft one degrades safely.
    wait_for(hard, scheduling_error(message=r"connection refused"))
    wait_for(soft, scheduled_on(net[:1], never=net[1:] + plain + cpu + train))


@pytest.mark.parametrize("fault", ["malformed", "http-500"])
def test_hard_extender_answering_garbage_holds_the_pod_and_never_bypasses_its_filter(
        cluster, ns, extender, extender_scheduler, fault):
    net = cluster.pool("gpu-net")
    extender.slots = {net[3]: 1}
    extender_scheduler("hard")
    if fault == "malformed":
        extender.faults.malformed = True
    else:
        extender.faults.status = 500

    pod = slot_pod("needs-slot", HARD).create(ns)
    wait_for(pod, scheduling_error())

    extender.faults.clear()
    wait_for(pod, scheduled_on(net[3:], never=net[:3]), timeout=RECOVERY)


def test_hard_extender_dropping_nodes_from_its_answer_never_gets_a_pod_placed_there(
        cluster, ns, extender, extender_scheduler):
    net = cluster.pool("gpu-net")
    extender.slots = {net[0]: 1, net[1]: 1}
    extender.faults.drop = {net[0]}  # it passes gpu-net-1 but leaves it out of the answer
    extender_scheduler("hard")

    pods = [slot_pod(f"needs-slot-{i}", HARD).create(ns) for i in range(3)]
    for p in pods:
        wait_for(p, scheduled_on([net[1]], never=[net[0], *net[2:]]))
