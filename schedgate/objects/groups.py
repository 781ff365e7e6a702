"""The labels that make a pod a member of a gang (the Gang reference plugin, go/pkg/gang)."""

from __future__ import annotations

from typing import Any

GROUP_LABEL = "schedgate.io/gang"  # the group
MIN_LABEL = "schedgate.io/gang-min"  # how many members the group needs


def group_of(pod: dict[str, Any]) -> tuple[str, int] | None:
    """The pod's (group, minimum members), or None if it is not a gang member."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    group, need = labels.get(GROUP_LABEL), labels.get(MIN_LABEL, "")
    if not group:
        return None
    return str(group), int(need) if str(need).isdigit() else 0
