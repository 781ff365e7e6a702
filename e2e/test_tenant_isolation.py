"""多租户隔离 — a tenant's pods use its own node pool and nothing else.

The TenantFilter plugin (go/pkg/tenantfilter, profile ``tenant-scheduler``):
a pod names its tenant with the label ``tenant-id``; a node names its pool
with the label ``schedgate.io/tenant-pool``. Each test labels two GPU nodes
for tenant A and two for tenant B; every other node has no pool and is closed
to tenant pods. Asserted:

* a pod without ``tenant-id`` stays ``Unschedulable`` with the plugin's own
  message, reported by the tenant scheduler and no other;
* tenant A's pods land only on A's nodes, never on B's, although B's are
  empty;
* with A's pool full, A's next pod stays ``Unschedulable`` while B's pool has
  room (the event counts B's nodes as another tenant's), and binds on A's node
  as soon as room opens there.
"""

from __future__ import annotations

import pytest

from schedgate import scheduled_on, unschedulable, wait_for
from schedgate.objects.builders import PodBuilder, make_pod
from schedgate.pytest_plugin.options import tenant_config
from schedgate.workloads.gpu import fill_gpus

TENANT = "tenant-scheduler"
TENANT_LABEL = "tenant-id"
POOL = "schedgate.io/tenant-pool"


@pytest.fixture
def pools(cluster, schedulers, pytestconfig):
    """Tenant A gets the two gpu-plain nodes, tenant B two gpu-net nodes; the rest have no pool.

    The scheduler running the TenantFilter profile (``--tenant-scheduler-config``)
    starts after the labels are set, so its first node list already has them
    (a sync probe cannot confirm it: probes carry no tenant)."""
    a, b = cluster.pool("gpu-plain")[:2], cluster.pool("gpu-net")[:2]
    for node in a:
        cluster.nodes.label(node, POOL, "a")
    for node in b:
        cluster.nodes.label(node, POOL, "b")
    schedulers.start(tenant_config(pytestconfig))
    return a, b


def tenant_pod(name: str, tenant: str | None, gpus: int = 1) -> PodBuilder:
    pod = make_pod(name).gpus(gpus).cpu(4 * gpus).memory(f"{32 * gpus}Gi").scheduler(TENANT)
    return pod.label(TENANT_LABEL, tenant) if tenant else pod


def test_a_pod_without_a_tenant_stays_unschedulable_and_says_so(cluster, ns, events, pools):
    message = r"TenantFilter: pod has no tenant-id label"
    pod = tenant_pod("anonymous", None).create(ns)

    wait_for(pod, unschedulable(message))
    events.expect_failed_scheduling(pod, by=TENANT, message=message)
    assert pod.refresh().node_name is None, f"a pod without a tenant was bound: {pod.state()}"
    assert events.deciders(pod) == {TENANT}


def test_a_tenant_pod_lands_only_on_its_own_pool_never_on_another_tenants(cluster, ns, events, pools):
    a, b = pools
    elsewhere = [n for n in cluster.node_names if n not in a]
    # Four 4-GPU pods fill A's two 8-GPU nodes exactly; B's nodes stay empty throughout.
    for i in range(4):
        pod = tenant_pod(f"a-{i}", "a", gpus=4).create(ns)
        wait_for(pod, scheduled_on(a, never=elsewhere))
        events.expect_scheduled(pod, by=TENANT, node=pod.node_name)
    assert all(cluster.gpus_in_use(n) == 0 for n in b), "tenant B's nodes run tenant A's pods"


def test_a_tenant_pod_waits_for_its_full_pool_while_another_tenants_pool_has_room(cluster, ns, events, pools):
    a, b = pools
    elsewhere = [n for n in cluster.node_names if n not in a]
    fillers = fill_gpus(ns, a)  # A's pool is full; B's nodes have 8 free GPUs each

    pod = tenant_pod("a-waits", "a").create(ns)

    wait_for(pod, unschedulable(rf"^0/{cluster.node_count()} nodes are available"))
    events.expect_failed_scheduling(pod, by=TENANT, message=rf"\b{len(b)} node\(s\) belong to another tenant's pool")
    assert pod.refresh().node_name is None, f"tenant A's pod left its pool: {pod.state()}"

    # Room opens in A's pool: the pod binds there, and only there.
    freed = a[1]
    fillers[freed].delete()
    wait_for(pod, scheduled_on([freed], never=elsewhere))
    events.expect_scheduled(pod, by=TENANT, node=freed)
