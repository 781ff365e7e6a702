"""GPUs in use and free on a node, counted the way the scheduler sees them: the ``nvidia.com/gpu``
extended resource of a device plugin, or devices a DRA driver publishes (allocated through claims)."""

from __future__ import annotations

from typing import Any

from schedgate.cluster.devices import Devices
from schedgate.spec.cluster import GPU


def gpus_in_use(core: Any, node: str) -> int:
    """``nvidia.com/gpu`` requested by the node's running pods."""
    pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    used = 0
    for p in pods:
        if p.status and p.status.phase in ("Succeeded", "Failed"):
            continue
        for c in p.spec.containers:
            req = (c.resources.requests or {}) if c.resources else {}
            used += int(req.get(GPU, "0"))
    return used


def gpus_allocatable(core: Any, node: str) -> int:
    n = core.read_node(node)
    return int((n.status.allocatable or {}).get(GPU, "0"))


def whole_free(core: Any, devices: Devices | None, node: str, size: int) -> bool:
    """The node has ``size`` GPUs and none is taken: device-plugin GPUs, else its published devices."""
    if gpus_allocatable(core, node):
        return gpus_allocatable(core, node) == size and gpus_in_use(core, node) == 0
    if devices is None:
        return False
    have = devices.published_on(node)
    return len(have) == size and not have & devices.allocated_on(node)
