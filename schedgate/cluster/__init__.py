"""The cluster facade scenarios use, whichever provider runs it: topology, node edits with their
undo, schedulers by profile, the scheduler cache barrier, leases."""

from schedgate.cluster.backend import (
    Backend,
    ExportsLogs,
    ExposesApiServer,
    ReroutesSchedulers,
    RestartsApiServer,
    StartsSchedulers,
)
from schedgate.cluster.facade import SYSTEM_NAMESPACE, Cluster, ComponentDied
from schedgate.cluster.nodes import ApiOnlyNodes, KubeletNodes, NodeBackend
from schedgate.cluster.sync import SYNC_KEY, SYNC_NODE, is_sync_node
from schedgate.objects.pods import Namespace

__all__ = ["SYNC_KEY", "SYNC_NODE", "SYSTEM_NAMESPACE", "ApiOnlyNodes", "Backend", "Cluster", "ComponentDied",
           "ExportsLogs", "ExposesApiServer", "KubeletNodes", "Namespace", "NodeBackend", "RestartsApiServer",
           "ReroutesSchedulers", "StartsSchedulers", "is_sync_node"]
