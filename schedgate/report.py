"""Figures a scenario measures (seconds to bind, whole nodes left), shown after the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from schedgate.cluster import Cluster, Namespace


@dataclass
class Report:
    node: Any  # pytest.Item

    def figure(self, name: str, value: float | int | str, unit: str = "") -> None:
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        self.node.user_properties.append((f"schedgate:{name}", f"{shown}{' ' + unit if unit else ''}"))


def figures(user_properties: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    return [(k.removeprefix("schedgate:"), str(v)) for k, v in user_properties if str(k).startswith("schedgate:")]


# What a test leaves on its pytest item for the plugin's report hooks: the
# cluster it ran on, its namespaces, and a scenario file's step transcript.
@dataclass
class ItemState:
    cluster: Cluster
    namespaces: list[Namespace] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)


_STATE = pytest.StashKey[ItemState]()


def item_state(item: pytest.Item, cluster: Cluster) -> ItemState:
    """The item's state, created on first use (the ``ns`` fixture and scenario files record into it)."""
    state = item.stash.get(_STATE, None)
    if state is None:
        state = item.stash[_STATE] = ItemState(cluster=cluster)
    return state


def state_of(item: pytest.Item) -> ItemState | None:
    return item.stash.get(_STATE, None)
