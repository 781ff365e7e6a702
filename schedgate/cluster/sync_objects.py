"""What the cache barrier (:mod:`schedgate.cluster.sync`) writes besides its token and probe pods: the sync
devices and their class, each probe's claim, and the probe's PodGroup.

Each comes on a watch of its own, so the barrier writes it after every other change of its kind and a probe
needs it: a scheduler that judged the probe has seen it, and so every earlier object of that kind.
"""

from __future__ import annotations

from typing import Any

import kubernetes.client as k8s

from schedgate.cluster.devices import MANAGED
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.objects.groups import GROUP_API

SYNC_DRIVER = "sync.schedgate.io"
SYNC_CLASS = "schedgate-sync"
SYNC_SLICE = "schedgate-sync"
GROUP_PLURAL = "podgroups"


def resource_api(core: Any) -> Any:
    return k8s.ResourceV1Api(core.api_client)


def publish_sync_devices(core: Any, barrier: int, token: str, count: int) -> None:
    """The sync slice with a device per scheduler (on every node: the probe's affinity picks the marker),
    then the class that selects by ``token``."""
    res = resource_api(core)
    name = SYNC_SLICE
    cur = ignore_not_found(read_json, res.read_resource_slice, name)
    body: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name, "labels": dict(MANAGED)},
        "spec": {"driver": SYNC_DRIVER, "allNodes": True,
                 "pool": {"name": SYNC_SLICE, "resourceSliceCount": 1,
                          "generation": 1 + (cur["spec"]["pool"]["generation"] if cur else 0)},
                 "devices": [{"name": f"s{barrier}-{i}",
                              "attributes": {"token": {"string": token}, "slot": {"int": i}}}
                             for i in range(count)]}}
    if cur is None:
        res.create_resource_slice(body)
    else:
        body["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        res.replace_resource_slice(name, body)
    selector = f'device.driver == "{SYNC_DRIVER}" && device.attributes["{SYNC_DRIVER}"].token == "{token}"'
    cls: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                           "metadata": {"name": SYNC_CLASS, "labels": dict(MANAGED)},
                           "spec": {"selectors": [{"cel": {"expression": selector}}]}}
    have = ignore_not_found(read_json, res.read_device_class, SYNC_CLASS)
    if have is None:
        res.create_device_class(cls)
    else:
        cls["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"]
        res.replace_device_class(SYNC_CLASS, cls)


def create_probe_claim(core: Any, namespace: str, name: str, i: int) -> str:
    """A claim for scheduler ``i``'s sync device (by name: no other probe competes for it)."""
    resource_api(core).create_namespaced_resource_claim(namespace, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "labels": dict(MANAGED)},
        "spec": {"devices": {"requests": [{"name": "sync", "exactly": {
            "deviceClassName": SYNC_CLASS,
            "selectors": [{"cel": {"expression": f'device.attributes["{SYNC_DRIVER}"].slot == {i}'}}]}}]}}})
    return name


def delete_probe_claim(core: Any, namespace: str, name: str) -> None:
    ignore_not_found(resource_api(core).delete_namespaced_resource_claim, name, namespace)


def create_probe_group(core: Any, namespace: str, name: str) -> str:
    """A PodGroup of no gang (policy ``basic``: each member is scheduled on its own) for the probes to name.
    A scheduler queues a member of a group it has not seen apart, unjudged, until it has."""
    group, version = GROUP_API.split("/")
    k8s.CustomObjectsApi(core.api_client).create_namespaced_custom_object(
        group, version, namespace, GROUP_PLURAL,
        {"apiVersion": GROUP_API, "kind": "PodGroup", "metadata": {"name": name, "labels": dict(MANAGED)},
         "spec": {"schedulingPolicy": {"basic": {}}}})
    return name


def delete_probe_group(core: Any, namespace: str, name: str) -> None:
    group, version = GROUP_API.split("/")
    ignore_not_found(k8s.CustomObjectsApi(core.api_client).delete_namespaced_custom_object,
                     group, version, namespace, GROUP_PLURAL, name)
