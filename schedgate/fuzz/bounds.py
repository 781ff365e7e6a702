"""How big a fuzz run's examples may be, and what they may leave out: read by ``schedgate fuzz``'s parser without
the generator (and Hypothesis, a quarter of a second to import) behind it."""

from __future__ import annotations

from dataclasses import dataclass

from schedgate.errors import SchedgateError

# What --without can leave out, for a scheduler that does not claim it (a black box that has no pod affinity):
# each is then drawn as its first entry (none) and never varies.
FEATURES = ("anti-affinity", "host-ports", "restarts", "edits", "spread", "devices", "gangs", "affinity", "preemption")
LIMITS = {"examples": (1, 10_000), "max_nodes": (1, 8), "max_pods": (1, 30), "budget": (1, 86_400)}


@dataclass(frozen=True)
class Bounds:
    """How big an example may be and how many there are; each checked against ``LIMITS``."""

    examples: int = 30
    max_nodes: int = 3
    max_pods: int = 6
    budget: int = 240  # seconds for generating and shrinking together
    without: frozenset[str] = frozenset()  # FEATURES the examples leave out

    def __post_init__(self) -> None:
        if unknown := sorted(self.without - set(FEATURES)):
            raise SchedgateError(f"--without: {unknown[0]!r} is not a feature to leave out (one of "
                                 f"{', '.join(FEATURES)})")
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise SchedgateError(f"--{name.replace('_', '-')}: must be {low}..{high}, got {value}")
