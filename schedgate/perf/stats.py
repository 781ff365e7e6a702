"""The statistics of a comparison: paired rounds' CPU ratio with its confidence interval, percentiles."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Student's t at 0.975 by degrees of freedom 1..30: the 95 % interval of a mean of a few rounds.
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


MIN_PAIRED_ROUNDS = 3  # fewer paired rounds cannot decide a CPU-per-pod budget


@dataclass(frozen=True)
class PairedRound:
    """One round of both sides at once: each scheduler's CPU seconds over it, for ``pods`` pods each."""

    index: int
    pods: int
    under_test: float
    baseline: float
    seconds: float

    @property
    def ratio(self) -> float:
        return self.under_test / self.baseline if self.baseline > 0 else float("inf")


@dataclass(frozen=True)
class PairedCpu:
    """CPU per pod under test over the baseline's, from paired rounds: the geometric mean of the rounds'
    ratios and its 95 % confidence interval (Student's t on their logarithms)."""

    ratio: float
    low: float
    high: float
    rounds: int
    under_test: float  # CPU seconds per pod, all rounds
    baseline: float

    @classmethod
    def of(cls, rounds: Sequence[PairedRound]) -> PairedCpu | None:
        usable = [r for r in rounds if r.under_test > 0 and r.baseline > 0]
        if not usable:
            return None
        logs = [math.log(r.ratio) for r in usable]
        mean = statistics.fmean(logs)
        half = (T975[min(len(logs), len(T975)) - 2] * statistics.stdev(logs) / math.sqrt(len(logs))
                if len(logs) > 1 else math.inf)
        pods = sum(r.pods for r in usable)
        return cls(ratio=math.exp(mean), low=math.exp(mean - half), high=math.exp(mean + half) if half < math.inf
                   else math.inf, rounds=len(usable), under_test=sum(r.under_test for r in usable) / pods,
                   baseline=sum(r.baseline for r in usable) / pods)

    def shown(self) -> str:
        return f"{self.ratio:.3f} (95 % {self.low:.3f}-{self.high:.3f} over {self.rounds} paired rounds)"


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0.0


def straddles(rounds: Sequence[PairedRound], limit: float | None, least: int = MIN_PAIRED_ROUNDS) -> bool:
    """Whether paired rounds leave a CPU-per-pod budget of ``limit`` undecided: at least ``least`` rounds, the
    ratio within it, its 95 % interval reaching over it (more rounds narrow the interval)."""
    pc = PairedCpu.of(rounds) if limit is not None else None
    return pc is not None and limit is not None and pc.rounds >= least and pc.ratio <= limit < pc.high

