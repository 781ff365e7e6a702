"""``countsOn``: how many of the pods each node set holds — what a spread constraint promises.

``scheduledOn`` says where pods may go; a topology spread constraint promises
more: how many go to each domain. ``countsOn`` maps node sets (pools or node
names, disjoint) to exact counts. Every pod must bind inside their union
(anywhere else fails at once); once all are bound the counts must be exact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from schedgate.objects.matchers import scheduled_on
from schedgate.scenarios.declare import DeclaredOutcome, body
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import whole


def _sets(p: Parser, body: Any, w: str) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    """(name as written, its nodes, count) for each node set, none overlapping another."""
    mm = p.v.mapping(body, w)
    if not mm:
        p.v.fail(w, "names no node set (e.g. {rack-a: 2, rack-b: 2})")
    sets: list[tuple[str, tuple[str, ...], int]] = []
    seen: dict[str, str] = {}
    for name, count in mm.items():
        nodes = tuple(p.node_set(str(name), f"{w}.{name}"))
        for n in nodes:
            if n in seen:
                p.v.fail(f"{w}.{name}", f"node {n} is also in {seen[n]}: the sets must not overlap")
            seen[n] = str(name)
        sets.append((str(name), nodes, p.v.whole(count, f"{w}.{name}")))
    return tuple(sets)


@outcome("countsOn")
@dataclass(frozen=True)
class CountsOn(DeclaredOutcome):
    """Each set of nodes (a pool or node names) holds exactly its count of the pods."""

    sets: tuple[tuple[str, tuple[str, ...], int], ...] = body(
        "node or pool -> exactly this many of the pods", {"type": "object", "minProperties": 1,
                                                          "additionalProperties": whole()}, _sets)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        union = [n for _, nodes, _ in self.sets for n in nodes]
        r.each(pods, scheduled_on(union), timeout)
        where = {n: name for name, nodes, _ in self.sets for n in nodes}
        got = Counter(where[r.pod(p).node_name or ""] for p in pods)
        shown = ", ".join(f"{name} {got[name]}" for name, _, _ in self.sets)
        r.figure(f"step {index}: pods per set", shown)
        wrong = [f"{name} holds {got[name]}, expected {want}" for name, _, want in self.sets if got[name] != want]
        if wrong:
            placed = ", ".join(f"{p}@{r.pod(p).node_name}" for p in pods)
            raise AssertionError(f"{'; '.join(wrong)} ({placed})")
