"""The existing provider: run the scenarios in a cluster schedgate did not make.

``--provider existing --kubeconfig FILE [--context C]``. The scheduler under
test runs as a process on this machine with a ServiceAccount of its own
(least-privilege RBAC, its own lease), so any cluster whose API server this
machine reaches will do — nothing is pulled or pushed. Scenario pods go into
namespaces schedgate creates and deletes. The cluster definition names the
cluster's own nodes: a node that is not as defined is written only if the
user opened it to edits with the label ``schedgate.io/editable=true``; a test
that would edit another node is skipped with the reason. GPU capacity is not
changed on a node that reported GPUs when the run began unless
``--allow-fake-gpus`` says so. Every change outside a test's namespace is
written down first (:mod:`schedgate.kube.journal`) and undone at the end,
after Ctrl-C, and — after a crash — by the next run's reaper.

Creation steps: the cluster answers and the user may do what a run does;
pinned binaries; the run folder and its journal; no other run or scheduler in
the way; the definition's nodes found and made as defined (the first writes,
so a node closed to edits stops the run before anything else is made);
schedgate's namespace; the scheduler under test; the first sync.
"""

from __future__ import annotations

import logging
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from schedgate.cluster import ApiOnlyNodes, Cluster, KubeletNodes
from schedgate.cluster.apiserver import read_feature_gates, serves
from schedgate.cluster.nodes import NodeBackend
from schedgate.errors import ComponentError, NotHere, SchedgateError
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.journal import JOURNAL, MANAGED_BY, Journal
from schedgate.objects.builders import PLACEHOLDER_IMAGE
from schedgate.providers.base import (
    ClusterRequest,
    Started,
    binaries,
    create_in_steps,
    first_sync,
    resource_scale,
    smallest_allocatable,
    write_info,
)
from schedgate.providers.existing.access import (
    SYNC_NODE,
    SYSTEM_NAMESPACE,
    check_kubeconfig,
    check_rights,
    check_skew,
    connect,
    where,
)
from schedgate.providers.existing.backend import EDITABLE_LABEL, ExistingBackend, ExistingNodes, RunningScheduler
from schedgate.providers.identity import cluster_ca
from schedgate.runtime.blackbox import BlackBoxProcess
from schedgate.runtime.interrupts import interrupts_deferred
from schedgate.runtime.procs import RunDir
from schedgate.runtime.scheduler import SchedulerProcess, distinct
from schedgate.runtime.toolchain import Binaries, pinned_kubernetes_version
from schedgate.spec.agent import agent_only_local
from schedgate.spec.cluster import GPU, ClusterDefinition
from schedgate.spec.quantity import parse_quantity
from schedgate.spec.schedconfig import LEASE_NAMESPACE

log = logging.getLogger("schedgate")
RUN_ANNOTATION = "schedgate.io/run"


class ExistingProvider:
    name = "existing"
    makes_clusters = False  # one cluster as it is: a scenario that needs another definition is skipped
    publishes_devices = False  # its devices are its drivers'
    runs_black_boxes = True  # as a process beside the cluster, like its kube-schedulers
    adds_nodes = False
    kubelets_only = False

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        return agent_only_local(definition, "existing")

    def preflight(self, req: ClusterRequest) -> None:
        """The kubeconfig answers, the user has every right a run needs, the scheduler's version fits."""
        no_agent = agent_only_local(req.definition, "existing")
        if no_agent:
            raise SchedgateError(no_agent)
        kubeconfig = check_kubeconfig(req.kubeconfig, req.context)
        api, version = connect(kubeconfig, req.context)
        check_rights(api, kubeconfig, req.context)
        if req.scheduler_binary is None and not req.scheduler_running and req.scheduler_config.black_box is None:
            check_skew(version, pinned_kubernetes_version())

    def create(self, req: ClusterRequest, reaped: list[str]) -> Started:
        return _Creation(req, reaped).run()


class _Creation:
    """One run in an existing cluster being set up: its steps share these attributes."""

    api: k8s.ApiClient
    version: str
    bins: Binaries
    dir: RunDir
    journal: Journal
    backend: ExistingBackend
    cluster: Cluster

    def __init__(self, req: ClusterRequest, reaped: list[str]) -> None:
        assert req.kubeconfig is not None
        self.req = req
        self.kubeconfig = req.kubeconfig.resolve()
        self.reaped = reaped
        self.timings: dict[str, float] = {}
        self.at = where(req.kubeconfig, req.context)

    def run(self) -> Started:
        create_in_steps([
            (f"existing: {self.at}", self.connect),
            ("pinned binaries", self.binaries),
            ("run folder and its journal", self.run_folder),
            ("existing: no other run or scheduler in the way", self.nobody_else),
            ("existing: the definition's nodes", self.find_nodes),
            ("existing: nodes as defined", self.nodes_as_defined),
            (f"existing: namespace {SYSTEM_NAMESPACE}", self.system_namespace),
            ("existing: the scheduler under test", self.scheduler_under_test),
            ("first sync of every scheduler", lambda: first_sync(self.cluster, self.req, 60)),
            ("run info", lambda: write_info(self.dir.path, self.req, self.cluster)),
        ], self.rollback, self.timings)
        return Started(cluster=self.cluster, stop=self.stop, run_dir=self.dir.path, reaped=self.reaped)

    # -- steps -------------------------------------------------------------------
    def connect(self) -> None:
        self.api, self.version = connect(self.kubeconfig, self.req.context)
        self.core: Any = k8s.CoreV1Api(self.api)
        self.check_gates()

    def check_gates(self) -> None:
        """A definition's feature gates and API versions must be what the cluster already runs: schedgate
        does not change the gates of a cluster it did not make. One line names the first that differs. What
        a scenario's ``requires:`` turned on (spec.features) is not the definition's word: such a file skips
        when the cluster lacks it (pytest_plugin.items)."""
        gates = self.req.definition.gates
        if not gates:
            return
        have = read_feature_gates(self.api) if gates.feature_gates else {}
        for name, want in gates.feature_gates:
            if have.get(name, None) != want and f"featureGates.{name}" not in gates.needed:
                state = "not at all" if name not in have else ("on" if have[name] else "off")
                raise SchedgateError(f"{self.at}: the API server has feature gate {name} {state}; "
                                     f"{gates.source} asks for it {'on' if want else 'off'} (featureGates.{name}), "
                                     "and schedgate does not change the gates of a cluster it did not make")
        for api_version, want in gates.runtime_config:
            if (not api_version.startswith("api/") and f"runtimeConfig.{api_version}" not in gates.needed
                    and serves(self.api, api_version) != want):
                raise SchedgateError(f"{self.at}: the API server {'does not serve' if want else 'serves'} "
                                     f"{api_version}; {gates.source} asks for it {'on' if want else 'off'} "
                                     f"(runtimeConfig.{api_version})")

    def binaries(self) -> None:
        self.bins = binaries(self.req.bin_dir)

    def run_folder(self) -> None:
        self.dir = RunDir.create(keep=self.req.keep)  # kept (schedgate up): `schedgate down` puts it back
        self.journal = Journal(self.dir.path / JOURNAL, str(self.kubeconfig), self.req.context)
        self.journal.save()
        out = self.dir.path / "pki"
        done = subprocess.run([str(self.bins.pki), str(out)], capture_output=True, text=True)
        if done.returncode != 0:
            raise ComponentError(f"schedgate-pki failed: {done.stderr.strip()}")

    def nobody_else(self) -> None:
        ns = ignore_not_found(read_json, self.core.read_namespace, SYSTEM_NAMESPACE)
        if ns is not None:
            owner = ((ns.get("metadata") or {}).get("annotations") or {}).get(RUN_ANNOTATION, "unknown")
            raise SchedgateError(f"{self.at}: namespace {SYSTEM_NAMESPACE} exists (run {owner}): another "
                                 "schedgate run uses this cluster, or one that died on another machine left it; "
                                 f"once no run is using it: kubectl delete namespace {SYSTEM_NAMESPACE}")
        if ignore_not_found(read_json, self.core.read_node, SYNC_NODE) is not None:
            raise SchedgateError(f"{self.at}: node {SYNC_NODE} exists: a schedgate run uses this cluster or left "
                                 f"it; once none does: kubectl delete node {SYNC_NODE}")
        config = self.req.scheduler_config
        lease = config.lease_name
        held = ignore_not_found(read_json, k8s.CoordinationV1Api(self.api).read_namespaced_lease, lease,
                                LEASE_NAMESPACE)
        spec = (held or {}).get("spec") or {}
        renewed = spec.get("renewTime")
        age = (datetime.now(UTC) - datetime.fromisoformat(renewed.replace("Z", "+00:00"))).total_seconds() \
            if renewed else float("inf")
        live = bool(spec.get("holderIdentity")) and age < float(spec.get("leaseDurationSeconds") or 15) * 2
        if self.req.scheduler_running and not live:
            raise SchedgateError(f"--scheduler-running: no scheduler holds lease {LEASE_NAMESPACE}/{lease} in the "
                                 f"cluster of {self.at} (the lease of profile {config.profile_names[0]}); start "
                                 "yours with leaderElection.resourceName set to it, or let schedgate start one")
        if not self.req.scheduler_running and live:
            raise SchedgateError(
                f"{self.at}: lease {LEASE_NAMESPACE}/{lease} is held by {spec['holderIdentity']} (renewed "
                f"{age:.0f}s ago): a scheduler for profile(s) {config.profile_names} already runs in this cluster; "
                "stop it, test the profile under another name, or test that one with --scheduler-running")

    def find_nodes(self) -> None:
        have = {n["metadata"]["name"]: n for n in read_json(self.core.list_node).get("items") or []}
        specs = self.req.definition.nodes()
        missing = [s.name for s in specs if s.name not in have]
        if missing:
            raise SchedgateError(f"{self.req.definition.source}: nodes {', '.join(missing)} are not in the cluster "
                                 f"of {self.at} (it has {', '.join(sorted(have)[:8]) or 'none'}"
                                 f"{', ...' if len(have) > 8 else ''}); the definition must name its nodes")
        self.node_objs = {s.name: have[s.name] for s in specs}
        # The cluster's other nodes (a control plane, a made cluster's sync node, nodes outside the definition)
        # count in the schedulers' "0/N nodes are available".
        self.extra = tuple(sorted(set(have) - set(self.node_objs) - {SYNC_NODE}))

    def system_namespace(self) -> None:
        self.journal.will_create("Namespace", SYSTEM_NAMESPACE)
        self.journal.sweep_namespaces = True
        self.journal.namespaces_before = [n["metadata"]["name"] for n in
                                          read_json(self.core.list_namespace).get("items") or []]
        self.journal.save()
        self.core.create_namespace({"metadata": {
            "name": SYSTEM_NAMESPACE, "labels": {MANAGED_BY: "schedgate"},
            "annotations": {RUN_ANNOTATION: self.dir.path.name}}})
        self.journal.will_create("Node", SYNC_NODE)  # the cache barrier's node, made at the first sync

    def nodes_as_defined(self) -> None:
        """Before anything else is written: a node not as defined and closed to edits stops the run here."""
        kinds: dict[str, NodeBackend] = {}
        for name, n in self.node_objs.items():
            kubelet = bool(((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion"))
            kinds[name] = KubeletNodes(self.core, "existing") if kubelet else ApiOnlyNodes(self.core)
            if not kubelet:
                self.journal.status_owned.append(name)
        editable = frozenset(name for name, n in self.node_objs.items()
                             if ((n.get("metadata") or {}).get("labels") or {}).get(EDITABLE_LABEL) == "true")
        real_gpus = frozenset(name for name, n in self.node_objs.items()
                              if parse_quantity(((n.get("status") or {}).get("capacity") or {}).get(GPU, "0")) > 0)
        nodes = ExistingNodes(self.core, self.journal, kinds, editable, real_gpus, self.req.allow_fake_gpus)
        kubelets = [n for name, n in self.node_objs.items() if kinds[name].admits_pods]
        conf = self.api.configuration
        ca = cluster_ca(self.api, self.dir.path / "cluster-ca.crt")
        self.backend = ExistingBackend(
            api=self.api, core=self.core, run=self.dir, bins=self.bins,
            default_binary=Path(self.req.scheduler_binary or self.bins.kube_scheduler), server=str(conf.host),
            ca=ca, journal=self.journal, nodes=nodes, pod_image=_pod_image(kubelets) if kubelets else PLACEHOLDER_IMAGE,
            resource_scale=resource_scale(self.req.definition, smallest_allocatable(kubelets)) if kubelets else {},
            extra_nodes=self.extra)
        self.cluster = Cluster(definition=self.req.definition, kubeconfig=self.kubeconfig, api=self.api,
                               kubernetes_version=self.version, backend=self.backend, timings=self.timings,
                               sync_node=SYNC_NODE, system_namespace_name=SYSTEM_NAMESPACE)
        try:
            self.cluster.apply_nodes()
        except NotHere as e:
            raise SchedgateError(f"{self.req.definition.source}: {e} — or describe the node as it is") from None

    def scheduler_under_test(self) -> None:
        config = self.req.scheduler_config
        if not self.req.scheduler_running:
            self.backend.start_scheduler(config, None, None)
            return
        running = RunningScheduler(name=config.lease_name, config=config, config_path=Path(config.source))
        for p in config.profile_names:
            self.backend.schedulers[p] = running

    # -- the one rollback, and the end ----------------------------------------------
    def rollback(self) -> None:
        if not hasattr(self, "dir"):
            return
        self.dir.keep = False  # a run that did not come up is not kept, even for `schedgate up`
        self._undo()

    def stop(self) -> None:
        if not self.req.keep:
            self._undo()

    def _undo(self) -> None:
        """Stop the schedulers schedgate started, put back every journaled change, remove the run folder;
        a Ctrl-C meanwhile waits until that is done (a half-undone cluster is what it must not leave)."""
        with interrupts_deferred():
            if hasattr(self, "backend"):
                for s in distinct(self.backend.schedulers):
                    if isinstance(s, (SchedulerProcess, BlackBoxProcess)):  # not one the user runs
                        s.stop()
            done = self.journal.undo(self.api)
            log.info("existing: put back %d change(s) in the cluster of %s", len(done), self.at)
            (self.dir.path / JOURNAL).unlink(missing_ok=True)
            self.dir.close()


def _pod_image(kubelet_nodes: list[dict[str, Any]]) -> str:
    """An image every kubelet node already holds: its sandbox (pause) image, so nothing is pulled."""
    common: set[str] | None = None
    for n in kubelet_nodes:
        names = {name for img in (n.get("status") or {}).get("images") or [] for name in img.get("names") or []
                 if "/pause:" in name or name.startswith("pause:")}
        common = names if common is None else common & names
    if not common:
        raise SchedgateError("existing: the cluster's nodes hold no common pause image to run scenario pods with")
    return sorted(common, key=len)[0]



__all__ = ["EDITABLE_LABEL", "ExistingBackend", "ExistingNodes", "ExistingProvider"]
