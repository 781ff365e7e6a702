"""Kubernetes' own gangs (1.37, feature ``GenericWorkload``): a ``scheduling.k8s.io/v1beta1`` PodGroup
whose gang policy needs ``minCount`` members, and pods that name it in ``spec.schedulingGroup``. The in-tree
GangScheduling plugin binds none of them until ``minCount`` can be placed together.

::

    create_pod_group(cluster, ns, "train", min_count=4)
    pods = [in_group(gpu_pod(f"train-{i}", gpus=8), "train").create(ns) for i in range(4)]

Scenario files say the same with ``createPodGroup`` and the pod field ``podGroup``.
"""

from __future__ import annotations

from typing import Any

from schedgate.cluster import Cluster
from schedgate.kube.objects import Objects, Ref
from schedgate.objects.builders import PodBuilder
from schedgate.objects.pods import Namespace

GROUP, VERSION = "scheduling.k8s.io", "v1beta1"
API = f"{GROUP}/{VERSION}"
FEATURE = "GenericWorkload"  # the gate that serves it (beta in 1.37, off by default)
TOPOLOGY = "TopologyAwareWorkloadScheduling"  # the gate of a group's topology constraint (alpha in 1.37)


DISRUPTION_MODES = ("Single", "All")


def pod_group(name: str, min_count: int, topology_key: str | None = None, *, priority_class: str | None = None,
              disruption_mode: str | None = None) -> dict[str, Any]:
    """The PodGroup manifest: a gang of at least ``min_count`` members, all inside one domain of
    ``topology_key`` (a node label such as a rack's) if given. ``priority_class`` is the group's (its
    members must have the same priority); ``disruption_mode`` ``All``: a preemption takes all its members
    or none (``Single``, the API's default: each member on its own)."""
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if disruption_mode is not None:
        spec["disruptionMode"] = {disruption_mode.lower(): {}}
    return {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def in_group(builder: PodBuilder, group: str) -> PodBuilder:
    """The pod as a member of PodGroup ``group``."""
    return builder.manifest({"spec": {"schedulingGroup": {"podGroupName": group}}})


def create_pod_group(cluster: Cluster, ns: Namespace, name: str, min_count: int, topology_key: str | None = None,
                     **fields: str) -> Ref:
    """Create the PodGroup in ``ns`` (it goes with the namespace); ``fields``: :func:`pod_group`'s."""
    cluster.settle()
    return Objects(cluster.api, ns.name).create(pod_group(name, min_count, topology_key, **fields))
