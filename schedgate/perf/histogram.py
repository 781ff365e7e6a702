"""Quantiles of the scheduler's own histograms, as Prometheus' ``histogram_quantile`` computes them.

A scrape keeps a histogram as cumulative ``_bucket`` samples (``le`` the upper bound). The quantile is
found in the first bucket whose count reaches it and interpolated linearly inside that bucket; one
that falls into the ``+Inf`` bucket is the largest finite bound (a floor: the true value is above it,
and :func:`quantile` says so). Several scrapes (two runs of one side) are merged by adding their
buckets, which is exact for histograms of the same buckets.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from schedgate.objects.metrics import MetricsSnapshot, Sample

EXTENSION_POINTS = "scheduler_framework_extension_point_duration_seconds"
PLUGINS = "scheduler_plugin_execution_duration_seconds"
ATTEMPTS = "scheduler_scheduling_attempt_duration_seconds"


@dataclass(frozen=True)
class Quantile:
    seconds: float
    count: float          # observations in the histogram
    above: bool = False   # in the +Inf bucket: the value is more than ``seconds``

    def shown(self) -> str:
        return f"{'>' if self.above else ''}{self.seconds * 1000:.2f} ms"


def merged(snapshots: Iterable[MetricsSnapshot]) -> MetricsSnapshot:
    """One snapshot of several processes' samples: every sum, count and bucket adds up."""
    return MetricsSnapshot(tuple(s for snap in snapshots for s in snap.samples))


def quantile(snap: MetricsSnapshot, name: str, q: float, **labels: str) -> Quantile | None:
    """The ``q`` quantile of histogram ``name`` over every series whose labels include ``labels``
    (None when it has no observations)."""
    buckets: dict[float, float] = defaultdict(float)
    for s in snap.select(f"{name}_bucket", **labels):
        buckets[_le(s)] += s.value
    if not buckets:
        return None
    bounds = sorted(buckets)
    total = buckets[bounds[-1]]
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for le in bounds:
        count = buckets[le]
        if count >= rank:
            if math.isinf(le):
                return Quantile(lower, total, above=True)
            inside = count - below
            frac = (rank - below) / inside if inside > 0 else 1.0
            return Quantile(lower + (le - lower) * frac, total)
        lower, below = le, count
    return Quantile(lower, total, above=True)


def label_values(snap: MetricsSnapshot, name: str, label: str, **labels: str) -> list[str]:
    """The values ``label`` takes among histogram ``name``'s series matching ``labels``, sorted."""
    return sorted({s.labels[label] for s in snap.select(f"{name}_count", **labels) if label in s.labels})


def _le(s: Sample) -> float:
    return float(s.labels.get("le", "+Inf"))
