"""The black-box cache barrier: wait until every scheduler has seen every change made so far.

A node watch delivers events in order, and so does a pod watch. The last
write goes to the sync node (a label with a fresh token); a probe pod per
scheduler, created after it, can bind only where that token is. Once each
probe is bound, each scheduler has processed all earlier node and pod
events. The sync node is cordoned so no other pod goes there; it shows in
"0/N nodes are available" counts as one node that "were unschedulable",
never mixed into taint or affinity counts.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterable
from typing import Any

from schedgate.cluster.nodes import MERGE, ready_condition
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.watch import WaitTimeout, WrongOutcome, wait_for
from schedgate.objects.builders import make_pod
from schedgate.objects.matchers import scheduled_on
from schedgate.objects.pods import Namespace, Pod
from schedgate.runtime.scheduler import Scheduler

SYNC_NODE = "schedgate-sync"
SYNC_KEY = "schedgate.io/sync"
# The sync node is a tenant pool of its own and the probes its tenant, so a scheduler that keeps tenants
# to their pools (TenantFilter, tenant-id / schedgate.io/tenant-pool) admits them there too.
SYNC_TENANT = {"pod": ("tenant-id", "schedgate-sync"), "node": ("schedgate.io/tenant-pool", "schedgate-sync")}


def is_sync_node(name: str) -> bool:
    """The sync node of a cluster schedgate made (``schedgate-sync``) or of a run in one it did not
    (``schedgate-sync-run``, beside the other's)."""
    return name == SYNC_NODE or name.startswith(SYNC_NODE + "-")


class SyncBarrier:
    def __init__(self, core: Any, node: str = SYNC_NODE) -> None:
        self.core = core
        self.node = node
        self.count = 0

    def wait(self, schedulers: Iterable[Scheduler], ns: Namespace, timeout: float = 15.0) -> float:
        """Seconds until each scheduler bound its probe; one that does not within ``timeout`` is warned of."""
        started = time.monotonic()
        token = uuid.uuid4().hex[:12]
        self._ensure_node(token)
        self.count += 1
        probes: list[tuple[str, Pod]] = []
        for proc in schedulers:
            profile = proc.profiles[0]
            b = (make_pod(f"sync-{self.count}-{proc.name}"[:63].rstrip("-"))
                 .scheduler(profile).require_label(SYNC_KEY, token).tolerate_everything()
                 .label(*SYNC_TENANT["pod"]).request("cpu", "0").request("memory", "0"))
            probes.append((profile, b.create(ns)))
        try:
            for profile, probe in probes:
                try:
                    wait_for(probe, scheduled_on([self.node]), timeout=timeout)
                except (WaitTimeout, WrongOutcome) as e:
                    warnings.warn(f"schedgate: scheduler {profile} did not confirm it is in sync: "
                                  f"{str(e).splitlines()[0]}", stacklevel=3)
        finally:
            for _, probe in probes:
                probe.delete()
        return time.monotonic() - started

    def _ensure_node(self, token: str) -> None:
        labels = {"kubernetes.io/hostname": self.node, SYNC_KEY: token, SYNC_TENANT["node"][0]: SYNC_TENANT["node"][1]}
        if ignore_not_found(read_json, self.core.read_node, self.node) is None:
            self.core.create_node({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": self.node, "labels": labels}, "spec": {"unschedulable": True}})
            room = {"cpu": "1", "memory": "1Gi", "pods": "16"}
            self.core.patch_node_status(self.node, {"status": {
                "capacity": room, "allocatable": room,
                "conditions": [ready_condition("schedgate's scheduler-sync node")]}}, _content_type=MERGE)
        # Cordoned, and cleared of the taints new nodes get: only sync probes go here.
        self.core.patch_node(self.node, {"metadata": {"labels": labels},
                                         "spec": {"unschedulable": True, "taints": None}}, _content_type=MERGE)
