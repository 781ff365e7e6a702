"""Outcomes read from the schedulers' own logs (:mod:`schedgate.objects.schedlog`): ``attempts`` (held for
a while with ``for``) and ``requeued`` (which cluster event moved the pod to which queue)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from schedgate.errors import NotHere
from schedgate.kube.poll import poll_until
from schedgate.objects.schedlog import LOG_FLAGS, Attempt, read_logs
from schedgate.runtime.scheduler import distinct
from schedgate.scenarios.bounds import NEEDS_BOUND, NUMBER, bounds_read, needs_bound, read_count
from schedgate.scenarios.declare import DeclaredOutcome, arg, read_first
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import STR, Schema
from schedgate.spec.pattern import compiled

QUEUES = ("Active", "Backoff")  # what the log names them


def cycles_since(attempts: list[Attempt], since: float) -> int:
    """The cycles begun at or after ``since`` (klog's time of day in seconds: one begun just past midnight
    counts as after a step begun just before it)."""
    return sum(1 for a in attempts if a.started is not None and (a.started - since) % 86400 < 43200)


@outcome("attempts")
@dataclass(frozen=True)
class Attempts(DeclaredOutcome):
    """How many scheduling cycles each pod had ("Attempting to schedule pod" in its scheduler's log), or with
    ``since`` had since an earlier step began: ``equals``, ``atLeast``, ``atMost``. Waits until the lower
    bound is reached, then checks the upper one — "retried once after the capacity change", not "flushed
    five minutes later". With ``for`` (seconds)
    the upper bound must hold that long: "still 1 attempt 10 s after the change" (it fails the moment it
    does not)."""

    RULE: ClassVar[Schema] = NEEDS_BOUND
    equals: int | None = arg("equals", "exactly this many", NUMBER, read_count, default=None)
    at_least: int | None = arg("atLeast", "at least this many", NUMBER, read_count, default=None)
    at_most: int | None = arg("atMost", "at most this many", NUMBER, read_count, default=None)
    hold: float = arg("for", "seconds the upper bound must hold (equals or atMost)",
                      {"type": "number", "minimum": 0.1, "maximum": 600},
                      lambda p, x, w: p.v.number(x, w, minimum=0.1, maximum=600), default=0.0)
    since: int | None = arg("since", "count only the attempts begun after step N began (an earlier step, as in "
                                     "steps[N]): one more attempt after a change", {"type": "integer", "minimum": 0},
                            lambda p, x, w: p.v.whole(x, w, minimum=0), default=None)
    bounds: tuple[tuple[str, int], ...] = ()  # the bounds given, as (key, value)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> None:
        needs_bound(p, m, w)

    @classmethod
    def read(cls, p: Parser, raw: Any, w: str) -> dict[str, Any]:
        values = super().read(p, raw, w)
        values["bounds"] = bounds_read(values)
        if values.get("hold") and not any(k in ("equals", "atMost") for k, _ in values["bounds"]):
            p.v.fail(f"{w}.for", "holds an upper bound: give equals or atMost")
        here = re.match(r"steps\[(\d+)\]", w)
        if values.get("since") is not None and here and values["since"] >= int(here.group(1)):
            p.v.fail(f"{w}.since", f"must name an earlier step than this one (steps[{here.group(1)}]), got "
                                   f"{values['since']}")
        return values

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        low = max((b for k, b in self.bounds if k in ("equals", "atLeast")), default=0)
        high = min((b for k, b in self.bounds if k in ("equals", "atMost")), default=None)
        paths = [s.log_path for s in distinct(r.cluster.schedulers)]

        since = r.step_clock.get(self.since) if self.since is not None else None

        def seen(key: str) -> tuple[int, bool]:
            """(scheduling cycles, whether any other line of the pod is in the logs)."""
            log = read_logs(paths, namespaces={r.ns.name}).get(key)
            if log is None:
                return 0, False
            if since is None:
                return log.cycles, bool(log.attempts)
            return cycles_since(log.attempts, since), bool(log.attempts)

        for name in pods:
            key = f"{r.ns.name}/{name}"
            try:
                poll_until(lambda key=key: seen(key)[0] >= low, f"{key}: {low} scheduling attempts",  # type: ignore[misc]
                           timeout=timeout, interval=0.2)
            except AssertionError:
                got, other = seen(key)
                if got == 0 and other:
                    raise NotHere(f"the scheduler's log has no 'Attempting to schedule pod' lines; run it "
                                  f"with {' '.join(LOG_FLAGS)}") from None
                raise AssertionError(f"pod {name} had {got} scheduling attempt(s){self._since()} after "
                                     f"{timeout:.0f}s; expected at least {low}") from None
            got = seen(key)[0]
            if high is not None and got > high:
                log = read_logs(paths, namespaces={r.ns.name}).get(key)
                why = "; ".join(f"attempt {i}: {a.failure[:300]}" for i, a in enumerate(log.attempts if log else [], 1)
                                if a.failure)
                raise AssertionError(f"pod {name} had {got} scheduling attempts{self._since()}; expected at most {high}"
                                     + (f" ({why})" if why else ""))
            if self.hold and high is not None:
                self._hold(name, lambda key=key: seen(key)[0], high)  # type: ignore[misc]
                got = seen(key)[0]
            r.figure(f"step {index}: attempts of {name}", got)

    def _since(self) -> str:
        return f" since steps[{self.since}] began" if self.since is not None else ""

    def _hold(self, name: str, count: Callable[[], int], high: int) -> None:
        started = time.monotonic()
        end = started + self.hold

        def within() -> None:
            n = count()
            if n > high:
                raise AssertionError(f"pod {name} had {n} scheduling attempts {time.monotonic() - started:.1f}s "
                                     f"into the {self.hold:g}s hold; expected at most {high} throughout")

        poll_until(lambda: time.monotonic() >= end, f"{name}: the hold", timeout=self.hold + 5, interval=0.2,
                   alive=within)
        within()


def _queue(p: Parser, raw: Any, w: str) -> str:
    queue = p.v.string(raw, w)
    if queue not in QUEUES:
        p.v.fail(w, f"must be one of {', '.join(QUEUES)}, got {queue!r}")
    return queue


@outcome("requeued")
@dataclass(frozen=True)
class Requeued(DeclaredOutcome):
    """The scheduling queue moved each pod to the active or backoff queue on a cluster ``event`` (a regular
    expression of its label: ``NodeAllocatableChange``, ``AssignedPodDelete``, ...; ``queue``: ``Active``
    or ``Backoff``), as its scheduler's log says ("Entity moved to an internal scheduling queue")."""

    event: str = arg("event", "a regular expression of the cluster event's label", STR,
                     lambda p, x, w: p.v.regex(x, w))
    queue: str | None = arg("queue", "Active or Backoff (default: either)", {"enum": list(QUEUES)}, _queue,
                            default=None)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """queue is read before event, as before."""
        return read_first(cls, p, m, w, ("queue",))

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        paths = [s.log_path for s in distinct(r.cluster.schedulers)]
        pattern = compiled(self.event)

        def moves(key: str) -> list[tuple[str, str]]:
            log = read_logs(paths, namespaces={r.ns.name}).get(key)
            return log.moves if log is not None else []

        for name in pods:
            key = f"{r.ns.name}/{name}"

            def hit(key: str = key) -> bool:
                return any(pattern.fullmatch(e) and self.queue in (None, q) for e, q in moves(key))

            try:
                poll_until(hit, f"{key} requeued", timeout=timeout, interval=0.2)
            except AssertionError:
                shown = ", ".join(f"{e}->{q}" for e, q in moves(key)) or "none"
                if not moves(key):
                    raise NotHere(f"the scheduler's log has no queue moves for {name}; run it with "
                                  f"{' '.join(LOG_FLAGS)}") from None
                raise AssertionError(f"pod {name} was not moved to {self.queue or 'a queue'} on an event matching "
                                     f"{self.event!r} within {timeout:.0f}s; its moves: {shown}") from None
