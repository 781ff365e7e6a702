"""What makes a pod a member of a gang: the labels of the Gang reference plugin (go/pkg/gang), or Kubernetes'
own ``spec.schedulingGroup`` (a PodGroup, 1.37: its minimum lives on the PodGroup, not the pod)."""

from __future__ import annotations

from typing import Any

GROUP_LABEL = "schedgate.io/gang"  # the group
MIN_LABEL = "schedgate.io/gang-min"  # how many members the group needs
PLUGIN = "Gang"  # the plugin's name in a scheduler configuration
GROUP_API = "scheduling.k8s.io/v1beta1"  # Kubernetes' own PodGroup (1.37, feature GenericWorkload)


def group_of(pod: dict[str, Any]) -> tuple[str, int] | None:
    """The pod's (group, minimum members; 0: not on the pod), or None if it is not a gang member."""
    native = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    if native:
        return f"PodGroup/{native}", 0
    labels = (pod.get("metadata") or {}).get("labels") or {}
    group, need = labels.get(GROUP_LABEL), labels.get(MIN_LABEL, "")
    if not group:
        return None
    return str(group), int(need) if str(need).isdigit() else 0
