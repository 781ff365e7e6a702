"""Devices a pod asks for, as DRA claims: each pod gets its own ResourceClaim from a ResourceClaimTemplate.

    pod = make_pod("train").devices(DeviceRequest("gpu.schedgate.io", 4,
                                                  same=("gpu.schedgate.io/nvlinkDomain",)))

The template is named after what it asks for (``devices-<hash>``), made in the
pod's namespace before the pod; kube-controller-manager's resourceclaim
controller makes each pod's claim from it, the scheduler allocates it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CLAIM = "devices"  # the claim's name in the pod (``spec.resourceClaims[].name``)
ALL = 0  # DeviceRequest.count for allocationMode All


@dataclass(frozen=True)
class DeviceRequest:
    """``count`` devices of a DeviceClass, all sharing the value of each ``same`` attribute (a
    ``matchAttribute`` constraint: one NVLink domain, one NUMA node), passing every CEL ``selectors``;
    ``count`` ``ALL`` asks for every matching device of a node (``allocationMode: All``); ``capacity`` is
    what it takes of a shared device's capacities (``DRAConsumableCapacity``: capacity -> quantity)."""

    device_class: str
    count: int = 1
    same: tuple[str, ...] = ()
    selectors: tuple[str, ...] = ()
    capacity: tuple[tuple[str, str], ...] = ()


def claim_spec(requests: Sequence[DeviceRequest]) -> dict[str, Any]:
    """A ResourceClaim's ``spec`` asking for every request."""
    reqs, constraints = [], []
    for i, r in enumerate(requests):
        name = f"r{i}"
        exactly: dict[str, Any] = {"deviceClassName": r.device_class, **(
            {"allocationMode": "All"} if r.count == ALL else {"count": r.count})}
        if r.selectors:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in r.selectors]
        if r.capacity:
            exactly["capacity"] = {"requests": dict(r.capacity)}
        reqs.append({"name": name, "exactly": exactly})
        constraints += [{"requests": [name], "matchAttribute": a} for a in r.same]
    devices: dict[str, Any] = {"requests": reqs}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def template_name(requests: Sequence[DeviceRequest]) -> str:
    digest = hashlib.sha256(json.dumps(claim_spec(requests), sort_keys=True).encode()).hexdigest()[:10]
    return f"{CLAIM}-{digest}"


def claim_template(requests: Sequence[DeviceRequest]) -> dict[str, Any]:
    """The ResourceClaimTemplate the pods asking for ``requests`` share."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(requests), "labels": {"app.kubernetes.io/managed-by": "schedgate"}},
            "spec": {"spec": claim_spec(requests)}}
