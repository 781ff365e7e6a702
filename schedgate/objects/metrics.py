"""Scheduler /metrics in the Prometheus text format."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class MetricsSnapshot:
    samples: tuple[Sample, ...]
    # names of the samples that only grow while the process lives: counters, and histograms' and summaries'
    # _count, _sum and _bucket
    cumulative: frozenset[str] = frozenset()

    def select(self, name: str, **labels: str) -> list[Sample]:
        return [s for s in self.samples
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def value(self, name: str, **labels: str) -> float:
        """The sum of every sample of ``name`` whose labels include ``labels`` (0 if none)."""
        return sum(s.value for s in self.select(name, **labels))

    def names(self) -> set[str]:
        return {s.name for s in self.samples}

    def histogram_count(self, name: str, **labels: str) -> float:
        return self.value(f"{name}_count", **labels)

    def histogram_sum(self, name: str, **labels: str) -> float:
        return self.value(f"{name}_sum", **labels)


def parse_metrics(text: str | Iterable[str]) -> MetricsSnapshot:
    """Every sample of a scrape (histograms as their ``_bucket``, ``_sum`` and ``_count`` samples); NaN
    samples are left out. The text format is read by prometheus-client's own parser."""
    body = text if isinstance(text, str) else "\n".join(text)
    families = list(text_string_to_metric_families(body))
    out = [Sample(s.name, dict(s.labels), float(s.value))
           for family in families for s in family.samples
           if not math.isnan(float(s.value))]
    cumulative = frozenset(s.name for family in families if family.type in ("counter", "histogram", "summary")
                           for s in family.samples if not s.name.endswith("_created"))
    return MetricsSnapshot(tuple(out), cumulative)
