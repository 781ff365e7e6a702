"""Devices on API-only nodes: schedgate publishes what a DRA driver would, as ResourceSlices.

Each node's devices of one driver are one pool (named after the node) in one
ResourceSlice; a change republishes the slice with the pool's generation one
higher, as a driver does. A device taken offline is left out of its slice until
it is restored or the test ends. The definition's DeviceClasses are made with
the cluster and follow it when a scenario file brings another definition.
Everything is kept in a ledger of what schedgate published, so a reset writes
only what differs.

Who writes the slices is the ledger's :class:`SlicePublisher`: schedgate itself
for API-only nodes (:class:`ApiSlices`), or — where kubelets must prepare the
claims — a DRA driver on each node that schedgate hands the devices to (the
kind provider's, :mod:`schedgate.providers.kind.dra`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import kubernetes.client as k8s

from schedgate.errors import ComponentError
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.spec.cluster import ClusterDefinition, NodeSpec
from schedgate.spec.devices import Counters, Device, DeviceClassDef

MANAGED = {"app.kubernetes.io/managed-by": "schedgate"}


def slice_name(node: str, driver: str) -> str:
    return f"{node}-{driver}"[:253].rstrip("-.")


def counter_slice_name(node: str, driver: str) -> str:
    """The slice of the pool's shared counters (DRAPartitionableDevices), beside its devices' slice."""
    return f"{slice_name(node, driver)[:244].rstrip('-.')}-counters"


class SlicePublisher(Protocol):
    """Puts one node's devices of one driver into the API (one pool named after the node)."""

    @property
    def on_kubelets(self) -> bool:
        """Whether it serves kubelet nodes (a driver there prepares the claims), not API-only ones."""

    def write(self, node: str, driver: str, devices: tuple[Device, ...], generation: int,
              counters: Counters = ()) -> int:
        """Publish exactly ``devices`` and the pool's shared ``counters`` (``generation``: the last one
        published, 0 if none); returns the pool's generation now, once the API holds them."""

    def drop(self, node: str, driver: str) -> None:
        """The node's pool of that driver is gone from the API."""


@runtime_checkable
class PublishesDevices(Protocol):
    """A provider's backend whose nodes get their devices from a driver schedgate runs there."""

    @property
    def device_publisher(self) -> SlicePublisher | None:
        """The driver's publisher; None where the cluster runs no such driver (no devices defined)."""


@dataclass
class ApiSlices:
    """schedgate writes the ResourceSlice itself, as a driver would: API-only nodes have none."""

    res: Any
    on_kubelets: bool = False

    def write(self, node: str, driver: str, devices: tuple[Device, ...], generation: int,
              counters: Counters = ()) -> int:
        # Shared counters go in a slice of their own (the API allows devices or counters in one slice), in
        # the same pool and generation: the pool is whole once both are at its newest generation.
        names = [slice_name(node, driver)] + ([counter_slice_name(node, driver)] if counters else [])
        current = {n: ignore_not_found(read_json, self.res.read_resource_slice, n) for n in names}
        gen = max([generation, *(c["spec"]["pool"]["generation"] for c in current.values() if c)]) + 1
        for name in names:
            spec: dict[str, Any] = {"driver": driver, "nodeName": node,
                                    "pool": {"name": node, "generation": gen, "resourceSliceCount": len(names)}}
            if name == names[0]:
                spec["devices"] = [d.to_api() for d in devices]
            else:
                spec["sharedCounters"] = [{"name": s, "counters": {c: {"value": q} for c, q in cs}}
                                          for s, cs in counters]
            body: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                    "metadata": {"name": name, "labels": dict(MANAGED)}, "spec": spec}
            cur = current[name]
            if cur is None:
                self.res.create_resource_slice(body)
            else:
                body["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                self.res.replace_resource_slice(name, body)
        if not counters:  # a pool that had counters before has them no more
            ignore_not_found(self.res.delete_resource_slice, counter_slice_name(node, driver))
        return int(gen)

    def drop(self, node: str, driver: str) -> None:
        ignore_not_found(self.res.delete_resource_slice, slice_name(node, driver))
        ignore_not_found(self.res.delete_resource_slice, counter_slice_name(node, driver))


@dataclass
class Devices:
    """The ResourceSlices (through its publisher) and DeviceClasses schedgate publishes for a cluster's nodes."""

    api: k8s.ApiClient
    publisher: SlicePublisher | None = None  # None: schedgate writes the slices (API-only nodes)
    # (node, driver) -> (generation, devices as published)
    published: dict[tuple[str, str], tuple[int, tuple[Device, ...]]] = field(default_factory=dict)
    classes: dict[str, DeviceClassDef] = field(default_factory=dict)
    offline: dict[str, set[str]] = field(default_factory=dict)  # node -> device names left out
    counters: dict[tuple[str, str], Counters] = field(default_factory=dict)  # (node, driver) -> as published

    @classmethod
    def of(cls, api: k8s.ApiClient, backend: object) -> Devices:
        """The ledger for a provider's backend: its driver publishes where it runs one."""
        return cls(api, backend.device_publisher if isinstance(backend, PublishesDevices) else None)

    def __post_init__(self) -> None:
        self.res: Any = k8s.ResourceV1Api(self.api)
        self.slices: SlicePublisher = self.publisher or ApiSlices(self.res)

    @property
    def on_kubelets(self) -> bool:
        """Whether a driver on each (kubelet) node publishes the devices schedgate hands it."""
        return self.slices.on_kubelets

    @property
    def in_use(self) -> bool:
        """Whether this cluster has published devices (the cache barrier then checks slices too)."""
        return bool(self.published) or bool(self.classes)

    # -- classes ------------------------------------------------------------------
    def make_classes(self, definition: ClusterDefinition) -> bool:
        """The definition's DeviceClasses, and none of another definition's; True if any changed."""
        changed = False
        want = {c.name: c for c in definition.device_classes}
        for name in [n for n in self.classes if n not in want]:
            ignore_not_found(self.res.delete_device_class, name)
            del self.classes[name]
            changed = True
        for name, c in want.items():
            if self.classes.get(name) == c:
                continue
            body = c.manifest()
            body.setdefault("metadata", {}).setdefault("labels", {}).update(MANAGED)
            if ignore_not_found(self.res.read_device_class, name) is not None:
                ignore_not_found(self.res.delete_device_class, name)
            self.res.create_device_class(body)
            self.classes[name] = c
            changed = True
        return changed

    # -- slices -------------------------------------------------------------------
    def publish(self, spec: NodeSpec) -> bool:
        """Make the node's slices what its definition says, minus devices taken offline; True if changed."""
        changed = False
        out = self.offline.get(spec.name, set())
        drivers = set()
        for ds in spec.devices:
            drivers.add(ds.driver)
            devices = tuple(d for d in ds.devices if d.name not in out)
            changed |= self._write(spec.name, ds.driver, devices, ds.counters)
        for node, driver in [k for k in self.published if k[0] == spec.name and k[1] not in drivers]:
            self._drop(node, driver)
            changed = True
        return changed

    def forget(self, node: str) -> None:
        """The node is gone: so are its slices (and any device of it taken offline)."""
        self.offline.pop(node, None)
        for key in [k for k in self.published if k[0] == node]:
            self._drop(*key)

    def set_offline(self, spec: NodeSpec, names: Iterable[str], offline: bool) -> None:
        """Leave devices out of the node's slice (``offline``), or put them back."""
        names = set(names)
        self._known(spec, names)
        out = self.offline.setdefault(spec.name, set())
        if offline:
            out.update(names)
        else:
            out.difference_update(names)
        self.publish(spec)

    @staticmethod
    def _known(spec: NodeSpec, names: Iterable[str]) -> None:
        have = {n for ds in spec.devices for n in ds.names}
        unknown = sorted(set(names) - have)
        if unknown:
            raise ComponentError(f"node {spec.name} has no device {unknown[0]!r} "
                                 f"(its devices: {', '.join(sorted(have)) or 'none'})")

    def _write(self, node: str, driver: str, devices: tuple[Device, ...], counters: Counters = ()) -> bool:
        key = (node, driver)
        generation, have = self.published.get(key, (0, None))
        if have == devices and self.counters.get(key, ()) == counters:
            return False
        self.published[key] = (self.slices.write(node, driver, devices, generation, counters), devices)
        self.counters[key] = counters
        return True

    def _drop(self, node: str, driver: str) -> None:
        self.slices.drop(node, driver)
        del self.published[(node, driver)]
        self.counters.pop((node, driver), None)

    # -- what the scheduler allocated -----------------------------------------------
    def published_on(self, node: str) -> set[tuple[str, str]]:
        """``(driver, device)`` of every device the node's slices have now."""
        return {(driver, d.name) for (n, driver), (_, devs) in self.published.items() if n == node for d in devs}

    def allocated_on(self, node: str) -> set[tuple[str, str]]:
        """``(driver, device)`` of the node's devices some claim (in any namespace) has allocated."""
        claims = read_json(self.res.list_resource_claim_for_all_namespaces).get("items") or []
        return {(r["driver"], r["device"]) for c in claims
                for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
                if r.get("pool") == node}

    def allocated(self, namespace: str, pod: dict[str, Any]) -> list[tuple[str, str, str]]:
        """``(driver, pool, device)`` of every device allocated to the pod's claims (its own claims and
        the one the scheduler makes for extended resources), in claim order."""
        return [(r["driver"], r["pool"], r["device"]) for r in self.results(namespace, pod)]

    def results(self, namespace: str, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """The allocation results (``status.allocation.devices.results``) of the pod's claims, in claim order."""
        status = pod.get("status") or {}
        names = [s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []]
        ext = status.get("extendedResourceClaimStatus") or {}
        names += [ext.get("resourceClaimName")]
        names += [c.get("resourceClaimName") for c in (pod.get("spec") or {}).get("resourceClaims") or []]
        out: list[dict[str, Any]] = []
        for name in dict.fromkeys(n for n in names if n):
            claim = ignore_not_found(read_json, self.res.read_namespaced_resource_claim, name, namespace) or {}
            out += _results(claim)
        return out

    def all_results(self, namespace: str) -> list[tuple[str, dict[str, Any]]]:
        """``(claim, result)`` of every allocated claim of the namespace."""
        claims = read_json(self.res.list_namespaced_resource_claim, namespace).get("items") or []
        return [(c["metadata"]["name"], r) for c in claims for r in _results(c)]

    def capacities(self) -> dict[tuple[str, str, str], dict[str, str]]:
        """``(driver, pool, device)`` -> capacity -> value, as the cluster's ResourceSlices publish them."""
        out: dict[tuple[str, str, str], dict[str, str]] = {}
        for sl in read_json(self.res.list_resource_slice).get("items") or []:
            spec = sl.get("spec") or {}
            for d in spec.get("devices") or []:
                out[(spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""), d.get("name", ""))] = {
                    k: str(c.get("value")) for k, c in (d.get("capacity") or {}).items()}
        return out


def _results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    return list((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
