"""Pod builders that read like a sentence (live handles to created pods are in :mod:`.pods`).

    pod = make_pod("infer").gpus(1).scheduler("gpu-packing-scheduler") \\
        .require_label(HIGH_SPEED_NET, "true")
    pod = pod.create(ns)          # a live handle: .refresh(), .node_name, .delete()

Every builder method returns a new builder; nothing is shared or mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from schedgate.objects.claims import CLAIM, DeviceRequest, template_name
from schedgate.spec.cluster import GPU
from schedgate.spec.manifest import merged
from schedgate.spec.validate import HUGEPAGES

P = TypeVar("P", covariant=True)


class PodFactory(Protocol[P]):
    """Where a builder's pod is created: a :class:`~schedgate.objects.pods.Namespace`."""

    def create_pod(self, builder: PodBuilder) -> P: ...

HIGH_SPEED_NET = "infra.example.com/high-speed-network"
MANAGED_BY = "app.kubernetes.io/managed-by"
# The image of pods no kubelet runs (API-only nodes): never pulled.
PLACEHOLDER_IMAGE = "schedgate.invalid/placeholder:0"


@dataclass(frozen=True)
class PodBuilder:
    name: str
    scheduler_name: str = "default-scheduler"
    requests: tuple[tuple[str, str], ...] = (("cpu", "100m"), ("memory", "128Mi"))
    required_terms: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    tolerations: tuple[tuple[str, str, str, str, int | None], ...] = ()  # key, operator, value, effect, seconds
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    node_name: str | None = None
    priority_class: str | None = None
    # A Pod manifest fragment merged over what the fields above make (see spec.manifest.merged).
    fragment: Mapping[str, Any] | None = None
    # Devices through a DRA claim (:mod:`schedgate.objects.claims`), made from a template per request set.
    device_requests: tuple[DeviceRequest, ...] = ()
    # Claims of a PodGroup the pod shares (name in the group, its ResourceClaimTemplate): workloads.podgroup.
    group_claims: tuple[tuple[str, str], ...] = ()

    def scheduler(self, name: str) -> PodBuilder:
        return replace(self, scheduler_name=name)

    def request(self, resource: str, quantity: str | int) -> PodBuilder:
        kept = tuple((r, q) for r, q in self.requests if r != resource)
        return replace(self, requests=kept + ((resource, str(quantity)),))

    def gpus(self, n: int) -> PodBuilder:
        return self.request(GPU, n)

    def cpu(self, quantity: str | int) -> PodBuilder:
        return self.request("cpu", quantity)

    def memory(self, quantity: str) -> PodBuilder:
        return self.request("memory", quantity)

    def require_label(self, key: str, *values: str) -> PodBuilder:
        """Required node affinity: ``key In values`` (all such terms must hold)."""
        if not values:
            raise ValueError("require_label() needs at least one value")
        return replace(self, required_terms=self.required_terms + ((key, "In", tuple(values)),))

    def forbid_label(self, key: str) -> PodBuilder:
        """Required node affinity: ``key DoesNotExist``."""
        return replace(self, required_terms=self.required_terms + ((key, "DoesNotExist", ()),))

    def tolerate(self, key: str, value: str = "", effect: str = "NoSchedule", operator: str = "",
                 seconds: int | None = None) -> PodBuilder:
        """Taints with ``key`` (none: every key, with Exists) and ``value`` (Equal; none: Exists) of ``effect``
        (empty: every effect); ``seconds``: how long a NoExecute taint is tolerated."""
        op = operator or ("Equal" if value else "Exists")
        return replace(self, tolerations=self.tolerations + ((key, op, value, effect, seconds),))

    def tolerate_everything(self) -> PodBuilder:
        """One toleration with no key: every taint, whatever its effect."""
        return replace(self, tolerations=self.tolerations + (("", "Exists", "", "", None),))

    def label(self, key: str, value: str) -> PodBuilder:
        return replace(self, labels=self.labels + ((key, value),))

    def annotate(self, key: str, value: str) -> PodBuilder:
        return replace(self, annotations=self.annotations + ((key, value),))

    def priority(self, priority_class: str) -> PodBuilder:
        return replace(self, priority_class=priority_class)

    def on_node(self, node: str) -> PodBuilder:
        """Pre-bound: ``spec.nodeName`` set at creation, so no scheduler takes part."""
        return replace(self, node_name=node)

    def named(self, name: str) -> PodBuilder:
        return replace(self, name=name)

    def no_requests(self) -> PodBuilder:
        """No requests at all (a best-effort pod unless something else asks for resources)."""
        return replace(self, requests=())

    def share_claim(self, name: str, template: str) -> PodBuilder:
        """Use claim ``name`` of the pod's PodGroup, made from ResourceClaimTemplate ``template``: the same
        reference as the group's, so the group's one claim serves every member."""
        return replace(self, group_claims=(*self.group_claims, (name, template)))

    def devices(self, *requests: DeviceRequest) -> PodBuilder:
        """Ask for devices through a ResourceClaim of the pod's own (the first container uses it)."""
        return replace(self, device_requests=self.device_requests + requests)

    def manifest(self, fragment: Mapping[str, Any]) -> PodBuilder:
        """Merge a Pod manifest fragment (``metadata``, ``spec``) over this pod: any PodSpec field.
        A container without an image gets the placeholder (or the host's) image."""
        return replace(self, fragment=merged(self.fragment or {}, fragment))

    def obj(self, image: str = PLACEHOLDER_IMAGE) -> dict[str, Any]:
        """The Pod manifest, as a fresh dict."""
        # Extended resources (a domain-qualified name) cannot be overcommitted: limits must equal requests.
        resources = {"requests": dict(self.requests),
                     "limits": {r: q for r, q in self.requests if "/" in r or r.startswith(HUGEPAGES)}}
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": image, "resources": resources}],
        }
        if self.required_terms:
            exprs = [{"key": k, "operator": op, **({"values": list(v)} if v else {})}
                     for k, op, v in self.required_terms]
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": exprs}]}}}
        if self.tolerations:
            spec["tolerations"] = [{**({"key": k} if k else {}), "operator": op, **({"value": v} if v else {}),
                                    **({"effect": e} if e else {}),
                                    **({"tolerationSeconds": t} if t is not None else {})}
                                   for k, op, v, e, t in self.tolerations]
        if self.node_name:
            spec["nodeName"] = self.node_name
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        labels = {MANAGED_BY: "schedgate", **dict(self.labels)}
        meta: dict[str, Any] = {"name": self.name, "labels": labels}
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        claims = [(CLAIM, template_name(self.device_requests))] if self.device_requests else []
        if claims or self.group_claims:
            spec["resourceClaims"] = [{"name": n, "resourceClaimTemplateName": t} for n, t in
                                      [*claims, *self.group_claims]]
            spec["containers"][0]["resources"]["claims"] = [{"name": n} for n, _ in [*claims, *self.group_claims]]
        if self.fragment:
            pod = merged(pod, self.fragment)
            for key in ("containers", "initContainers"):
                for c in pod["spec"].get(key) or []:
                    c.setdefault("image", image)
        return pod

    def create(self, ns: PodFactory[P]) -> P:
        """Create the pod in ``ns``; returns its live handle."""
        return ns.create_pod(self)


def make_pod(name: str) -> PodBuilder:
    """A pod named ``name`` with small cpu/memory requests, for the default scheduler."""
    return PodBuilder(name=name)
