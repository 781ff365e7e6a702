"""schedgate: end-to-end scenarios that prove what a real kube-scheduler does.

Public API for scenarios::

    from schedgate import make_pod, wait_for, scheduled_on, unschedulable, scheduling_error

The package is laid out by layers, each importing only those below it (the
import-linter contract in pyproject.toml): ``cli`` > ``pytest_plugin`` >
``scenarios`` > ``report`` | ``faults`` | ``workloads`` > ``providers`` >
``cluster`` > ``runtime`` > ``objects`` > ``kube`` > ``spec`` > ``errors``.
Old import paths (``schedgate.waits``, ``schedgate.builders``, ...) keep working.
"""

from schedgate import _moved

_moved.install()

from schedgate.cluster import Cluster, ComponentDied  # noqa: E402
from schedgate.errors import ComponentError, DefinitionError, SchedgateError, ToolchainError  # noqa: E402
from schedgate.kube.watch import WaitTimeout, WrongOutcome, wait_for, wait_for_items  # noqa: E402
from schedgate.objects.builders import HIGH_SPEED_NET, PodBuilder, make_pod  # noqa: E402
from schedgate.objects.events import EventLog  # noqa: E402
from schedgate.objects.matchers import gone, scheduled_on, scheduling_error, unschedulable  # noqa: E402
from schedgate.objects.pods import Namespace, Pod  # noqa: E402
from schedgate.spec.cluster import GPU, ClusterDefinition, load_definition  # noqa: E402

__all__ = [
    "GPU", "HIGH_SPEED_NET", "Cluster", "ClusterDefinition", "ComponentDied", "ComponentError",
    "DefinitionError", "EventLog", "Namespace", "Pod", "PodBuilder", "SchedgateError", "ToolchainError",
    "WaitTimeout", "WrongOutcome", "gone", "load_definition", "make_pod", "scheduled_on", "scheduling_error",
    "unschedulable", "wait_for", "wait_for_items",
]
