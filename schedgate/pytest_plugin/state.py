"""What a test leaves on its pytest item for the plugin's report hooks: the cluster it ran on, its
namespaces, and a scenario file's step transcript."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from schedgate.cluster import Cluster
from schedgate.objects.pods import Namespace


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
