"""并发与回滚 — a failure after Reserve leaks no network slot.

The NetworkSlots reference plugin (go/pkg/networkslots) keeps a ledger of
network slots per node (capacity from the node annotation
``schedgate.io/network-slots``) and exports it as
``schedgate_network_slots{node,state}``. A pod annotation injects a fault after
Reserve (test-only: the profile turns fault injection on). The cluster has one
slot. For each fault:

* the faulty pod ends as upstream says — a Permit rejection or timeout is
  ``Unschedulable``, a PreBind or Bind failure ``SchedulerError`` — with an
  event naming the plugin and stage;
* the slot comes back: the next pod that needs it gets it (a leaked
  reservation would block it for good), and the ledger shows exactly that one
  bound holder while the faulty pod stays unbound — never two holders of one
  slot;
* once the fault is lifted and the slot is free, the faulty pod binds.

While its fault lasts the faulty pod is retried, and with a Permit timeout it
holds the slot during every wait. The next pod therefore has a higher priority,
and the profile's Permit timeout (5 s) is longer than a pod's first backoff
(1 s): when the wait ends, the next pod is ready and goes first. With a 2 s
timeout the next pod's backoff kept growing and it took 20 s to get the slot.
"""

from __future__ import annotations

import time

import pytest

from schedgate import scheduled_on, scheduling_error, unschedulable, wait_for
from schedgate.pytest_plugin.options import slots_config
from schedgate.workloads.gpu import gpu_pod

SLOTS = "schedgate.io/network-slots"
FAULT = "schedgate.io/fault"
PROFILE = "gpu-network-slots"
LEDGER = "schedgate_network_slots"
HIGH = "schedgate-high"
HANDOVER = 15.0  # seconds for the slot to reach the next pod; it takes ~0.03 s


@pytest.fixture
def slots_scheduler(schedulers, pytestconfig):
    """A scheduler running the NetworkSlots profile (``--slots-scheduler-config``)."""
    return schedulers.start(slots_config(pytestconfig))


@pytest.fixture
def high_priority(cluster):
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": HIGH}, "value": 1000, "preemptionPolicy": "Never"}
    from kubernetes import client

    api = client.SchedulingV1Api(cluster.api)
    api.create_priority_class(body)
    yield HIGH
    api.delete_priority_class(HIGH)


def slot_pod(name: str):
    return gpu_pod(name, 1, PROFILE).annotate(SLOTS, "1")


def ledger(m, node: str) -> tuple[float, float]:
    return m.value(LEDGER, node=node, state="reserved"), m.value(LEDGER, node=node, state="bound")


@pytest.mark.parametrize(
    "fault, rejected, message",
    [
        pytest.param("permit-timeout", True, r"rejected due to timeout after waiting 5s at plugin NetworkSlots",
                     id="permit-timeout"),
        pytest.param("permit-reject", True, r"rejected by NetworkSlots fault injection", id="permit-reject"),
        pytest.param("prebind-fail", False, r"NetworkSlots PreBind fault injected", id="prebind-fail"),
        pytest.param("bind-fail", False, r"NetworkSlots Bind fault injected", id="bind-fail"),
    ],
)
def test_a_failure_after_reserve_gives_the_slot_back_and_the_pod_binds_once_the_fault_is_lifted(
        cluster, ns, events, report, slots_scheduler, high_priority, fault, rejected, message):
    node = cluster.pool("gpu-net")[0]
    elsewhere = [n for n in cluster.node_names if n != node]
    cluster.nodes.annotate(node, SLOTS, "1")  # the only network slot in the cluster

    faulty = slot_pod("faulty").annotate(FAULT, fault).create(ns)
    wait_for(faulty, unschedulable(message) if rejected else scheduling_error(message))
    events.expect_failed_scheduling(faulty, by=PROFILE, message=message)

    # The slot came back: the next pod gets it, and is its only holder.
    failed_at = time.monotonic()
    nxt = slot_pod("next").priority(high_priority).create(ns)
    wait_for(nxt, scheduled_on([node], never=elsewhere), timeout=HANDOVER)
    report.figure("failure -> slot taken by the next pod", time.monotonic() - failed_at, "s")
    slots_scheduler.wait_for_metrics(lambda m: ledger(m, node) == (0, 1), "showing one bound holder")
    assert faulty.refresh().node_name is None, f"two pods hold the one slot: {faulty.state()}"

    # Fault lifted and slot freed: the faulty pod binds, and holds the slot alone.
    faulty.annotate(FAULT, None)
    nxt.delete()
    wait_for(faulty, scheduled_on([node], never=elsewhere))
    slots_scheduler.wait_for_metrics(lambda m: ledger(m, node) == (0, 1), "showing the new holder alone")
