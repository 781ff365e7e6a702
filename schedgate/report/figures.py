"""Figures a scenario measures (seconds to bind, whole nodes left), shown after the run.

A figure travels on the test's report (``schedgate_figures``, which pytest-xdist
carries from its workers too), is printed in the run's summary and written as a
property of the JUnit test suite (``schedgate: TEST :: NAME``): the default
``xunit2`` format allows properties there, not on a test case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

# pytest's own StashKey, without importing all of pytest (half a second) into every schedgate command that
# loads a scenario (`schedgate check`): the key is the same class pytest.StashKey names.
from _pytest.stash import StashKey

if TYPE_CHECKING:
    import pytest

FIGURES = StashKey[list[tuple[str, str]]]()
ATTACHED = StashKey[dict[str, str]]()


@dataclass
class Report:
    """``report.figure(name, value, unit)`` for one test item."""

    node: pytest.Item

    def figure(self, name: str, value: float | int | str, unit: str = "") -> None:
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        self.node.stash.setdefault(FIGURES, []).append((name, f"{shown}{' ' + unit if unit else ''}"))

    def attach(self, filename: str, text: str) -> None:
        """A file for the test's artifacts folder, written whether the test passes or fails."""
        self.node.stash.setdefault(ATTACHED, {})[filename] = text


def figures_of(item: pytest.Item) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = item.stash.get(FIGURES, [])
    return list(found)


def attached_to(item: pytest.Item) -> dict[str, str]:
    found: dict[str, str] = item.stash.get(ATTACHED, {})
    return dict(found)
