"""Devices on kind's kubelets: schedgate's DRA driver on every node publishes them and prepares the claims.

The driver (``go/cmd/schedgate-dra-plugin``, a DaemonSet from ``dra-driver.yaml``) runs only in
clusters whose definition has devices: its image is made from the binary ``scripts/node-binaries``
builds and loaded into the nodes, as the scheduler's is. schedgate hands each node its devices in
ConfigMap ``kube-system/schedgate-devices`` (key: the node; value: ``{driver: [ResourceSlice
devices]}``); the driver on the node publishes them as one pool named after the node. A write counts
as done only once the API holds exactly those devices in that pool (:class:`DriverSlices`), so the
cache barrier's own slice, written after it, reaches the schedulers after them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.errors import ComponentError
from schedgate.kube.api import create_objects, ignore_not_found, read_json
from schedgate.kube.watch import MATCH, Check, WaitTimeout, pending, wait_for_items
from schedgate.spec.devices import Counters, Device

log = logging.getLogger("schedgate")

CONFIGMAP, NAMESPACE = "schedgate-devices", "kube-system"
APP = "schedgate-dra-plugin"
MANIFEST = Path(__file__).with_name("dra-driver.yaml")


def driver_objects(image: str) -> list[dict[str, Any]]:
    """The driver's ServiceAccount, RBAC and DaemonSet, running ``image``."""
    return [d for d in yaml.safe_load_all(MANIFEST.read_text().replace("@IMAGE@", image)) if d]


@dataclass
class _Listed:
    """Objects ``wait_for_items`` lists and watches, with a name for its messages."""

    what: str
    call: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return self.what

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.call, self.args, self.kwargs

    def check_health(self) -> None:
        return None


def deploy_driver(api: k8s.ApiClient, image: str, nodes: Iterable[str], timeout: float = 180) -> None:
    """Apply the driver and wait until each of ``nodes`` runs a Ready plugin pod."""
    create_objects(api, driver_objects(image))
    want = sorted(nodes)
    core: Any = k8s.CoreV1Api(api)

    def ready(items: list[dict[str, Any]]) -> Check:
        up = {(p.get("spec") or {}).get("nodeName") for p in items
              if not (p.get("metadata") or {}).get("deletionTimestamp") and any(
                  c.get("type") == "Ready" and c.get("status") == "True"
                  for c in (p.get("status") or {}).get("conditions") or [])}
        missing = [n for n in want if n not in up]
        return MATCH if not missing else pending(f"no Ready plugin pod on {', '.join(missing)}")

    pods = _Listed(f"{APP} pods", core.list_namespaced_pod, (NAMESPACE,), {"label_selector": f"app={APP}"})
    try:
        wait_for_items(pods, ready, f"a Ready plugin pod on each of {', '.join(want)}", timeout)
    except WaitTimeout as e:
        raise ComponentError(f"schedgate's DRA driver did not come up: {e}") from None


@dataclass
class DriverSlices:
    """A :class:`~schedgate.cluster.devices.SlicePublisher` for kubelet nodes: the node's devices go into
    its key of the ConfigMap; done once the node's slices of that driver hold exactly those devices."""

    api: k8s.ApiClient
    timeout: float = 60.0
    on_kubelets: bool = True

    def __post_init__(self) -> None:
        self.core: Any = k8s.CoreV1Api(self.api)
        self.res: Any = k8s.ResourceV1Api(self.api)

    def write(self, node: str, driver: str, devices: tuple[Device, ...], generation: int,
              counters: Counters = ()) -> int:
        if counters:  # refused earlier (the kind provider's cannot_run): the driver publishes one slice a pool
            raise ComponentError(f"node {node}: schedgate's DRA driver on kind publishes no shared counters")
        self._set(node, driver, [d.to_api() for d in devices])
        return self._wait(node, driver, [d.name for d in devices])

    def drop(self, node: str, driver: str) -> None:
        self._set(node, driver, None)
        self._wait(node, driver, None)

    def _set(self, node: str, driver: str, devices: list[dict[str, Any]] | None) -> None:
        """Read, change and write the node's key; a conflicting write by someone else is read again."""
        for _ in range(10):
            cm = ignore_not_found(read_json, self.core.read_namespaced_config_map, CONFIGMAP, NAMESPACE)
            data = dict((cm or {}).get("data") or {})
            entry = json.loads(data.get(node) or "{}")
            if devices is None:
                entry.pop(driver, None)
            else:
                entry[driver] = devices
            if entry:
                data[node] = json.dumps(entry, sort_keys=True)
            else:
                data.pop(node, None)
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "data": data,
                                    "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE,
                                                 "labels": {"app.kubernetes.io/managed-by": "schedgate"}}}
            try:
                if cm is None:
                    self.core.create_namespaced_config_map(NAMESPACE, body)
                else:
                    body["metadata"]["resourceVersion"] = cm["metadata"]["resourceVersion"]
                    self.core.replace_namespaced_config_map(CONFIGMAP, NAMESPACE, body)
                return
            except ApiException as e:
                if e.status not in (409,):
                    raise
        raise ComponentError(f"ConfigMap {NAMESPACE}/{CONFIGMAP}: every write conflicted")

    def _wait(self, node: str, driver: str, names: list[str] | None) -> int:
        """Until the pool ``node`` of ``driver`` holds exactly ``names`` (None: no slice left); its generation."""
        want = sorted(names or [])

        def published(items: list[dict[str, Any]]) -> Check:
            mine = [s["spec"] for s in items if (s["spec"].get("pool") or {}).get("name") == node]
            if names is None:
                return MATCH if not mine else pending(f"{len(mine)} slice(s) left")
            if not mine:
                return pending("no slice yet")
            newest = max(s["pool"]["generation"] for s in mine)
            current = [s for s in mine if s["pool"]["generation"] == newest]
            have = sorted(d["name"] for s in current for d in s.get("devices") or [])
            if len(current) != current[0]["pool"].get("resourceSliceCount", 1) or len(current) != len(mine):
                return pending(f"pool generation {newest} incomplete ({len(current)} of {len(mine)} slices)")
            return MATCH if have == want else pending(f"devices {have}, want {want}")

        slices = _Listed(f"ResourceSlices of {driver} on {node}", self.res.list_resource_slice, (),
                         {"field_selector": f"spec.nodeName={node},spec.driver={driver}"})
        try:
            items = wait_for_items(slices, published, f"holding {', '.join(want) or 'no device'}"
                                   if names is not None else "gone", self.timeout)
        except WaitTimeout as e:
            raise ComponentError(f"schedgate's DRA driver on {node} did not publish: {e}") from None
        log.info("kind: %s publishes %d device(s) of %s", node, len(want), driver)
        return max((int(s["spec"]["pool"]["generation"]) for s in items), default=0)
