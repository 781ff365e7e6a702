"""Kubernetes' own gangs (1.37, feature ``GenericWorkload``): a ``scheduling.k8s.io/v1beta1`` PodGroup
whose gang policy needs ``minCount`` members, and pods that name it in ``spec.schedulingGroup``. The in-tree
GangScheduling plugin binds none of them until ``minCount`` can be placed together.

::

    create_pod_group(cluster, ns, "train", min_count=4)
    pods = [in_group(gpu_pod(f"train-{i}", gpus=8), "train").create(ns) for i in range(4)]

Devices the whole group shares (feature ``DRAWorkloadResourceClaims``): one ResourceClaim, made from a
template by the resourceclaim controller for the group, reserved for the PodGroup, used by every member::

    nvlink = [DeviceRequest("gpu.schedgate.io", 4, same=("gpu.schedgate.io/nvlinkDomain",))]
    create_pod_group(cluster, ns, "train", min_count=2, devices=nvlink)
    pods = [in_group(make_pod(f"train-{i}"), "train", devices=nvlink).create(ns) for i in range(2)]

Scenario files say the same with ``createPodGroup`` (``devices``) and the pod field ``podGroup``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubernetes import client as k8s

from schedgate.cluster import Cluster
from schedgate.kube.api import create_or_keep, ignore_not_found, read_json
from schedgate.kube.objects import Objects, Ref
from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.objects.builders import PodBuilder
from schedgate.objects.claims import DeviceRequest, claim_template, template_name
from schedgate.objects.groups import GROUP_API
from schedgate.objects.pods import Namespace

API = GROUP_API
GROUP, VERSION = API.split("/")
FEATURE = "GenericWorkload"  # the gate that serves it (beta in 1.37, off by default)
TOPOLOGY = "TopologyAwareWorkloadScheduling"  # the gate of a group's topology constraint (alpha in 1.37)
CLAIMS = "DRAWorkloadResourceClaims"  # the gate of a group's own claims (beta in 1.37, off by default)
GROUP_CLAIM = "group-devices"  # the group's claim's name, in the PodGroup and in each member


DISRUPTION_MODES = ("Single", "All")


def pod_group(name: str, min_count: int, topology_key: str | None = None, *, priority_class: str | None = None,
              disruption_mode: str | None = None, devices: Sequence[DeviceRequest] = ()) -> dict[str, Any]:
    """The PodGroup manifest: a gang of at least ``min_count`` members, all inside one domain of
    ``topology_key`` (a node label such as a rack's) if given. ``priority_class`` is the group's (its
    members must have the same priority); ``disruption_mode`` ``All``: a preemption takes all its members
    or none (``Single``, the API's default: each member on its own). ``devices``: the group's own claim
    (:data:`GROUP_CLAIM`), from the template :func:`create_pod_group` makes."""
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if disruption_mode is not None:
        spec["disruptionMode"] = {disruption_mode.lower(): {}}
    if devices:
        spec["resourceClaims"] = [{"name": GROUP_CLAIM, "resourceClaimTemplateName": template_name(devices)}]
    return {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def in_group(builder: PodBuilder, group: str, devices: Sequence[DeviceRequest] = ()) -> PodBuilder:
    """The pod as a member of PodGroup ``group``, using the group's claim if it has ``devices`` (the same
    requests the group was made with)."""
    b = builder.manifest({"spec": {"schedulingGroup": {"podGroupName": group}}})
    return b.share_claim(GROUP_CLAIM, template_name(devices)) if devices else b


def create_pod_group(cluster: Cluster, ns: Namespace, name: str, min_count: int, topology_key: str | None = None,
                     devices: Sequence[DeviceRequest] = (), **fields: str) -> Ref:
    """Create the PodGroup in ``ns`` (it goes with the namespace), and first the template of its claim if it
    has ``devices``; ``fields``: :func:`pod_group`'s."""
    cluster.settle()
    if devices:
        make_claim_template(cluster, ns.name, devices)
    ref = Objects(cluster.api, ns.name).create(pod_group(name, min_count, topology_key, devices=devices, **fields))
    if devices:
        wait_group_claim(cluster, ns.name, name)
    return ref


def wait_group_claim(cluster: Cluster, namespace: str, name: str, timeout: float = 30.0) -> str:
    """Until the resourceclaim controller made the group's claim (named in the PodGroup's
    ``status.resourceClaimStatuses``, 0.1 s here): a member tried before it is refused for a claim "not
    created yet" and tried again, an attempt no scheduler owes. Returns the claim's name."""
    custom = k8s.CustomObjectsApi(cluster.api)

    def made() -> str | None:
        pg = ignore_not_found(read_json, custom.get_namespaced_custom_object, GROUP, VERSION, namespace,
                              "podgroups", name) or {}
        names = [s.get("resourceClaimName") for s in (pg.get("status") or {}).get("resourceClaimStatuses") or []
                 if s.get("name") == GROUP_CLAIM]
        return names[0] if names and names[0] else None

    try:
        return poll_until(made, f"the claim of PodGroup {name}", timeout, interval=0.05, alive=cluster.check_health)
    except PollTimeout:
        raise AssertionError(f"PodGroup {name}: the resourceclaim controller made no claim for its devices in "
                             f"{timeout:.0f}s (status.resourceClaimStatuses)") from None


def make_claim_template(cluster: Cluster, namespace: str, devices: Sequence[DeviceRequest]) -> None:
    """The ResourceClaimTemplate of ``devices`` in ``namespace`` (one already there is kept)."""
    create_or_keep(k8s.ResourceV1Api(cluster.api).create_namespaced_resource_claim_template, namespace,
                   claim_template(devices))
