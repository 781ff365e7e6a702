"""PodGroups and the cache barrier: a scheduler hears PodGroups on a watch of their own, so a pod created
after a PodGroup change may be judged by a scheduler that has not heard of the change yet (a raised
``minCount`` unheard of lets two of three members bind). After such a change the next pod change waits
for a barrier whose probes are members of a PodGroup made after it.

Both tests run on the workloads cluster (feature GenericWorkload): an extra cluster of the session."""

from __future__ import annotations

import warnings

import pytest
from kubernetes import client as k8s
from support import load_text, shipped_scenario

import schedgate.cluster.sync as sync
from schedgate import unschedulable, wait_for
from schedgate.objects.builders import make_pod
from schedgate.objects.groups import GROUP_API
from schedgate.objects.matchers import pod_condition
from schedgate.scenarios.run import Run
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.workloads.gpu import PACKING

pytestmark = pytest.mark.slow
GROUP, VERSION = GROUP_API.split("/")


def no_roles(name: str) -> SchedulerConfig:
    raise AssertionError(f"the scenario names no role ({name})")


@pytest.fixture
def raised(schedgate_extra_clusters, tmp_path):
    scenario = load_text(tmp_path, shipped_scenario("native-podgroup-min-raised"))
    return scenario, schedgate_extra_clusters.get(scenario)


def test_a_member_of_a_podgroup_its_scheduler_has_not_seen_is_not_judged_until_it_has(raised):
    """What the barrier's group probe rests on: the scheduler queues such a member apart, unjudged."""
    _, cluster = raised
    ns = cluster.new_namespace("group-not-seen")
    try:
        pod = (make_pod("member").scheduler(PACKING).request("cpu", "1000")
               .manifest({"spec": {"schedulingGroup": {"podGroupName": "late"}}}).create(ns))
        cluster.sync_schedulers()  # every scheduler has heard of the pod
        assert pod_condition(pod.read_raw() or {}) is None, pod.read_raw()
        k8s.CustomObjectsApi(cluster.api).create_namespaced_custom_object(
            GROUP, VERSION, ns.name, "podgroups",
            {"apiVersion": GROUP_API, "kind": "PodGroup", "metadata": {"name": "late"},
             "spec": {"schedulingPolicy": {"basic": {}}}})
        wait_for(pod, unschedulable(message=r"Insufficient cpu"))
    finally:
        ns.clean()


def test_a_podgroup_patched_is_heard_by_every_scheduler_before_the_next_pod_is_created(raised, monkeypatch):
    scenario, cluster = raised
    made: list[tuple[str, int]] = []  # (probe group, the scenario pods there were when it was made)
    real = sync.create_probe_group

    def spy(core, namespace, name):
        made.append((name, len(run.pods)))
        return real(core, namespace, name)

    monkeypatch.setattr(sync, "create_probe_group", spy)
    ns = cluster.new_namespace("group-barrier")
    run = Run(scenario=scenario, cluster=cluster, ns=ns, start_scheduler=cluster.start_scheduler, role_config=no_roles)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a barrier not confirmed warns: here it fails
            run.run()
    finally:
        run.close()
        ns.clean()
    # minCount raised after g-1 was created: one barrier with a group before g-2, and only that one.
    assert [pods for _, pods in made] == [1], made
    left = k8s.CustomObjectsApi(cluster.api).list_namespaced_custom_object(
        GROUP, VERSION, cluster.system_namespace().name, "podgroups")
    assert [g["metadata"]["name"] for g in left["items"]] == [], "the probe's PodGroup outlived its barrier"
