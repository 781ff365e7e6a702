"""Outcomes read from the schedulers' own logs (:mod:`schedgate.objects.schedlog`): ``attempts``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.errors import NotHere
from schedgate.kube.poll import poll_until
from schedgate.objects.schedlog import LOG_FLAGS, read_logs
from schedgate.runtime.scheduler import distinct
from schedgate.scenarios.outcomes import BOUNDS, outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run


@outcome("attempts")
@dataclass(frozen=True)
class Attempts:
    """How many scheduling cycles each pod had ("Attempting to schedule pod" in its scheduler's log):
    ``equals``, ``atLeast``, ``atMost``. Waits until the lower bound is reached, then checks the upper one
    — "retried once after the capacity change", not "flushed five minutes later"."""

    bounds: tuple[tuple[str, int], ...]

    @classmethod
    def parse(cls, p: Parser, body: Any, m: dict[str, Any], w: str) -> Attempts:
        mm = p.v.mapping(body, w, allowed=BOUNDS)
        bounds = tuple((k, p.v.whole(mm[k], f"{w}.{k}")) for k in BOUNDS if k in mm)
        if not bounds:
            p.v.fail(w, "needs equals, atLeast or atMost")
        return cls(bounds=bounds)

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
            r.figure(f"step {index}: attempts of {name}", got)
