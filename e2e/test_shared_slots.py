"""并发与回滚 — two schedulers racing for the last network slot: one wins, every round.

Two scheduler processes (profiles ``gpu-slots-a`` and ``gpu-slots-b`` of
``--shared-slots-scheduler-config``) run NetworkSlots over the same nodes.
Each keeps its own ledger and cannot see the other's reservations, so both
may pick a node's last slot at Filter. The claim is what decides: in PreBind
each updates one shared ConfigMap with a resourceVersion precondition, and
only a claim that still fits the node's capacity is written.

The race is made certain, not likely: both pods carry the test-only
``prebind-hold`` fault, which parks a pod in PreBind until the fault is
lifted. Only when both schedulers' ledgers show the reservation (both pods
are past Filter and Reserve) are both lifted. Asserted, five rounds in a row:

* never two holders of the one slot: exactly one pod binds, to the slotted
  node and nowhere else;
* the loser is never bound; it ends ``Unschedulable`` for lack of a network
  slot (after its refused claim, an error naming NetworkSlots and the node);
* the claims hold exactly the winner, and both ledgers show one bound holder;
  once both pods are deleted the claims and ledgers are empty again.

Filtering alone is not enough: without the claim (mutant
``shared-slots-no-claim``) both pods bind to the one slot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from schedgate import wait_for_items
from schedgate.kube.watch import MATCH, Check, fail, pending
from schedgate.pytest_plugin.options import shared_slots_config
from schedgate.workloads.gpu import gpu_pod

SLOTS = "schedgate.io/network-slots"
FAULT = "schedgate.io/fault"
HOLD = "prebind-hold"
LEDGER = "schedgate_network_slots"
ROUNDS = 5
NO_SLOT = "node(s) had no free network slot"
DEFAULT_POOL = ("kube-system", "schedgate-network-slot-claims")  # for a configuration without sharedPool


@dataclass
class ClaimPool:
    """The shared ConfigMap of claims, as something to wait on."""

    cluster: Any
    namespace: str
    name: str

    def describe(self) -> str:
        return f"configmap {self.namespace}/{self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.cluster.core.list_namespaced_config_map, (self.namespace,), \
            {"field_selector": f"metadata.name={self.name}"}

    def check_health(self) -> None:
        self.cluster.check_health()

    def wait_until(self, want: dict[str, str], description: str) -> None:
        def accept(items: list[dict[str, Any]]) -> Check:
            data = (items[0].get("data") or {}) if items else None
            return MATCH if data == want else pending(f"claims are {data}")
        wait_for_items(self, accept, description)


@pytest.fixture
def claim_pool(cluster, pytestconfig) -> Iterator[ClaimPool]:
    """The ConfigMap the profiles claim in, created empty (the schedulers may only get and update it)."""
    ns, name = (shared_slots_config(pytestconfig).shared_pools or [DEFAULT_POOL])[0]
    core = client.CoreV1Api(cluster.api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}
    core.create_namespaced_config_map(ns, body)
    yield ClaimPool(cluster, ns, name)
    core.delete_namespaced_config_map(name, ns)


@pytest.fixture
def racers(schedulers, pytestconfig, claim_pool):
    """One scheduler process per profile of ``--shared-slots-scheduler-config``."""
    return [schedulers.start(one) for one in shared_slots_config(pytestconfig).per_profile()]


def ledger(m, node: str) -> tuple[float, float]:
    return m.value(LEDGER, node=node, state="reserved"), m.value(LEDGER, node=node, state="bound")


def one_holder(node: str, names: set[str]) -> Callable[[list[dict[str, Any]]], Check]:
    """Exactly one of ``names`` bound to ``node``, the other Unschedulable for lack of a slot; two holders fail."""
    def accept(items: list[dict[str, Any]]) -> Check:
        pods = [p for p in items if p["metadata"]["name"] in names]
        bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")}
        if any(n != node for n in bound.values()):
            return fail(f"a pod was bound off the slotted node {node}: {bound}")
        if len(bound) > 1:
            return fail(f"two holders of the one slot on {node}: {sorted(bound)}")
        losers = [p for p in pods if not p["spec"].get("nodeName")]
        refused = [p for p in losers for c in (p.get("status") or {}).get("conditions") or []
                   if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                   and NO_SLOT in (c.get("message") or "")]
        if len(bound) == 1 and len(refused) == 1:
            return MATCH
        waiting = [(p["metadata"]["name"], (p.get("status") or {}).get("conditions")) for p in losers]
        return pending(f"bound {bound}, unbound {waiting}")
    return accept


def test_two_schedulers_racing_for_the_last_slot_never_both_win(cluster, ns, events, report, racers, claim_pool):
    node = cluster.pool("gpu-net")[0]
    cluster.nodes.annotate(node, SLOTS, "1")  # the only network slot in the cluster
    profiles = [s.profiles[0] for s in racers]
    wins = dict.fromkeys(profiles, 0)

    for r in range(ROUNDS):
        pods = {p: gpu_pod(f"r{r}-{p}", 1, p).annotate(SLOTS, "1").annotate(FAULT, HOLD).create(ns)
                for p in profiles}
        # Both are past Reserve, each in its own scheduler, and parked before their claim.
        for s in racers:
            s.wait_for_metrics(lambda m: ledger(m, node)[0] == 1, f"round {r}: reserving the slot")
        # Lifted one after the other, first a's then b's, and the other way round next round.
        for pod in list(pods.values())[::1 if r % 2 == 0 else -1]:
            pod.annotate(FAULT, None)

        items = wait_for_items(ns, one_holder(node, {p.name for p in pods.values()}),
                               f"round {r}: one holder of the slot on {node}")
        winner = next(p for p, pod in pods.items() if any(
            i["metadata"]["name"] == pod.name and i["spec"].get("nodeName") for i in items))
        loser = next(p for p in profiles if p != winner)
        wins[winner] += 1
        events.expect_scheduled(pods[winner], by=winner, node=node)
        events.expect_failed_scheduling(pods[loser], by=loser,
                                        message=rf"NetworkSlots PreBind: node {node} has no free network slot "
                                                r"in the shared pool")
        claim_pool.wait_until({pods[winner].refresh().uid: f"{ns.name}/{pods[winner].name} {node} 1"},
                              f"round {r}: holding the winner's claim alone")
        for s in racers:
            s.wait_for_metrics(lambda m: ledger(m, node) == (0, 1), f"round {r}: showing one bound holder")

        for pod in pods.values():
            pod.delete()
        claim_pool.wait_until({}, f"round {r}: empty once both pods are gone")
        for s in racers:
            s.wait_for_metrics(lambda m: ledger(m, node) == (0, 0), f"round {r}: showing no holder")

    for p, n in wins.items():
        report.figure(f"rounds won by {p}", n, "")
