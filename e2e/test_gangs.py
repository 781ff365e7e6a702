"""一组训练 Pod 要达到最低数量才推进 — gangs: admitted whole at Permit, or not at all.

The Gang reference plugin (go/pkg/gang, profile ``gang-scheduler``, Permit timeout 10 s) on the
design's four network nodes with eight GPUs each. Every member asks for a whole node (8 GPUs,
network nodes only: ``gpu-net-1`` .. ``gpu-net-4``; ``train-1`` is tainted, the rest have no
network). The failure paths coscheduling users report are each asserted exactly:

* a group of four with three nodes free: no member binds, no node stays reserved, and a smaller
  pod then uses one of the three;
* a group short of its last member (held by a scheduling gate) holds three nodes at Permit — a
  smaller pod waits — and gives them back at the timeout, when the smaller pod binds there;
* a member deleted while the others wait: the others are rejected with it (not one by one at
  their timeouts), and the group binds whole once a new member joins;
* two groups racing for the same four nodes: one binds whole on all four, the other not at all;
* the scheduler restarted while a group waits: nothing was bound, and the group binds whole once
  its last member comes.
"""

from __future__ import annotations

import time

import pytest

from schedgate import scheduled_on, unschedulable, wait_for, wait_for_items
from schedgate.kube.watch import MATCH, pending
from schedgate.objects.builders import PodBuilder
from schedgate.pytest_plugin.options import gang_config
from schedgate.workloads.gang import gated, lift_gate, member, wait_waiting
from schedgate.workloads.gpu import fill_gpus, gpu_pod

GANG = "gang-scheduler"


@pytest.fixture
def gang(schedulers, pytestconfig):
    return schedulers.start(gang_config(pytestconfig))


@pytest.fixture
def net(cluster):
    return cluster.pool("gpu-net")


def group(name: str, size: int, min_members: int | None = None) -> list[PodBuilder]:
    return [member(f"{name}-{i}", name, min_members or size) for i in range(1, size + 1)]


def test_a_group_larger_than_the_free_nodes_binds_no_member_and_keeps_no_node(cluster, ns, gang, net, report):
    fill_gpus(ns, net[3:])                       # gpu-net-4 full: three nodes for four members
    free = net[:3]
    started = time.monotonic()
    members = [b.create(ns) for b in group("big", 4)]
    for p in members:
        wait_for(p, unschedulable())             # bound anywhere fails at once
    report.figure("group of 4, 3 nodes free: created -> every member refused", time.monotonic() - started, "s")
    wait_waiting(gang, ns.name, "big", 0)        # no member holds a reservation
    small = gpu_pod("small", gpus=1, scheduler=GANG).create(ns)
    wait_for(small, scheduled_on(free, never=[n for n in cluster.node_names if n not in free]))
    for p in members:
        assert p.refresh().node_name is None, f"gang member {p.name} was bound to {p.node_name}"


def test_a_group_short_of_its_last_member_holds_its_nodes_until_the_timeout_then_frees_them(
        cluster, ns, gang, net, report):
    fill_gpus(ns, net[3:])
    free = net[:3]
    # The gated member first: it exists (the group counts it) before any other is tried, and is never scheduled.
    last = gated(member("short-4", "short", 4)).create(ns)
    members = [b.create(ns) for b in group("short", 3, min_members=4)]
    wait_waiting(gang, ns.name, "short", 3)      # three nodes reserved at Permit
    held = time.monotonic()
    small = gpu_pod("small", gpus=1, scheduler=GANG).create(ns)
    wait_for(small, unschedulable("Insufficient nvidia.com/gpu"))   # the reservations hold
    wait_for(small, scheduled_on(free, never=[n for n in cluster.node_names if n not in free]), timeout=30)
    report.figure("group waiting at Permit -> its nodes free (timeout 10 s)", time.monotonic() - held, "s")
    for p in [*members, last]:
        assert p.refresh().node_name is None, f"gang member {p.name} was bound to {p.node_name}"


def test_a_member_deleted_while_the_group_waits_rejects_the_whole_group_which_retries(
        cluster, ns, events, gang, net, report):
    last = gated(member("g-4", "g", 4)).create(ns)
    first, *rest = [b.create(ns) for b in group("g", 3, min_members=4)]
    wait_waiting(gang, ns.name, "g", 3)
    first.delete()
    # Rejected with it, not at their own timeouts. g-1's rollback rejects g-2 and g-3; g-2's own rollback, on
    # its binding goroutine, may reach g-3 first (the rehearsal of 35ab341: "member g-2 was rejected").
    for p in rest:
        events.expect_failed_scheduling(p, by=GANG, message=r"gang g: member g-[12] was rejected", timeout=8)
    started = time.monotonic()
    newcomer = member("g-5", "g", 4).create(ns)
    lift_gate(last)
    admitted = [*rest, last, newcomer]
    for p in admitted:
        wait_for(p, scheduled_on(net, never=[n for n in cluster.node_names if n not in net]))
    assert sorted(p.refresh().node_name or "" for p in admitted) == sorted(net), "the group is not one per node"
    report.figure("group complete again -> every member bound", time.monotonic() - started, "s")


def test_two_groups_racing_for_the_same_four_nodes_one_binds_whole_the_other_not_at_all(cluster, ns, gang, net,
                                                                                       report):
    a, b = group("a", 4), group("b", 4)
    started = time.monotonic()
    pods = [x.create(ns) for pair in zip(a, b, strict=True) for x in pair]   # a-1, b-1, a-2, b-2, ...

    def four_bound(items):
        n = sum(1 for p in items if (p.get("spec") or {}).get("nodeName"))
        return MATCH if n >= 4 else pending(f"{n} bound")

    wait_for_items(ns, four_bound, "four gang members bound", timeout=60)
    report.figure("two groups created -> one bound whole", time.monotonic() - started, "s")
    bound = {p.name: p.refresh().node_name for p in pods if p.refresh().node_name}
    groups = {name.split("-")[0] for name in bound}
    assert len(groups) == 1 and len(bound) == 4, f"members of both groups bound: {bound}"
    assert sorted(bound.values()) == sorted(net), f"the winning group is not one per network node: {bound}"
    loser = [p for p in pods if p.name.split("-")[0] not in groups]
    for p in loser:
        wait_for(p, unschedulable())


def test_a_scheduler_restart_while_a_group_waits_binds_nothing_and_the_group_completes_after(
        cluster, ns, gang, net):
    last = gated(member("r-4", "r", 4)).create(ns)
    members = [b.create(ns) for b in group("r", 3, min_members=4)]
    wait_waiting(gang, ns.name, "r", 3)
    gang.stop()                                  # the waiting members' reservations die with the process
    gang.start()
    wait_waiting(gang, ns.name, "r", 3)          # the new process holds them again, from the API alone
    for p in members:
        assert p.refresh().node_name is None, f"gang member {p.name} was bound across the restart"
    lift_gate(last)
    for p in [*members, last]:
        wait_for(p, scheduled_on(net, never=[n for n in cluster.node_names if n not in net]))
    assert sorted(p.refresh().node_name or "" for p in [*members, last]) == sorted(net)
