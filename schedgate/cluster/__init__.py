"""The cluster facade scenarios use, whichever provider runs it: topology, node edits with their
undo, schedulers by profile, the scheduler cache barrier, leases, and what it can do (its abilities)."""

from schedgate.cluster.abilities import (
    Ability,
    AuditsRequests,
    ExportsLogs,
    ExposesApiServer,
    ReroutesSchedulers,
    RestartsApiServer,
    StartsSchedulers,
)
from schedgate.cluster.backend import Backend
from schedgate.cluster.facade import SYSTEM_NAMESPACE, Cluster, ComponentDied
from schedgate.cluster.nodes import ApiOnlyNodes, KubeletNodes, NodeBackend
from schedgate.cluster.sync import SYNC_KEY, SYNC_NODE, is_sync_node
from schedgate.objects.pods import Namespace

__all__ = ["SYNC_KEY", "SYNC_NODE", "SYSTEM_NAMESPACE", "Ability", "ApiOnlyNodes", "AuditsRequests", "Backend",
           "Cluster", "ComponentDied", "ExportsLogs", "ExposesApiServer", "KubeletNodes", "Namespace", "NodeBackend",
           "RestartsApiServer", "ReroutesSchedulers", "StartsSchedulers", "is_sync_node"]
