"""What a pod may be waited for: bound inside a node set, refused for a reason, gone.

Matchers tell the two kinds of scheduling failure apart: ``unschedulable()``
wants ``PodScheduled=False`` with reason ``Unschedulable`` and fails at once on
``SchedulerError``; ``scheduling_error()`` the reverse. A crashing plugin can
never pass for a correct rejection.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schedgate.kube.watch import MATCH, Check, FnMatcher, Matcher, fail, pending
from schedgate.spec.pattern import compiled


def pod_condition(pod: dict[str, Any], ctype: str = "PodScheduled") -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == ctype), None)


def describe_pod(pod: dict[str, Any] | None) -> str:
    if pod is None:
        return "pod not found"
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    cond = pod_condition(pod)
    state = f"nodeName={spec.get('nodeName') or '<none>'}, schedulerName={spec.get('schedulerName')}"
    if cond:
        state += (f", PodScheduled={cond.get('status')} reason={cond.get('reason') or '-'}"
                  f" message={cond.get('message') or '-'!r}")
    else:
        state += ", no PodScheduled condition"
    if meta.get("deletionTimestamp"):
        state += ", being deleted"
    return state


def scheduled_on(nodes: Iterable[str], *, never: Iterable[str] = ()) -> Matcher:
    """Bound to one of ``nodes``. Bound anywhere else fails at once."""
    allowed = frozenset(nodes)
    forbidden = frozenset(never)
    if not allowed:
        raise ValueError("scheduled_on() needs the set of nodes the pod may land on")
    if allowed & forbidden:
        raise ValueError(f"nodes both allowed and forbidden: {sorted(allowed & forbidden)}")

    def check(pod: dict[str, Any]) -> Check:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return pending()
        if node in allowed:
            return MATCH
        kind = "a forbidden node" if node in forbidden else "a node outside the allowed set"
        return fail(f"bound to {kind} {node!r}; allowed: {sorted(allowed)}")

    return FnMatcher(f"bound to one of {sorted(allowed)}", check)


def _failed_with(reason: str, other: str, message: str | None) -> Matcher:
    pattern = compiled(message) if message else None

    def check(pod: dict[str, Any]) -> Check:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            return fail(f"bound to {node!r}; expected it to stay unbound with reason {reason}")
        cond = pod_condition(pod)
        if not cond or cond.get("status") != "False":
            return pending()
        got = cond.get("reason")
        if got == other:
            return fail(f"PodScheduled reason is {other} ({cond.get('message')!r}); expected {reason}: "
                        f"a scheduler error is not a scheduling decision" if reason == "Unschedulable" else
                        f"PodScheduled reason is {other} ({cond.get('message')!r}); expected {reason}")
        if got != reason:
            return pending()
        if pattern and not pattern.search(cond.get("message") or ""):
            return pending(f"message {cond.get('message')!r} does not match {pattern.pattern!r}")
        return MATCH

    desc = f"PodScheduled=False reason={reason}" + (f" message~{message!r}" if message else "")
    return FnMatcher(desc, check)


def unschedulable(message: str | None = None) -> Matcher:
    """``PodScheduled=False``, reason ``Unschedulable`` (message matching the regex, if given).

    Fails at once if the pod is bound or the reason is ``SchedulerError``."""
    return _failed_with("Unschedulable", "SchedulerError", message)


def scheduling_error(message: str | None = None) -> Matcher:
    """``PodScheduled=False``, reason ``SchedulerError``. Fails at once if bound or ``Unschedulable``."""
    return _failed_with("SchedulerError", "Unschedulable", message)


def scheduling_gated() -> Matcher:
    """Held by its scheduling gates: ``PodScheduled=False`` reason ``SchedulingGated``, not bound."""

    def check(pod: dict[str, Any]) -> Check:
        if (pod.get("spec") or {}).get("nodeName"):
            return fail(f"bound to {pod['spec']['nodeName']!r}; expected it held by its scheduling gates")
        cond = pod_condition(pod)
        if cond and cond.get("status") == "False" and cond.get("reason") == "SchedulingGated":
            return MATCH
        if cond and cond.get("status") == "False" and cond.get("reason") in ("Unschedulable", "SchedulerError"):
            return fail(f"a scheduler tried it ({cond.get('reason')}: {cond.get('message')!r}); expected it gated")
        return pending()

    return FnMatcher("PodScheduled=False reason=SchedulingGated", check)


def nominated(nodes: Iterable[str]) -> Matcher:
    """``status.nominatedNodeName`` is one of ``nodes`` (preemption chose it). Bound elsewhere fails."""
    allowed = frozenset(nodes)

    def check(pod: dict[str, Any]) -> Check:
        bound_to = (pod.get("spec") or {}).get("nodeName")
        if bound_to and bound_to not in allowed:
            return fail(f"bound to {bound_to!r}; expected nominated to one of {sorted(allowed)}")
        got = (pod.get("status") or {}).get("nominatedNodeName")
        if got in allowed:
            return MATCH
        if got:
            return fail(f"nominated to {got!r}; expected one of {sorted(allowed)}")
        return pending("no nominatedNodeName" + (f" (bound to {bound_to!r})" if bound_to else ""))

    return FnMatcher(f"nominated to one of {sorted(allowed)}", check)


def gone() -> Matcher:
    """The object no longer exists (the wait sees ``None``)."""
    return FnMatcher("deleted", lambda obj: pending("still exists"), on_missing=MATCH)


def running() -> Matcher:
    """Running and Ready, not being deleted: a kubelet (or node agent) runs it. Deleted, or ended, fails."""

    def check(p: dict[str, Any]) -> Check:
        status = p.get("status") or {}
        if (p.get("metadata") or {}).get("deletionTimestamp"):
            return fail(f"being deleted ({describe_pod(p)})")
        if status.get("phase") in ("Succeeded", "Failed"):
            return fail(f"ended: phase {status['phase']}")
        ready = pod_condition(p, "Ready")
        if status.get("phase") == "Running" and ready and ready.get("status") == "True":
            return MATCH
        return pending(f"phase {status.get('phase')}, Ready={(ready or {}).get('status', 'absent')}")

    return FnMatcher("Running and Ready", check, on_missing=fail("pod was deleted"))


def evicted(reason: str | None = None) -> Matcher:
    """Being deleted (or gone) with a ``DisruptionTarget`` condition naming why: ``DeletionByTaintManager``
    for taint eviction, ``PreemptionByScheduler`` for a preemption victim. Gone without a seen condition
    passes only when no reason is asked for."""

    def check(p: dict[str, Any]) -> Check:
        cond = pod_condition(p, "DisruptionTarget")
        deleting = bool((p.get("metadata") or {}).get("deletionTimestamp"))
        if cond and cond.get("status") == "True" and deleting:
            if reason is None or cond.get("reason") == reason:
                return MATCH
            return fail(f"disrupted for {cond.get('reason')!r}, expected {reason!r}: {cond.get('message')}")
        return pending("being deleted, no DisruptionTarget condition" if deleting else "not being deleted")

    what = "evicted" + (f" ({reason})" if reason else "")
    return FnMatcher(what, check, on_missing=fail("gone before its DisruptionTarget was seen") if reason else MATCH)



def bound() -> Matcher:
    """Bound to a node — a sequencing wait, never an outcome: ``scheduled_on`` names the nodes."""
    return FnMatcher("bound to a node", lambda p: MATCH if (p.get("spec") or {}).get("nodeName") else pending())


def decided() -> Matcher:
    """Bound, or the scheduler has recorded why not (PodScheduled=False), or gone: a pod the scheduler
    preempted (deleted) waits for nothing more."""

    def check(p: dict[str, Any]) -> Check:
        cond = pod_condition(p)
        if (p.get("spec") or {}).get("nodeName") or (cond and cond.get("status") == "False"):
            return MATCH
        return pending()

    return FnMatcher("bound, PodScheduled=False or gone", check, on_missing=MATCH)
