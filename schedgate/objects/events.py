"""Scheduling events of one test namespace, waited for like everything else.

Events are read from ``events.k8s.io/v1``, where ``reportingController`` is the
profile's ``schedulerName``. A namespace is new for every test, so listing it
and then watching from that list's resourceVersion misses nothing that
happened since the test began — the expectation can be stated after the
action and still sees events that came before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from schedgate.kube.api import read_json
from schedgate.kube.watch import DEFAULT_TIMEOUT, MATCH, Check, pending, wait_for_items
from schedgate.objects.host import PodHost
from schedgate.spec.pattern import compiled

# Event reasons of a scheduler's decision about a pod.
DECISIONS = frozenset({"Scheduled", "FailedScheduling", "Preempted", "NotTriggerScaleUp"})


class PodRef(Protocol):
    """A pod events can be about: its name and, once read, its uid."""

    @property
    def name(self) -> str: ...

    @property
    def uid(self) -> str: ...


def _about(event: dict[str, Any], pod: PodRef) -> bool:
    reg = event.get("regarding") or {}
    return reg.get("kind") == "Pod" and reg.get("name") == pod.name and (not pod.uid or reg.get("uid") == pod.uid)


def summarize(event: dict[str, Any]) -> str:
    count = (event.get("series") or {}).get("count")
    return (f"{event.get('type')} {event.get('reason')} by {event.get('reportingController')}: "
            f"{event.get('note')!r}" + (f" (x{count})" if count else ""))


@dataclass
class EventLog:
    """The events of one namespace, on the cluster ``host``."""

    namespace: str
    host: PodHost

    def __repr__(self) -> str:
        return f"EventLog({self.namespace})"

    def describe(self) -> str:
        return f"events in namespace {self.namespace}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.host.events_api.list_namespaced_event, (self.namespace,), {}

    def check_health(self) -> None:
        self.host.check_health()

    def all(self) -> list[dict[str, Any]]:
        doc = read_json(self.host.events_api.list_namespaced_event, self.namespace)
        items: list[dict[str, Any]] = doc.get("items") or []
        return items

    def for_pod(self, pod: PodRef) -> list[dict[str, Any]]:
        return [e for e in self.all() if _about(e, pod)]

    def expect(self, pod: PodRef, reason: str, *, by: str | None = None, message: str | None = None,
               type: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Wait for an event about ``pod`` with this reason (and reporter, note pattern, type)."""
        pattern = compiled(message) if message else None
        found: list[dict[str, Any]] = []

        def accept(items: list[dict[str, Any]]) -> Check:
            mine = [e for e in items if _about(e, pod)]
            for e in mine:
                if (e.get("reason") == reason and (by is None or e.get("reportingController") == by)
                        and (type is None or e.get("type") == type)
                        and (pattern is None or pattern.search(e.get("note") or ""))):
                    found.append(e)
                    return MATCH
            seen = "; ".join(summarize(e) for e in mine) or "no events for the pod"
            return pending(f"seen: {seen}")

        want = f"an event {reason}" + (f" by {by}" if by else "") + (f" with note ~ {message!r}" if message else "")
        wait_for_items(self, accept, f"holding {want} about pod {pod.name}", timeout)
        return found[0]

    def expect_failed_scheduling(self, pod: PodRef, *, by: str, message: str | None = None,
                                 timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return self.expect(pod, "FailedScheduling", by=by, message=message, type="Warning", timeout=timeout)

    def expect_scheduled(self, pod: PodRef, *, by: str, node: str | None = None,
                         timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        msg = rf"Successfully assigned {re.escape(self.namespace)}/{re.escape(pod.name)} to " + \
            (re.escape(node) + "$" if node else "")
        return self.expect(pod, "Scheduled", by=by, message=msg, type="Normal", timeout=timeout)

    def deciders(self, pod: PodRef) -> set[str]:
        """The schedulers that reported a scheduling decision about the pod (bound it, refused it, preempted
        for it): what isolation is about, whatever else (a kubelet) reports on the pod's life."""
        return {e.get("reportingController") or "" for e in self.for_pod(pod) if e.get("reason") in DECISIONS}
