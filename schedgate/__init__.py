"""schedgate: end-to-end scenarios that prove what a real kube-scheduler does.

Public API for scenarios::

    from schedgate import make_pod, wait_for, scheduled_on, unschedulable, scheduling_error
"""

from schedgate.builders import HIGH_SPEED_NET, Pod, PodBuilder, make_pod
from schedgate.cluster import Cluster, ComponentDied, Namespace
from schedgate.definitions import GPU, ClusterDefinition, load_definition
from schedgate.errors import ComponentError, DefinitionError, SchedgateError, ToolchainError
from schedgate.events import EventLog
from schedgate.waits import (
    WaitTimeout,
    WrongOutcome,
    gone,
    scheduled_on,
    scheduling_error,
    unschedulable,
    wait_for,
    wait_for_items,
)

__all__ = [
    "GPU", "HIGH_SPEED_NET", "Cluster", "ClusterDefinition", "ComponentDied", "ComponentError",
    "DefinitionError", "EventLog", "Namespace", "Pod", "PodBuilder", "SchedgateError", "ToolchainError",
    "WaitTimeout", "WrongOutcome", "gone", "load_definition", "make_pod", "scheduled_on", "scheduling_error",
    "unschedulable", "wait_for", "wait_for_items",
]
