"""并发与回滚 — the real-world causes of a rollback after Reserve leak no slot.

``test_rollback.py`` injects a failure at each stage after Reserve. Here the
failures come from what happens in a cluster while a pod waits at Permit: the
pod is deleted, its node is deleted, or the scheduler is restarted.

A pod annotated ``schedgate.io/fault: permit-hold`` (test-only: the profile
turns fault injection on) is reserved and then waits at Permit for the
plugin's ``holdTimeoutSeconds`` (default 30 s); the plugin allows it as soon as
the annotation is removed. That gives a deterministic "reserved and waiting"
state, seen in the plugin's ledger ``schedgate_network_slots{node,state}`` as
one reserved slot. Every deadline below is far shorter than the hold, so a
slot that only comes back when the hold times out fails the scenario.
"""

from __future__ import annotations

import time

import pytest

from schedgate import scheduled_on, unschedulable, wait_for
from schedgate.objects.metrics import MetricsSnapshot
from schedgate.pytest_plugin.options import slots_config
from schedgate.runtime.scheduler import Scheduler
from schedgate.workloads.gpu import gpu_pod

SLOTS = "schedgate.io/network-slots"
FAULT = "schedgate.io/fault"
HOLD = "permit-hold"
PROFILE = "gpu-network-slots"
LEDGER = "schedgate_network_slots"
NO_SLOT = r"had no free network slot"
AT_ONCE = 5.0  # seconds for a freed slot to be taken; the hold lasts 30 s
REFUSED = 10.0  # seconds for a pod to be refused while the slot is held
# A killed scheduler's successor that elects a leader waits for the old lease to expire (8 s as schedgate
# starts a configuration that turns election on and sets no timing; 15 s is kube-scheduler's own default)
# before it schedules again; without leader election (schedgate's default) it schedules at once.
AFTER_RESTART = 45.0


@pytest.fixture
def slots_scheduler(schedulers, pytestconfig):
    """A scheduler running the NetworkSlots profile (``--slots-scheduler-config``)."""
    return schedulers.start(slots_config(pytestconfig))


def slot_pod(name: str):
    return gpu_pod(name, 1, PROFILE).annotate(SLOTS, "1")


def ledger(m: MetricsSnapshot, node: str) -> tuple[float, float]:
    """(reserved, bound) slots on ``node`` in the plugin's ledger."""
    return m.value(LEDGER, node=node, state="reserved"), m.value(LEDGER, node=node, state="bound")


def wait_for_ledger(s: Scheduler, node: str, reserved: float, bound: float, why: str,
                    timeout: float = 15.0) -> None:
    s.wait_for_metrics(lambda m: ledger(m, node) == (reserved, bound),
                       f"showing {node} with {reserved:.0f} reserved and {bound:.0f} bound ({why})", timeout)


def test_a_pod_deleted_while_waiting_at_permit_gives_its_slot_to_the_next_pod_at_once(
        cluster, ns, report, slots_scheduler):
    """Deleting a pod that waits at Permit ends its wait: the scheduler rejects the
    waiting pod, Unreserve returns the slot, and the pod refused for lack of that
    slot binds to it within 5 s — not when the 30 s hold would have ended. A
    plugin that holds pods by blocking inside Permit ties up the scheduling cycle
    and never gets this far."""
    node = cluster.pool("gpu-net")[0]
    elsewhere = [n for n in cluster.node_names if n != node]
    cluster.nodes.annotate(node, SLOTS, "1")  # the only network slot in the cluster

    held = slot_pod("held").annotate(FAULT, HOLD).create(ns)
    wait_for_ledger(slots_scheduler, node, 1, 0, "held reserved it and waits at Permit")
    nxt = slot_pod("next").create(ns)
    wait_for(nxt, unschedulable(NO_SLOT), timeout=REFUSED)
    assert held.refresh().node_name is None, f"the held pod bound while its hold lasts: {held.state()}"

    deleted_at = time.monotonic()
    held.delete()
    slots_scheduler.wait_for_metrics(lambda m: ledger(m, node)[0] == 0, "releasing the deleted pod's reservation",
                                     timeout=AT_ONCE)
    report.figure("waiting pod deleted -> reservation released", time.monotonic() - deleted_at, "s")
    wait_for(nxt, scheduled_on([node], never=elsewhere), timeout=AT_ONCE)
    report.figure("waiting pod deleted -> slot bound to the next pod", time.monotonic() - deleted_at, "s")
    wait_for_ledger(slots_scheduler, node, 0, 1, "the next pod is the slot's one holder")


def test_a_node_deleted_between_reserve_and_bind_fails_prebind_and_the_pod_binds_elsewhere(
        cluster, ns, events, report, slots_scheduler):
    """A pod reserved on a node that is deleted while it waits at Permit must never
    be bound there: the API server accepts a binding to a node that does not exist,
    so only PreBind's re-read of the node stands in the way. PreBind fails with a
    SchedulerError naming the vanished node, Unreserve returns the reservation, and
    the pod binds to the one node that has a free slot."""
    doomed, spare = cluster.pool("gpu-net")[:2]
    forbidden = [n for n in cluster.node_names if n != spare]
    cluster.nodes.annotate(doomed, SLOTS, "1")  # the only slot while the pod is reserved

    held = slot_pod("held").annotate(FAULT, HOLD).create(ns)
    wait_for_ledger(slots_scheduler, doomed, 1, 0, "held reserved it and waits at Permit")
    cluster.nodes.delete(doomed)
    cluster.sync_schedulers()  # every scheduler has seen the node go
    cluster.nodes.annotate(spare, SLOTS, "1")

    lifted_at = time.monotonic()
    held.annotate(FAULT, None)
    wait_for(held, scheduled_on([spare], never=forbidden), timeout=AT_ONCE * 2)
    report.figure("hold lifted on a deleted node -> bound on the spare node", time.monotonic() - lifted_at, "s")
    events.expect_failed_scheduling(held, by=PROFILE, message=rf"NetworkSlots PreBind: node {doomed} no longer exists")
    wait_for_ledger(slots_scheduler, doomed, 0, 0, "the deleted node's reservation returned")
    wait_for_ledger(slots_scheduler, spare, 0, 1, "the pod holds the spare node's slot")


def test_a_scheduler_restarted_while_a_pod_waits_at_permit_never_books_more_holders_than_slots(
        cluster, ns, report, slots_scheduler):
    """A scheduler killed while a pod waits at Permit loses its in-memory ledger.
    The new process must count the pods bound before it started (the scheduler's
    snapshot and the ledger rebuilt from the pod informer), so with one slot bound
    and the other reserved again for the waiting pod, a third pod is refused; once
    the hold is lifted the waiting pod binds there, once, beside the first holder."""
    node = cluster.pool("gpu-net")[0]
    elsewhere = [n for n in cluster.node_names if n != node]
    cluster.nodes.annotate(node, SLOTS, "2")  # the only network slots in the cluster

    holder = wait_for(slot_pod("holder").create(ns), scheduled_on([node], never=elsewhere))
    held = slot_pod("held").annotate(FAULT, HOLD).create(ns)
    wait_for_ledger(slots_scheduler, node, 1, 1, "holder bound, held waits at Permit")

    killed_at = time.monotonic()
    slots_scheduler.kill()
    report.figure("restarted scheduler: start to healthy", slots_scheduler.start(), "s")
    slots_scheduler.wait_for_metrics(lambda m: ledger(m, node)[0] == 1,
                                     "reserving the slot again for the held pod", timeout=AFTER_RESTART)
    report.figure("scheduler killed -> held pod reserved again", time.monotonic() - killed_at, "s")
    assert held.refresh().node_name is None, f"the held pod bound while its hold lasts: {held.state()}"

    third = slot_pod("third").create(ns)
    wait_for(third, unschedulable(NO_SLOT), timeout=REFUSED)
    wait_for_ledger(slots_scheduler, node, 1, 1, "after the restart: the holder bound, the held pod reserved")

    held.annotate(FAULT, None)
    wait_for(held, scheduled_on([node], never=elsewhere), timeout=AT_ONCE)
    wait_for_ledger(slots_scheduler, node, 0, 2, "both slots bound")
    assert holder.refresh().node_name == node, f"the first holder moved: {holder.state()}"
    assert third.refresh().node_name is None, f"three pods hold two slots: {third.state()}"
