"""Scheduler /metrics in the Prometheus text format, read without a client library."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class MetricsSnapshot:
    samples: tuple[Sample, ...]

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


def _unescape(v: str) -> str:
    return v.replace(r"\\", "\\").replace(r"\"", '"').replace(r"\n", "\n")


def parse_metrics(text: str | Iterable[str]) -> MetricsSnapshot:
    lines = text.splitlines() if isinstance(text, str) else text
    out = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name, raw_labels, raw_value = m.groups()
        labels = {k: _unescape(v) for k, v in _LABEL.findall(raw_labels or "")}
        try:
            value = float(raw_value)
        except ValueError:
            continue
        if math.isnan(value):
            continue
        out.append(Sample(name, labels, value))
    return MetricsSnapshot(tuple(out))
