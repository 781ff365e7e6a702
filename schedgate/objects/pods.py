"""Live handles: a test's namespace and the pods created in it.

    ns = cluster.new_namespace("my-test")
    pod = make_pod("infer").gpus(1).create(ns)   # Pod: .refresh(), .node_name, .delete()
    ns.clean()                                   # every pod force-deleted, then the namespace
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kubernetes.client as k8s

from schedgate.errors import ComponentError
from schedgate.kube.api import create_or_keep, ignore_not_found, read_json
from schedgate.kube.poll import poll_until
from schedgate.kube.watch import MATCH, Check, pending, wait_for, wait_for_items
from schedgate.objects.builders import MANAGED_BY, PodBuilder
from schedgate.objects.claims import claim_template
from schedgate.objects.events import EventLog
from schedgate.objects.host import PodHost
from schedgate.objects.matchers import describe_pod, gone, pod_condition

_MERGE = "application/merge-patch+json"


@dataclass
class Pod:
    """A live handle to a pod in a test namespace."""

    ns: Namespace
    name: str
    builder: PodBuilder
    created_at: float = field(default_factory=time.monotonic)
    created_wall: float = field(default_factory=time.time)  # epoch seconds, to compare with event times
    raw: dict[str, Any] | None = None
    bound_seen_at: float | None = None
    priority: int | None = None  # spec.priority as the API server admitted it (its answer to the create)

    def __repr__(self) -> str:
        return f"Pod({self.ns.name}/{self.name})"

    # -- reading -----------------------------------------------------------
    def describe(self) -> str:
        return f"pod {self.ns.name}/{self.name}"

    def read_raw(self) -> dict[str, Any] | None:
        return ignore_not_found(read_json, self.ns.host.core.read_namespaced_pod, self.name, self.ns.name)

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return (self.ns.host.core.list_namespaced_pod, (self.ns.name,),
                {"field_selector": f"metadata.name={self.name}"})

    def check_health(self) -> None:
        self.ns.host.check_health()

    def describe_object(self, obj: dict[str, Any] | None) -> str:
        return describe_pod(obj)

    def observed(self, obj: dict[str, Any] | None) -> None:
        self.raw = copy.deepcopy(obj)
        if obj and (obj.get("spec") or {}).get("nodeName") and self.bound_seen_at is None:
            self.bound_seen_at = time.monotonic()

    def refresh(self) -> Pod:
        self.observed(self.read_raw())
        return self

    @property
    def node_name(self) -> str | None:
        return ((self.raw or {}).get("spec") or {}).get("nodeName")

    @property
    def uid(self) -> str:
        return str(((self.raw or {}).get("metadata") or {}).get("uid", ""))

    def condition(self, ctype: str = "PodScheduled") -> dict[str, Any] | None:
        return pod_condition(self.raw or {}, ctype)

    def state(self) -> str:
        return describe_pod(self.raw)

    # -- acting ------------------------------------------------------------
    def annotate(self, key: str, value: str | None) -> Pod:
        """Set (or with ``None`` remove) an annotation on the live pod."""
        self.ns.host.settle()
        self.ns.host.core.patch_namespaced_pod(self.name, self.ns.name, {"metadata": {"annotations": {key: value}}},
                                               _content_type=_MERGE)
        return self

    def delete(self) -> None:
        """Delete at once (grace period 0): API-only nodes have no kubelet to confirm."""
        self.ns.host.settle()
        ignore_not_found(self.ns.host.core.delete_namespaced_pod, self.name, self.ns.name, grace_period_seconds=0)

    def recreate(self, scheduler: str | None = None) -> Pod:
        """Delete this pod and create it again (optionally for another scheduler)."""
        self.delete()
        wait_for(self, gone())
        b = self.builder if scheduler is None else self.builder.scheduler(scheduler)
        return b.create(self.ns)


@dataclass
class _DefaultServiceAccount:
    ns: Namespace

    def describe(self) -> str:
        return f"namespace {self.ns.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return (self.ns.host.core.list_namespaced_service_account, (self.ns.name,),
                {"field_selector": "metadata.name=default"})

    def check_health(self) -> None:
        self.ns.host.check_health()


# The namespaces kube-apiserver makes itself (its bootstrap and system-namespaces controllers), v1.35-v1.37
API_SERVER_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def write_default_service_account(core: Any, namespace: str) -> None:
    """The object the controller manager's serviceaccount controller makes, a name and nothing else (an
    existing one kept); the controller still makes it in every namespace a run creates."""
    create_or_keep(core.create_namespaced_service_account, namespace, {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})


def write_api_server_namespaces(core: Any) -> None:
    """Early in a local start, inside kube-apiserver's post-start hooks' second: the namespaces it makes (as
    it makes them, a name alone; existing ones kept) and their ``default`` ServiceAccounts, rather than waiting
    0.2-0.4 s after the controller manager starts for them."""
    for name in API_SERVER_NAMESPACES:
        create_or_keep(core.create_namespace, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        write_default_service_account(core, name)


def wait_default_service_accounts(api: Any, timeout: float) -> None:
    """Until every namespace holds its ``default`` ServiceAccount: the controller manager's first work, which a
    cluster that is up has done (a pod in ``default`` is refused without it)."""
    core: Any = k8s.CoreV1Api(api)

    def made() -> bool:
        names = {n["metadata"]["name"] for n in read_json(core.list_namespace).get("items") or []}
        have = {s["metadata"]["namespace"] for s in read_json(
            core.list_service_account_for_all_namespaces, field_selector="metadata.name=default").get("items") or []}
        return names <= have

    poll_until(made, "every namespace's default ServiceAccount", timeout, interval=0.05, error=ComponentError)


@dataclass
class Namespace:
    """A test's own namespace; its pods are force-deleted when the test ends."""

    host: PodHost
    name: str
    pods: list[Pod] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Namespace({self.name})"

    @classmethod
    def create(cls, host: PodHost, name: str, exist_ok: bool = False) -> Namespace:
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {MANAGED_BY: "schedgate"}}}
        if exist_ok:
            create_or_keep(host.core.create_namespace, body)
        else:
            host.core.create_namespace(body)
        ns = cls(host=host, name=name)
        ns.wait_default_service_account()
        return ns

    @staticmethod
    def create_own(core: Any, name: str) -> None:
        """schedgate's own namespace, with its ``default`` ServiceAccount written here (an existing one kept)
        rather than waited for: early in a start, before the controller manager that makes it runs (0.4 s
        of every local start went to that wait). A scenario's namespace still waits for the controller."""
        create_or_keep(core.create_namespace, {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": name, "labels": {MANAGED_BY: "schedgate"}}})
        write_default_service_account(core, name)

    def wait_default_service_account(self, timeout: float = 60.0) -> None:
        """Until its ``default`` ServiceAccount exists a namespace refuses pods ("serviceaccount default not
        found"); the controller manager makes it a moment after the namespace, later on a loaded machine."""

        def made(items: list[dict[str, Any]]) -> Check:
            return MATCH if items else pending("no default ServiceAccount yet")

        wait_for_items(_DefaultServiceAccount(self), made, "holding its default ServiceAccount", timeout)

    def create_pod(self, builder: PodBuilder) -> Pod:
        body = self.host.pod_manifest(builder)
        if builder.device_requests:
            create_or_keep(k8s.ResourceV1Api(self.host.core.api_client).create_namespaced_resource_claim_template,
                           self.name, claim_template(builder.device_requests))
        self.host.settle()
        pod = Pod(ns=self, name=builder.name, builder=builder)
        created = self.host.core.create_namespaced_pod(self.name, body)
        priority = getattr(getattr(created, "spec", None), "priority", None)
        pod.priority = priority if isinstance(priority, int) else None
        self.pods.append(pod)
        return pod

    @property
    def events(self) -> EventLog:
        return EventLog(self.name, self.host)

    # Collection protocol, for waiting on every pod in the namespace.
    def describe(self) -> str:
        return f"pods in namespace {self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.host.core.list_namespaced_pod, (self.name,), {}

    def check_health(self) -> None:
        if not self._cleaning:
            self.host.check_health()

    _cleaning: bool = False

    def clean(self, timeout: float = 30.0) -> None:
        """Force-delete every pod and wait until the API shows none, then delete the namespace.

        With the control plane gone there is nothing to clean through; the cluster's stop removes it all."""
        if self.host.control_plane_down():
            return
        self._cleaning = True  # cleaning needs only the API server, not the schedulers
        self.delete_pods(timeout)
        ignore_not_found(self.host.core.delete_namespace, self.name)

    def delete_pods(self, timeout: float = 30.0) -> None:
        """Force-delete every pod of the namespace and wait until the API shows none. A pod a controller
        made while its owner went (whose deletion would then wait for its grace period where pods run) is
        force-deleted too, when the wait sees it."""
        core = self.host.core
        core.delete_collection_namespaced_pod(self.name, grace_period_seconds=0)

        def empty(items: list[dict[str, Any]]) -> Check:
            if not items:
                return MATCH
            meta = [i.get("metadata") or {} for i in items]
            if any(not m.get("deletionTimestamp") or m.get("deletionGracePeriodSeconds") for m in meta):
                core.delete_collection_namespaced_pod(self.name, grace_period_seconds=0)
            return pending(f"{len(items)} pods left")

        wait_for_items(self, empty, "empty", timeout)
