"""Node operations change what the scheduler sees, and are undone before the next test."""

from __future__ import annotations

from schedgate import GPU, HIGH_SPEED_NET, scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import gpu_pod


def node_state(cluster, name):
    n = cluster.core.read_node(name)
    taints = sorted((t.key, t.value or "", t.effect) for t in (n.spec.taints or []))
    return (dict(n.metadata.labels or {}), dict(n.metadata.annotations or {}), taints,
            dict(n.status.allocatable or {}), bool(n.spec.unschedulable))


def test_every_node_operation_is_undone_by_the_reset(cluster, ns):
    a, b = cluster.pool("gpu-net")[:2]
    want = {n: node_state(cluster, n) for n in (a, b)}

    cluster.unlabel(a, HIGH_SPEED_NET)
    cluster.label(a, "extra", "yes")
    cluster.annotate(a, "schedgate.io/network-slots", "3")
    cluster.taint(a, "broken", "true", "NoSchedule")
    cluster.set_gpus(a, 3)
    cluster.delete_node(b)
    assert node_state(cluster, a) != want[a]

    assert cluster.apply_nodes() is True
    assert {n: node_state(cluster, n) for n in (a, b)} == want
    assert cluster.apply_nodes() is False, "a second reset must find nothing to change"
    cluster.sync_schedulers()


def test_nodes_deleted_together_come_back_together_exactly_as_defined(cluster, ns):
    """More than one node missing: the reset makes them concurrently (one list, then creates in parallel)."""
    gone = cluster.pool("gpu-net") + cluster.pool("cpu")
    want = {n: node_state(cluster, n) for n in gone}
    for n in gone:
        cluster.delete_node(n)
    assert cluster.apply_nodes() is True
    assert {n: node_state(cluster, n) for n in gone} == want
    assert cluster.apply_nodes() is False, "a second reset must find nothing to change"
    cluster.sync_schedulers()


def test_a_taint_added_in_a_test_keeps_pods_off_the_node(cluster, ns):
    net = cluster.pool("gpu-net")
    for node in net[1:]:
        cluster.taint(node, "maintenance", "true")
    pod = gpu_pod("infer").create(ns)
    wait_for(pod, scheduled_on(net[:1], never=net[1:]))


def test_a_deleted_node_is_gone_for_the_scheduler(cluster, ns):
    net = cluster.pool("gpu-net")
    for node in net:
        cluster.delete_node(node)
    pod = gpu_pod("infer").create(ns)
    wait_for(pod, unschedulable(message=rf"^0/{cluster.node_count() - len(net)} nodes are available"))


def test_gpu_capacity_changes_show_in_allocatable(cluster):
    node = cluster.pool("gpu-net")[0]
    cluster.set_gpus(node, 2)
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
    cluster.label(node, "example.com/edited", "yes")
    second = gpu_pod("after-an-edit").create(ns)
    assert cluster.barrier.count == barriers + 1
    first.delete()
    second.annotate("example.com/x", "y")
    assert cluster.barrier.count == barriers + 1, "one barrier covers every edit before it"
    cluster.label(node, "example.com/edited", "again")
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
    cluster.set_conditions(node, [Condition("Ready", "False"), Condition("example.com/Disk", "True", "Full")])
    assert conditions() == {"Ready": "False", "example.com/Disk": "True"}
    assert cluster.apply_nodes() is True
    assert conditions() == {"Ready": "True"}
    assert cluster.apply_nodes() is False
    cluster.sync_schedulers()


def test_no_pod_outside_schedgates_namespace_can_be_bound_to_the_sync_node(cluster, ns):
    """The admission guard (schedgate.cluster.guard): a scheduler that chose the sync node (a profile without
    NodeResourcesFit could) has its bind refused by the API server; schedgate's own probes are not."""
    from kubernetes.client.exceptions import ApiException

    from schedgate.cluster.sync import SYNC_NODE
    from schedgate.objects.builders import make_pod

    cluster.sync_schedulers()  # the sync node and its guard exist from the first barrier on
    pod = make_pod("squatter").scheduler("no-such-scheduler").create(ns)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "squatter"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": SYNC_NODE}}
    try:
        cluster.core.create_namespaced_binding(ns.name, binding, _preload_content=False)
    except ApiException as e:
        assert e.status == 422 and "schedgate's own node" in (e.body or ""), e.body  # the policy denied it
    else:
        raise AssertionError("the API server bound a test's pod to the sync node")
    assert pod.refresh().node_name is None
    system = cluster.system_namespace()
    own = make_pod("guard-probe").scheduler("no-such-scheduler").create(system)
    try:
        cluster.core.create_namespaced_binding(system.name, {**binding, "metadata": {"name": "guard-probe"}},
                                               _preload_content=False)
        assert own.refresh().node_name == SYNC_NODE
    finally:
        cluster.core.delete_namespaced_pod("guard-probe", system.name, grace_period_seconds=0)
