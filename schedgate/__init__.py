"""schedgate: end-to-end scenarios that prove what a real kube-scheduler does.

Public API for scenarios::

    from schedgate import make_pod, wait_for, scheduled_on, unschedulable, scheduling_error

The package is laid out by layers, each importing only those below it (the
import-linter contract in pyproject.toml): ``cli`` > ``pytest_plugin`` >
``scenarios`` > ``report`` | ``faults`` | ``workloads`` > ``providers`` >
``cluster`` > ``runtime`` > ``objects`` > ``kube`` > ``spec`` > ``errors``.
"""

from schedgate.cluster import Cluster, ComponentDied
from schedgate.errors import ComponentError, DefinitionError, SchedgateError, ToolchainError
from schedgate.kube.watch import WaitTimeout, WrongOutcome, wait_for, wait_for_items
from schedgate.objects.builders import HIGH_SPEED_NET, PodBuilder, make_pod
from schedgate.objects.events import EventLog
from schedgate.objects.matchers import gone, scheduled_on, scheduling_error, unschedulable
from schedgate.objects.pods import Namespace, Pod
from schedgate.spec.cluster import GPU, ClusterDefinition, load_definition

__all__ = [
    "GPU", "HIGH_SPEED_NET", "Cluster", "ClusterDefinition", "ComponentDied", "ComponentError",
    "DefinitionError", "EventLog", "Namespace", "Pod", "PodBuilder", "SchedgateError", "ToolchainError",
    "WaitTimeout", "WrongOutcome", "gone", "load_definition", "make_pod", "scheduled_on", "scheduling_error",
    "unschedulable", "wait_for", "wait_for_items",
]
