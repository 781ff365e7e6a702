"""``expect``: exactly one outcome, each a class that parses its own body and checks itself.

An outcome registers with :func:`outcome`; ``about_pods`` says whether the
``expect`` step must name ``pods``; the other ``expect`` fields it takes (``never``,
``distinctNodes``) it declares with :func:`~schedgate.scenarios.declare.extra`.
Every check waits on a positive signal under the step's deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from schedgate.kube.watch import Matcher
from schedgate.objects.events import summarize
from schedgate.objects.matchers import gone, nominated, scheduled_on, scheduling_error, scheduling_gated, unschedulable
from schedgate.scenarios.declare import (
    EXTRA,
    TIMEOUT,
    DeclaredOutcome,
    arg,
    args_of,
    body,
    extra,
    read_first,
    read_nodes,
    true_body,
)
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.jsontypes import STR, ref, whole
from schedgate.spec.shape import Key


class Outcome(Protocol):
    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None: ...


@dataclass(frozen=True)
class OutcomeKind:
    parse: Callable[[Parser, Any, dict[str, Any], str], Outcome]
    about_pods: bool
    extras: tuple[str, ...]


OUTCOMES: dict[str, OutcomeKind] = {}
K = TypeVar("K", bound=type)


def outcome(name: str, *, about_pods: bool = True) -> Callable[[K], K]:
    def register(cls: K) -> K:
        extras = tuple(a.key for _, a in args_of(cls, EXTRA))
        OUTCOMES[name] = OutcomeKind(cls.parse, about_pods, extras)  # type: ignore[attr-defined]
        return cls

    return register


EXPECT = (Key("pods", "", ref("podSet")), Key("timeout", "seconds (default 30)", TIMEOUT))  # beside the outcome


@step("expect")
@dataclass(frozen=True)
class Expect:
    """Exactly one outcome, about ``pods`` where it is about pods, waited for up to ``timeout``."""

    what: str
    outcome: Outcome
    pods: tuple[str, ...]
    timeout: float
    index: int

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> Expect:
        v = p.v
        extras = sorted({x for k in OUTCOMES.values() for x in k.extras})
        m = v.mapping(raw, w, allowed=(*(k.name for k in EXPECT), *extras, *OUTCOMES))
        found = [k for k in OUTCOMES if k in m]
        if len(found) != 1:
            v.fail(w, f"needs exactly one outcome of: {', '.join(OUTCOMES)}"
                      + (f" (got {', '.join(found)})" if found else ""))
        what = found[0]
        kind = OUTCOMES[what]
        if kind.about_pods and "pods" not in m:
            v.fail(f"{w}.pods", f"required field is missing (expect {what} is about pods)")
        if not kind.about_pods and "pods" in m:
            v.fail(f"{w}.pods", f"expect {what} is not about pods; remove 'pods'")
        for x in extras:
            if x in m and x not in kind.extras:
                takers = ", ".join(k for k, o in OUTCOMES.items() if x in o.extras)
                v.fail(f"{w}.{x}", f"goes only with {takers}")
        pods = tuple(p.pod_set(m["pods"], f"{w}.pods")) if "pods" in m else ()
        index = int(w.split("[", 1)[1].split("]", 1)[0])
        return cls(what=what, outcome=kind.parse(p, m[what], m, f"{w}.{what}"), pods=pods, timeout=p.timeout(m, w),
                   index=index)

    def run(self, r: Run) -> None:
        self.outcome.check(r, list(self.pods), self.timeout, self.index)

    def metrics_read(self) -> tuple[str, ...]:
        """The schedulers (profiles) whose /metrics this outcome reads: scraped when the scenario begins."""
        reads: tuple[str, ...] = getattr(self.outcome, "metrics_of", ())  # the metric outcome's
        return reads


@outcome("scheduledOn")
@dataclass(frozen=True)
class ScheduledOn(DeclaredOutcome):
    """Bound inside ``nodes``; never on ``never`` (default: every other node); optionally on N distinct nodes."""

    nodes: tuple[str, ...] = body("node and pool names each pod binds inside", ref("nodeSet"), read_nodes)
    never: tuple[str, ...] = extra("never", "default: every other node", ref("nodeSet"), read_nodes, default=())
    distinct_nodes: int | None = extra("distinctNodes", "the pods are on exactly this many distinct nodes", whole(1),
                                       lambda p, x, w: p.v.whole(x, w, minimum=1), default=None)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """The nodes, then never (default: every other node), none of them both, before distinctNodes."""
        values = read_first(cls, p, m, w, ("nodes", "never"))
        chosen = set(values["nodes"])
        values.setdefault("never", tuple(n for n in p.node_names if n not in chosen))
        if both := sorted(chosen & set(values["never"])):
            p.v.fail(f"{w.rsplit('.', 1)[0]}.never", f"nodes both allowed and forbidden: {', '.join(both)}")
        return values

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        r.each(pods, scheduled_on(self.nodes, never=self.never), timeout)
        used = sorted({r.pod(n).node_name or "" for n in pods})
        if self.distinct_nodes is not None and len(used) != self.distinct_nodes:
            raise AssertionError(f"{len(pods)} pods landed on {len(used)} distinct nodes {used}; "
                                 f"expected {self.distinct_nodes}")
        r.figure(f"step {index}: nodes used", ", ".join(used))


@dataclass(frozen=True)
class Refused(DeclaredOutcome):
    """PodScheduled=False for one reason, with a message matching ``message`` (a regex) if given."""

    SHORTHANDS: ClassVar[tuple[Any, ...]] = (True, None)
    message: str | None = arg("message", "a regular expression", STR, lambda p, x, w: p.v.regex(x, w),
                              default=None)

    def matcher(self) -> Matcher:
        raise NotImplementedError

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        r.each(pods, self.matcher(), timeout)


@outcome("unschedulable")
@dataclass(frozen=True)
class Unschedulable(Refused):
    """Reason Unschedulable (a SchedulerError fails at once)."""

    def matcher(self) -> Matcher:
        return unschedulable(self.message)


@outcome("schedulingError")
@dataclass(frozen=True)
class SchedulingError(Refused):
    """Reason SchedulerError (an Unschedulable fails at once)."""

    def matcher(self) -> Matcher:
        return scheduling_error(self.message)


ONCE = "each pod read once, at this step: no wait"  # the meaning of true where an outcome does not wait


@dataclass(frozen=True)
class WhenTrue(DeclaredOutcome):
    """An outcome written ``NAME: true`` that waits until every pod matches :meth:`matcher`."""

    true: bool = true_body("wait until every pod is so, within the timeout")

    def matcher(self) -> Matcher:
        raise NotImplementedError

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        r.each(pods, self.matcher(), timeout)


@outcome("gone")
@dataclass(frozen=True)
class Gone(WhenTrue):
    """Deleted: the pod no longer exists."""

    def matcher(self) -> Matcher:
        return gone()


@outcome("schedulingGated")
@dataclass(frozen=True)
class SchedulingGated(WhenTrue):
    """Held by scheduling gates (reason SchedulingGated); a scheduler's verdict fails at once."""

    def matcher(self) -> Matcher:
        return scheduling_gated()


@outcome("nominatedNode")
@dataclass(frozen=True)
class NominatedNode(DeclaredOutcome):
    """``status.nominatedNodeName`` inside the node set (preemption picked it and waits for victims)."""

    nodes: tuple[str, ...] = body("node and pool names one of which each pod is nominated to", ref("nodeSet"),
                                  read_nodes)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        r.each(pods, nominated(self.nodes), timeout)


@outcome("untouched")
@dataclass(frozen=True)
class Untouched(DeclaredOutcome):
    """Not bound, no PodScheduled condition, no event: no scheduler took the pod."""

    true: bool = true_body(ONCE)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        for name in pods:
            pod = r.pod(name).refresh()
            touched = r.ns.events.for_pod(pod)
            if pod.node_name or pod.condition() is not None or touched:
                raise AssertionError(f"pod {name} was touched by a scheduler: {pod.state()}; events: "
                                     + ("; ".join(summarize(e) for e in touched) or "none"))


def _event_type(p: Parser, raw: Any, w: str) -> str | None:
    if raw not in (None, "Normal", "Warning"):
        p.v.fail(w, f"must be Normal or Warning, got {raw!r}")
    return None if raw is None else str(raw)


@outcome("event")
@dataclass(frozen=True)
class Event(DeclaredOutcome):
    """An event about each pod, by reason (and who reported it, its message, its type)."""

    reason: str = arg("reason", "the event's reason: FailedScheduling, Scheduled, Preempted, ...", STR,
                      lambda p, x, w: p.v.string(x, w))
    by: str | None = arg("by", "the reporting controller: the scheduler's name (reportingController)", STR,
                         lambda p, x, w: p.v.string(x, w), default=None)
    message: str | None = arg("message", "a regular expression", STR, lambda p, x, w: p.v.regex(x, w), default=None)
    type: str | None = arg("type", "Normal or Warning", {"enum": ["Normal", "Warning"]}, _event_type, default=None)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        for name in pods:
            r.ns.events.expect(r.pod(name), self.reason, by=self.by, message=self.message, type=self.type,
                               timeout=timeout)


@outcome("wholeFreeNodes", about_pods=False)
@dataclass(frozen=True)
class WholeFreeNodes(DeclaredOutcome):
    """How many of ``nodes`` have ``size`` allocatable GPUs and none in use."""

    nodes: tuple[str, ...] = arg("nodes", "node and pool names", ref("nodeSet"), read_nodes)
    count: int = arg("count", "exactly this many", whole(), lambda p, x, w: p.v.whole(x, w))
    size: int = arg("size", "GPUs of a whole node (default 8)", whole(1), lambda p, x, w: p.v.whole(x, w, minimum=1),
                    default=8)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        whole = r.cluster.whole_free_nodes(self.nodes, self.size)
        r.figure(f"step {index}: whole free {self.size}-GPU nodes", len(whole))
        if len(whole) != self.count:
            raise AssertionError(f"{len(whole)} whole free {self.size}-GPU nodes {whole} among "
                                 f"{list(self.nodes)}; expected {self.count}")
