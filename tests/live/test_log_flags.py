"""A scheduler's log flags follow the nodes it runs on: per-node, per-plugin score lines up to SCORED_UP_TO
nodes, none above (they slow a scheduler several times over and fill its log). A session's scheduler started
for a small cluster, on whose control plane a file of 320 nodes then runs, logged them all."""

from __future__ import annotations

from support import ROOT

from schedgate import scheduled_on, wait_for
from schedgate.objects.schedlog import SCORED_UP_TO, read_logs
from schedgate.spec.cluster import load_definition
from schedgate.workloads.gpu import PACKING, gpu_pod


def scores_of(cluster, pod) -> dict:
    s = cluster.scheduler(PACKING)
    attempts = read_logs([s.log_path], {pod.ns.name})[f"{pod.ns.name}/{pod.name}"].attempts
    bound = [a for a in attempts if a.bound_to]
    assert bound, attempts
    return bound[-1].scores


def test_a_scheduler_logs_scores_on_a_small_cluster_and_none_once_its_plane_runs_a_large_one(cluster, ns):
    small = cluster.definition
    fleet = load_definition(ROOT / "clusters" / "fleet.yaml")
    assert len(small.nodes()) <= SCORED_UP_TO < len(fleet.nodes())
    first = gpu_pod("on-the-small-cluster").create(ns)
    wait_for(first, scheduled_on(cluster.pool("gpu-net"), never=cluster.nodes_except("gpu-net")))
    assert scores_of(cluster, first), "no score lines on a small cluster"
    big = None
    try:
        cluster.redefine(fleet)
        cluster.sync_schedulers()
        big = gpu_pod("on-the-fleet").create(ns)
        wait_for(big, scheduled_on(cluster.pool("fleet-net"), never=cluster.nodes_except("fleet-net")))
        assert scores_of(cluster, big) == {}, "score lines on 320 nodes"
    finally:
        if big is not None:
            big.delete()
        cluster.redefine(small)
        cluster.sync_schedulers()
    again = gpu_pod("small-again").create(ns)
    wait_for(again, scheduled_on(cluster.pool("gpu-net"), never=cluster.nodes_except("gpu-net")))
    assert scores_of(cluster, again), "no score lines once the cluster is small again"
