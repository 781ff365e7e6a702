"""What a run in an existing cluster can do, for the cluster facade: its nodes (edits checked against
the user's opt-in and journaled first) and its schedulers (processes on this machine, each under a
ServiceAccount of its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client as k8s

from schedgate.cluster.abilities import Ability, running
from schedgate.cluster.nodes import DELETE, NodeBackend
from schedgate.errors import NotHere
from schedgate.kube.api import create_objects, create_or_keep, ignore_not_found, read_json
from schedgate.kube.journal import MANAGED_BY, Journal
from schedgate.objects.metrics import MetricsSnapshot
from schedgate.providers.existing.access import SYSTEM_NAMESPACE
from schedgate.providers.identity import identity_name, token_kubeconfig
from schedgate.providers.rbac import scheduler_rbac
from schedgate.runtime.blackbox import BlackBoxProcess
from schedgate.runtime.health import free_port
from schedgate.runtime.procs import Component, RunDir
from schedgate.runtime.scheduler import Scheduler, SchedulerProcess, distinct, forget
from schedgate.runtime.toolchain import Binaries
from schedgate.spec.cluster import GPU, Condition, NodeSpec
from schedgate.spec.schedconfig import LEASE_NAMESPACE, SchedulerConfig

EDITABLE_LABEL = "schedgate.io/editable"


@dataclass
class ExistingNodes:
    """The cluster's own nodes: each edit checked against the user's opt-in, each node recorded before
    schedgate first writes it. Kubelet nodes and API-only nodes (a cluster whose nodes are objects only)
    keep their own rules (:class:`KubeletNodes`, :class:`ApiOnlyNodes`)."""

    core: Any
    journal: Journal
    kinds: dict[str, NodeBackend]  # node name -> its kind's rules
    editable: frozenset[str]
    real_gpus: frozenset[str]  # nodes that reported GPUs when the run began
    allow_fake_gpus: bool = False

    @property
    def abilities(self) -> frozenset[Ability]:
        """Its nodes' (any node's kind), but never ADDS_NODES: schedgate adds no node to a cluster it did not make."""
        return frozenset(a for k in self.kinds.values() for a in k.abilities) - {Ability.ADDS_NODES}

    def _kind(self, node: str) -> NodeBackend:
        try:
            return self.kinds[node]
        except KeyError:
            raise NotHere(f"node {node} is not a node of the cluster definition") from None

    def before_edit(self, node: str, what: str) -> None:
        if what == DELETE:
            raise NotHere(f"node {node} would be deleted; schedgate does not delete nodes of a cluster it did not "
                          "make (a kubelet's node comes back only when its kubelet restarts)")
        if node not in self.editable:
            raise NotHere(f"node {node} is not open to edits ({what}); label it {EDITABLE_LABEL}=true to let "
                          "schedgate change it for a test and put it back afterwards")
        self.journal.node_before_edit(self.core, node)

    def bring_back(self, spec: NodeSpec) -> bool:
        raise NotHere(f"node {spec.name} is gone, and the existing provider does not recreate nodes")

    def cleared_taints(self) -> frozenset[str]:
        return frozenset()  # a real node's own taints (not-ready, ...) are the cluster's business

    def _gpus_may_change(self, node: str) -> None:
        if node in self.real_gpus and not self.allow_fake_gpus:
            raise NotHere(f"node {node} reports real GPUs; schedgate does not change their count there "
                          "unless --allow-fake-gpus is given")

    def status_patch(self, spec: NodeSpec, status: Mapping[str, Any], resources: set[str],
                     conditions: set[str]) -> dict[str, Any]:
        patch = self._kind(spec.name).status_patch(spec, status, resources, conditions)
        if any(GPU in (patch.get(s) or {}) for s in ("capacity", "allocatable")):
            self._gpus_may_change(spec.name)
        return patch

    def settle(self, spec: NodeSpec, resources: set[str]) -> None:
        self._kind(spec.name).settle(spec, resources)

    def set_conditions(self, node: str, conditions: Sequence[Condition]) -> None:
        self._kind(node).set_conditions(node, conditions)

    def set_resources(self, node: str, capacity: Mapping[str, str], allocatable: Mapping[str, str]) -> None:
        if GPU in capacity or GPU in allocatable:
            self._gpus_may_change(node)
        self._kind(node).set_resources(node, capacity, allocatable)


# One cluster as it is (a file that needs another definition or profile is skipped), its nodes and devices
# its own (its drivers publish them); black boxes run as processes beside it, like its kube-schedulers.
EXISTING = frozenset({Ability.RUNS_BLACK_BOXES})


@dataclass
class ExistingBackend:
    """What a run can do in an existing cluster: start schedulers (processes here), be proxied."""

    api: k8s.ApiClient
    core: Any
    run: RunDir
    bins: Binaries
    default_binary: Path
    server: str
    ca: Path | None
    journal: Journal
    nodes: ExistingNodes
    pod_image: str
    resource_scale: Mapping[str, float] = field(default_factory=dict)
    schedulers: dict[str, Scheduler] = field(default_factory=dict)
    name: str = "existing"
    extender_host: str = "127.0.0.1"  # the schedulers run on this machine
    extra_nodes: tuple[str, ...] = ()

    @property
    def abilities(self) -> frozenset[Ability]:
        return running(self, EXISTING, self.nodes.abilities)

    @property
    def pki(self) -> Path:
        return self.run.path / "pki"

    @property
    def api_endpoint(self) -> tuple[str, int]:
        u = urlsplit(self.server)
        return (u.hostname or "127.0.0.1", u.port or 443)

    def components(self) -> Sequence[Component]:
        return [s.proc for s in distinct(self.schedulers) if isinstance(s, SchedulerProcess) and s.proc]

    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None,
                        nodes: int) -> Scheduler:
        lease = config.lease_name
        identity = identity_name(lease)
        subject = {"kind": "ServiceAccount", "name": identity, "namespace": SYSTEM_NAMESPACE}
        j = self.journal
        j.will_create("ServiceAccount", identity, SYSTEM_NAMESPACE)
        create_or_keep(self.core.create_namespaced_service_account, SYSTEM_NAMESPACE,
                       {"metadata": {"name": identity, "labels": {MANAGED_BY: "schedgate"}}})
        objects = scheduler_rbac(identity, subject, lease, config.shared_pools, black_box=config.black_box is not None)
        for o in objects:
            j.will_create(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace", ""))
        create_objects(self.api, objects)
        held = ignore_not_found(read_json, k8s.CoordinationV1Api(self.api).read_namespaced_lease, lease,
                                LEASE_NAMESPACE)
        if held is None:
            j.will_create("Lease", lease, LEASE_NAMESPACE)
        else:
            j.lease_before_taken(LEASE_NAMESPACE, lease, held.get("spec") or {})
        kubeconfig = self._kubeconfig(identity, api_server)
        if config.black_box is not None:  # a program beside the cluster, as the kube-schedulers are
            box = BlackBoxProcess(name=lease, config=config, kubeconfig=kubeconfig, run=self.run,
                                  built=self.bins.programs)
            box.start(box.spec.start_timeout)
            for p in config.profile_names:
                self.schedulers[p] = box
            return box
        effective = config.effective(kubeconfig=str(kubeconfig), lease=lease, elect=True)  # a shared cluster
        path = effective.write(self.run.path / f"{lease}.config.yaml")
        proc = SchedulerProcess(name=lease, config=config, effective=effective, config_path=path,
                                binary=Path(binary or self.default_binary), port=free_port(), pki=self.pki,
                                run=self.run, nodes=nodes)
        proc.start()
        for p in config.profile_names:
            self.schedulers[p] = proc
        return proc

    def stop_scheduler(self, scheduler: Scheduler) -> None:
        scheduler.stop()
        forget(self.schedulers, scheduler)

    def _kubeconfig(self, identity: str, api_server: str | None) -> Path:
        """The scheduler's own kubeconfig: a bound ServiceAccount token, the cluster's CA, and the API
        server's address (or a proxy's, still checking the server's certificate under its own name)."""
        return token_kubeconfig(self.core, identity, SYSTEM_NAMESPACE, server=api_server or self.server, ca=self.ca,
                                path=self.run.path / f"{identity}.kubeconfig",
                                tls_server_name=self.api_endpoint[0] if api_server else None)


@dataclass
class RunningScheduler:
    """The scheduler under test as the user runs it in the cluster (``--scheduler-running``): schedgate
    neither starts nor stops it, and sees it through what it writes (bindings, events, its lease)."""

    name: str  # the lease it holds
    config: SchedulerConfig
    config_path: Path

    @property
    def profiles(self) -> list[str]:
        return self.config.profile_names

    @property
    def log_path(self) -> Path | None:
        return None

    def alive(self) -> bool:
        return True  # checked by its lease when the run began; its own supervisor keeps it running

    def died(self) -> bool:
        return False

    def is_down(self) -> bool:
        return False

    def _cannot(self, what: str) -> NotHere:
        return NotHere(f"the scheduler under test runs in the cluster (--scheduler-running): schedgate cannot {what}")

    def start(self, timeout: float = 0.0) -> float:
        raise self._cannot("start it")

    def stop(self) -> None:
        raise self._cannot("stop it")

    def kill(self) -> None:
        raise self._cannot("kill it")

    def log_tail(self, lines: int = 30) -> list[str]:
        return []

    def metrics_text(self) -> str:
        raise self._cannot("read its /metrics")

    def metrics(self) -> MetricsSnapshot:
        raise self._cannot("read its /metrics")

    def wait_for_metrics(self, accept: Callable[[MetricsSnapshot], bool], description: str,
                         timeout: float = 0.0) -> MetricsSnapshot:
        raise self._cannot("read its /metrics")
