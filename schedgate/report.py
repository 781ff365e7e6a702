"""Figures a scenario measures (seconds to bind, whole nodes left), shown after the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Report:
    node: Any  # pytest.Item

    def figure(self, name: str, value: float | int | str, unit: str = "") -> None:
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        self.node.user_properties.append((f"schedgate:{name}", f"{shown}{' ' + unit if unit else ''}"))


def figures(user_properties: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    return [(k.removeprefix("schedgate:"), str(v)) for k, v in user_properties if str(k).startswith("schedgate:")]
