"""Figures a scenario measures (seconds to bind, whole nodes left), shown after the run.

A figure is kept in the test's JUnit properties (``schedgate:NAME``), so it
survives xdist workers and shows in CI reports as well as in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class HasProperties(Protocol):
    """A pytest item: what :class:`Report` writes to."""

    user_properties: list[tuple[str, object]]


@dataclass
class Report:
    node: HasProperties

    def figure(self, name: str, value: float | int | str, unit: str = "") -> None:
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        self.node.user_properties.append((f"schedgate:{name}", f"{shown}{' ' + unit if unit else ''}"))


def figures(user_properties: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    return [(k.removeprefix("schedgate:"), str(v)) for k, v in user_properties if str(k).startswith("schedgate:")]
