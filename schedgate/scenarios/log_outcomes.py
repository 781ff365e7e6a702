"""Outcomes read from the schedulers' own logs (:mod:`schedgate.objects.schedlog`): ``attempts`` (held for
a while with ``for``) and ``requeued`` (which cluster event moved the pod to which queue)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schedgate.errors import NotHere
from schedgate.kube.poll import poll_until
from schedgate.objects.schedlog import LOG_FLAGS, read_logs
from schedgate.runtime.scheduler import distinct
from schedgate.scenarios.outcomes import BOUNDS, outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run

QUEUES = ("Active", "Backoff")  # what the log names them


@outcome("attempts")
@dataclass(frozen=True)
class Attempts:
    """How many scheduling cycles each pod had ("Attempting to schedule pod" in its scheduler's log):
    ``equals``, ``atLeast``, ``atMost``. Waits until the lower bound is reached, then checks the upper one
    — "retried once after the capacity change", not "flushed five minutes later". With ``for`` (seconds)
    the upper bound must hold that long: "still 1 attempt 10 s after the change" (it fails the moment it
    does not)."""

    bounds: tuple[tuple[str, int], ...]
    hold: float = 0.0

    @classmethod
    def parse(cls, p: Parser, body: Any, m: dict[str, Any], w: str) -> Attempts:
        mm = p.v.mapping(body, w, allowed=(*BOUNDS, "for"))
        bounds = tuple((k, p.v.whole(mm[k], f"{w}.{k}")) for k in BOUNDS if k in mm)
        if not bounds:
            p.v.fail(w, "needs equals, atLeast or atMost")
        hold = p.v.number(mm["for"], f"{w}.for", minimum=0.1, maximum=600) if "for" in mm else 0.0
        if hold and not any(k in ("equals", "atMost") for k, _ in bounds):
            p.v.fail(f"{w}.for", "holds an upper bound: give equals or atMost")
        return cls(bounds=bounds, hold=hold)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        low = max((b for k, b in self.bounds if k in ("equals", "atLeast")), default=0)
        high = min((b for k, b in self.bounds if k in ("equals", "atMost")), default=None)
        paths = [s.log_path for s in distinct(r.cluster.schedulers)]

        def seen(key: str) -> tuple[int, bool]:
            """(scheduling cycles, whether any other line of the pod is in the logs)."""
            log = read_logs(paths, namespaces={r.ns.name}).get(key)
            return (log.cycles, bool(log.attempts)) if log is not None else (0, False)

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
                raise AssertionError(f"pod {name} had {got} scheduling attempt(s) after {timeout:.0f}s; "
                                     f"expected at least {low}") from None
            got = seen(key)[0]
            if high is not None and got > high:
                raise AssertionError(f"pod {name} had {got} scheduling attempts; expected at most {high}")
            if self.hold and high is not None:
                self._hold(name, lambda key=key: seen(key)[0], high)  # type: ignore[misc]
                got = seen(key)[0]
            r.figure(f"step {index}: attempts of {name}", got)

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


@outcome("requeued")
@dataclass(frozen=True)
class Requeued:
    """The scheduling queue moved each pod to the active or backoff queue on a cluster ``event`` (a regular
    expression of its label: ``NodeAllocatableChange``, ``AssignedPodDelete``, ...; ``queue``: ``Active``
    or ``Backoff``), as its scheduler's log says ("Entity moved to an internal scheduling queue")."""

    event: str
    queue: str | None

    @classmethod
    def parse(cls, p: Parser, body: Any, m: dict[str, Any], w: str) -> Requeued:
        mm = p.v.mapping(body, w, required=("event",), allowed=("event", "queue"))
        queue = None
        if "queue" in mm:
            queue = p.v.string(mm["queue"], f"{w}.queue")
            if queue not in QUEUES:
                p.v.fail(f"{w}.queue", f"must be one of {', '.join(QUEUES)}, got {queue!r}")
        return cls(event=p.v.regex(mm["event"], f"{w}.event"), queue=queue)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        paths = [s.log_path for s in distinct(r.cluster.schedulers)]
        pattern = re.compile(self.event)

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
