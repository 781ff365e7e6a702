"""Groups of pods for the Gang reference plugin (go/pkg/gang, profile ``gang-scheduler``).

A member carries the labels ``schedgate.io/gang`` (its group) and ``schedgate.io/gang-min`` (how
many members the group needs); the plugin admits the group through Permit whole or not at all.
"""

from __future__ import annotations

from schedgate.kube.poll import poll_until
from schedgate.objects.builders import PodBuilder
from schedgate.objects.groups import GROUP_LABEL, MIN_LABEL
from schedgate.objects.pods import Pod
from schedgate.runtime.scheduler import Scheduler
from schedgate.workloads.gpu import gpu_pod

GANG = "gang-scheduler"
HOLD_GATE = "schedgate.io/hold"
WAITING = "schedgate_gang_waiting_pods"


def member(name: str, group: str, min_members: int, gpus: int = 8) -> PodBuilder:
    """A GPU pod (network nodes only) of ``group``, which needs ``min_members`` to be admitted."""
    return (gpu_pod(name, gpus=gpus, scheduler=GANG)
            .label(GROUP_LABEL, group).label(MIN_LABEL, str(min_members)))


def gated(builder: PodBuilder) -> PodBuilder:
    """The pod held by a scheduling gate (no scheduler looks at it until :func:`lift_gate`)."""
    return builder.manifest({"spec": {"schedulingGates": [{"name": HOLD_GATE}]}})


def lift_gate(pod: Pod) -> None:
    pod.ns.host.settle()
    pod.ns.host.core.patch_namespaced_pod(pod.name, pod.ns.name, {"spec": {"schedulingGates": None}})


def wait_waiting(scheduler: Scheduler, namespace: str, group: str, count: int, timeout: float = 30.0) -> None:
    """Wait until the scheduler's Gang plugin reports ``count`` members of the group waiting at Permit
    (its ``schedgate_gang_waiting_pods`` gauge): the positive signal that they hold reservations."""

    def seen() -> bool:
        return scheduler.metrics().value(WAITING, namespace=namespace, group=group) == count

    poll_until(seen, f"{count} members of gang {group} waiting at Permit ({WAITING} of {scheduler.name})",
               timeout=timeout, interval=0.2)
