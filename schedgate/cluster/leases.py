"""Leader-election leases of the schedulers, read and watched."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client as k8s

from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.watch import MATCH, Check, pending, wait_for_items
from schedgate.runtime.scheduler import Scheduler, elects
from schedgate.spec.schedconfig import LEASE_NAMESPACE


@dataclass
class Lease:
    """One lease, as a collection ``wait_for_items`` can list and watch."""

    api: k8s.ApiClient
    name: str
    health: Callable[[], None] = lambda: None  # fail the wait when a component dies

    def describe(self) -> str:
        return f"lease {self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return (k8s.CoordinationV1Api(self.api).list_namespaced_lease, (LEASE_NAMESPACE,),
                {"field_selector": f"metadata.name={self.name}"})

    def check_health(self) -> None:
        self.health()

    def holder(self) -> str | None:
        """The identity holding it (``None`` if free or absent)."""
        doc = ignore_not_found(read_json, k8s.CoordinationV1Api(self.api).read_namespaced_lease, self.name,
                               LEASE_NAMESPACE)
        holder: str | None = ((doc or {}).get("spec") or {}).get("holderIdentity") or None
        return holder

    def wait_taken(self, not_by: str | None, timeout: float) -> str:
        """Wait until someone other than ``not_by`` holds it; returns the new holder."""
        found: list[str] = []

        def taken(items: list[dict[str, Any]]) -> Check:
            for i in items:
                holder = (i.get("spec") or {}).get("holderIdentity")
                if holder and holder != not_by:
                    found.append(holder)
                    return MATCH
            return pending(f"held by {not_by!r}")

        wait_for_items(self, taken, f"lease {self.name} held by a new identity", timeout)
        return found[0]

    def wait_renewed_or_exited(self, s: Scheduler, since: datetime, timeout: float) -> bool:
        """True once ``s`` renewed its lease after ``since``; False once it has exited."""

        def settled(items: list[dict[str, Any]]) -> Check:
            if s.is_down():
                return MATCH
            for i in items:
                renew = (i.get("spec") or {}).get("renewTime") or ""
                if renew and datetime.fromisoformat(renew.replace("Z", "+00:00")) >= since:
                    return MATCH
            return pending(f"scheduler {s.name} has not renewed its lease since {since:%H:%M:%S}")

        wait_for_items(self, settled, f"lease {s.name} renewed or its scheduler exited", timeout)
        return not s.is_down()


def exited_over_restart(api: k8s.ApiClient, s: Scheduler, back: datetime, settle: float) -> bool:
    """Whether ``s`` exited over an API server restart, ``back`` being when it answered again. One without a
    lease waits a restart out; one with a lease is watched until it renewed it after ``back`` or exited
    (``died()``: also one whose own supervisor restarted it already, kind's kubelet)."""
    if not elects(s):
        return s.is_down()
    return not Lease(api, s.name).wait_renewed_or_exited(s, back, settle) or s.died()
