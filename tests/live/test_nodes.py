"""Node operations change what the scheduler sees, and are undone before the next test."""

from __future__ import annotations

from schedgate import GPU, HIGH_SPEED_NET, scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import gpu_pod


def node_state(cluster, name):
    """What the definition and a test's edits make of a node (the cache barrier's token left out: it is on
    whichever node the last barrier chose)."""
    from schedgate.cluster.sync import MARK_KEY

    n = cluster.core.read_node(name)
    taints = sorted((t.key, t.value or "", t.effect) for t in (n.spec.taints or []))
    labels = {k: v for k, v in (n.metadata.labels or {}).items() if k != MARK_KEY}
    return (labels, dict(n.metadata.annotations or {}), taints, dict(n.status.allocatable or {}),
            bool(n.spec.unschedulable))


def test_every_node_operation_is_undone_by_the_reset(cluster, ns):
    a, b = cluster.pool("gpu-net")[:2]
    want = {n: node_state(cluster, n) for n in (a, b)}

    cluster.nodes.label(a, HIGH_SPEED_NET, None)
    cluster.nodes.label(a, "extra", "yes")
    cluster.nodes.annotate(a, "schedgate.io/network-slots", "3")
    cluster.nodes.taint(a, "broken", "true", "NoSchedule")
    cluster.nodes.set_gpus(a, 3)
    cluster.nodes.delete(b)
    assert node_state(cluster, a) != want[a]

    assert cluster.nodes.reset() is True
    assert {n: node_state(cluster, n) for n in (a, b)} == want
    assert cluster.nodes.reset() is False, "a second reset must find nothing to change"
    cluster.sync_schedulers()


def test_a_cordon_is_undone_with_its_taint_before_the_next_test(cluster, ns):
    """A node lifecycle controller taints a cordoned node and takes the taint off some time after the
    uncordon; the next test must not begin on a node that still refuses every pod (seen on kind: a file
    after one that cordoned a rack found that rack's nodes tainted). Here the taint is put as the
    controller would, so the reset is judged whether a controller runs or not."""
    from schedgate.cluster.node_kinds import CORDON_TAINT, MERGE

    a = cluster.pool("gpu-net")[0]
    want = node_state(cluster, a)
    cluster.nodes.cordon(a)
    taints = [t.to_dict() for t in cluster.core.read_node(a).spec.taints or [] if t.key != CORDON_TAINT]
    cluster.core.patch_node(a, {"spec": {"taints": [*taints, {"key": CORDON_TAINT, "effect": "NoSchedule"}]}},
                            _content_type=MERGE)
    assert node_state(cluster, a) != want

    assert cluster.nodes.reset() is True
    assert node_state(cluster, a) == want
    assert cluster.nodes.reset() is False, "a second reset must find nothing to change"
    cluster.sync_schedulers()


def test_nodes_deleted_together_come_back_together_exactly_as_defined(cluster, ns):
    """More than one node missing: the reset makes them concurrently (one list, then creates in parallel)."""
    gone = cluster.pool("gpu-net") + cluster.pool("cpu")
    want = {n: node_state(cluster, n) for n in gone}
    for n in gone:
        cluster.nodes.delete(n)
    assert cluster.nodes.reset() is True
    assert {n: node_state(cluster, n) for n in gone} == want
    assert cluster.nodes.reset() is False, "a second reset must find nothing to change"
    cluster.sync_schedulers()


def test_a_taint_added_in_a_test_keeps_pods_off_the_node(cluster, ns):
    net = cluster.pool("gpu-net")
    for node in net[1:]:
        cluster.nodes.taint(node, "maintenance", "true")
    pod = gpu_pod("infer").create(ns)
    wait_for(pod, scheduled_on(net[:1], never=net[1:]))


def test_a_deleted_node_is_gone_for_the_scheduler(cluster, ns):
    net = cluster.pool("gpu-net")
    for node in net:
        cluster.nodes.delete(node)
    pod = gpu_pod("infer").create(ns)
    wait_for(pod, unschedulable(message=rf"^0/{cluster.node_count() - len(net)} nodes are available"))


def test_gpu_capacity_changes_show_in_allocatable(cluster):
    node = cluster.pool("gpu-net")[0]
    cluster.nodes.set_gpus(node, 2)
    assert cluster.gpus_allocatable(node) == 2
    assert cluster.core.read_node(node).status.capacity[GPU] == "2"



def test_a_pod_change_after_a_node_edit_waits_until_every_scheduler_has_seen_the_edit(cluster, ns):
    """The schedulers hear nodes and pods on separate watches in no guaranteed order: a pod created, deleted
    or annotated after an edit goes only once each scheduler has confirmed the edit (one cache barrier),
    and only then; inside stale_ok() the test races the caches on purpose."""
    node = cluster.pool("gpu-net")[0]
    barriers = cluster.barrier.count
    first = gpu_pod("no-edit-before").create(ns)
    assert cluster.barrier.count == barriers, "no edit was made: nothing to wait for"
    cluster.nodes.label(node, "example.com/edited", "yes")
    second = gpu_pod("after-an-edit").create(ns)
    assert cluster.barrier.count == barriers + 1
    first.delete()
    second.annotate("example.com/x", "y")
    assert cluster.barrier.count == barriers + 1, "one barrier covers every edit before it"
    cluster.nodes.label(node, "example.com/edited", "again")
    with cluster.stale_ok():
        gpu_pod("racing-the-cache").create(ns)
    assert cluster.barrier.count == barriers + 1
    second.delete()
    assert cluster.barrier.count == barriers + 2, "the edit made inside stale_ok() is still waited for later"


def test_conditions_a_test_sets_are_put_back_by_the_reset(cluster, ns):
    from schedgate.spec.cluster import Condition

    node = cluster.pool("cpu")[0]

    def conditions():
        return {c.type: c.status for c in cluster.core.read_node(node).status.conditions}

    assert conditions() == {"Ready": "True"}
    cluster.nodes.set_conditions(node, [Condition("Ready", "False"), Condition("example.com/Disk", "True", "Full")])
    assert conditions() == {"Ready": "False", "example.com/Disk": "True"}
    assert cluster.nodes.reset() is True
    assert conditions() == {"Ready": "True"}
    assert cluster.nodes.reset() is False
    cluster.sync_schedulers()


def test_no_probe_is_bound_to_a_node_of_the_run_and_no_other_pod_to_the_sync_node(cluster, ns):
    """The admission guard (schedgate.cluster.guard): a barrier's probe (a pod sync-* of schedgate's namespace)
    is refused on the run's nodes, its refusal the barrier's signal where devices make it fit; a test's pod is
    refused on the sync node (a black box's); schedgate's own pods are bound where they are sent."""
    from kubernetes.client.exceptions import ApiException

    from schedgate.cluster.sync import SYNC_NODE
    from schedgate.objects.builders import make_pod

    cluster.sync_schedulers()  # the guard is in force from the first barrier on
    node = cluster.node_names[0]

    def refused(namespace: str, pod: str, target: str) -> bool:
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": target}}
        try:
            cluster.core.create_namespaced_binding(namespace, binding, _preload_content=False)
        except ApiException as e:
            assert e.status == 422 and "cache-barrier probes" in (e.body or ""), e.body  # the policy denied it
            return True
        return False

    system = cluster.system_namespace()
    squatter = make_pod("squatter").scheduler("no-such-scheduler").create(ns)
    probe = make_pod("sync-0-probe").scheduler("no-such-scheduler").create(system)
    own = make_pod("guard-probe").scheduler("no-such-scheduler").create(system)
    try:
        assert refused(ns.name, "squatter", SYNC_NODE), "the API server bound a test's pod to the sync node"
        assert refused(system.name, "sync-0-probe", node), "the API server bound a probe to a node of the run"
        assert squatter.refresh().node_name is None and probe.refresh().node_name is None
        assert not refused(system.name, "guard-probe", node)
        assert own.refresh().node_name == node
    finally:
        for name in ("sync-0-probe", "guard-probe"):
            cluster.core.delete_namespaced_pod(name, system.name, grace_period_seconds=0)
