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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from schedgate.cluster import Ability, ApiOnlyNodes, Cluster, KubeletNodes, NodeBackend
from schedgate.cluster.apiserver import read_feature_gates, serves
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
    made,
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
from schedgate.providers.existing.backend import (
    EDITABLE_LABEL,
    EXISTING,
    ExistingBackend,
    ExistingNodes,
    RunningScheduler,
)
from schedgate.providers.identity import cluster_ca
from schedgate.runtime.blackbox import BlackBoxProcess
from schedgate.runtime.interrupts import interrupts_deferred
from schedgate.runtime.procs import RunDir
from schedgate.runtime.scheduler import SchedulerProcess, distinct
from schedgate.runtime.toolchain import Binaries, pinned_kubernetes_version
from schedgate.spec.agent import agent_unmet
from schedgate.spec.cluster import GPU, ClusterDefinition
from schedgate.spec.quantity import parse_quantity
from schedgate.spec.schedconfig import LEASE_NAMESPACE

log = logging.getLogger("schedgate")
RUN_ANNOTATION = "schedgate.io/run"


class ExistingProvider:
    name = "existing"
    abilities = EXISTING

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        return agent_unmet(definition, "existing")

    def preflight(self, req: ClusterRequest) -> None:
        """The kubeconfig answers, the user has every right a run needs, the scheduler's version fits."""
        no_agent = agent_unmet(req.definition, "existing")
        if no_agent:
            raise SchedgateError(no_agent)
        kubeconfig = check_kubeconfig(req.kubeconfig, req.context)
        api, version = connect(kubeconfig, req.context)
        check_rights(api, kubeconfig, req.context)
        if req.scheduler_binary is None and not req.scheduler_running and req.scheduler_config.black_box is None:
            check_skew(version, pinned_kubernetes_version())

    def create(self, req: ClusterRequest, reaped: list[str]) -> Started:
        return _create(req, reaped)


@dataclass
class ExistingContext:
    """What one run's setup in an existing cluster shares, passed to each step as kind passes its actions an
    ActionContext: the request, and what each step made (None until it ran)."""

    req: ClusterRequest
    reaped: list[str]
    kubeconfig: Path
    at: str                              # the kubeconfig and context, as messages name the cluster
    timings: dict[str, float] = field(default_factory=dict)
    api: k8s.ApiClient | None = None     # connect
    version: str = ""                    # connect: the cluster's Kubernetes version
    core: Any = None                     # connect: its CoreV1Api
    bins: Binaries | None = None         # pinned binaries
    dir: RunDir | None = None            # run folder
    journal: Journal | None = None       # run folder: every change outside a test's namespace, to undo
    node_objs: dict[str, dict[str, Any]] = field(default_factory=dict)  # the definition's nodes, as found
    extra: tuple[str, ...] = ()          # the cluster's other nodes
    backend: ExistingBackend | None = None  # nodes as defined
    cluster: Cluster | None = None       # nodes as defined


def _create(req: ClusterRequest, reaped: list[str]) -> Started:
    assert req.kubeconfig is not None
    c = ExistingContext(req, reaped, req.kubeconfig.resolve(), where(req.kubeconfig, req.context))
    create_in_steps([
        (f"existing: {c.at}", connect_to),
        ("pinned binaries", pinned_binaries),
        ("run folder and its journal", run_folder),
        ("existing: no other run or scheduler in the way", nobody_else),
        ("existing: the definition's nodes", find_nodes),
        ("existing: nodes as defined", nodes_as_defined),
        (f"existing: namespace {SYSTEM_NAMESPACE}", system_namespace),
        ("existing: the scheduler under test", scheduler_under_test),
        ("first sync of every scheduler", lambda c: first_sync(made(c.cluster, "the cluster"), c.req, 60)),
        ("run info", lambda c: write_info(made(c.dir, "the run folder").path, c.req, made(c.cluster, "the cluster"))),
    ], c, rollback, c.timings)
    return Started(cluster=made(c.cluster, "the cluster"), stop=lambda: stop(c), run_dir=made(c.dir, "").path,
                   reaped=reaped)


# -- steps -------------------------------------------------------------------
def connect_to(c: ExistingContext) -> None:
    c.api, c.version = connect(c.kubeconfig, c.req.context)
    c.core = k8s.CoreV1Api(c.api)
    check_gates(c)


def check_gates(c: ExistingContext) -> None:
    """A definition's feature gates and API versions must be what the cluster already runs: schedgate
    does not change the gates of a cluster it did not make. One line names the first that differs. What
    a scenario's ``requires:`` turned on (spec.features) is not the definition's word: such a file skips
    when the cluster lacks it (pytest_plugin.items)."""
    gates = c.req.definition.gates
    if not gates:
        return
    api = made(c.api, "the API client")
    have = read_feature_gates(api) if gates.feature_gates else {}
    for name, want in gates.feature_gates:
        if have.get(name, None) != want and f"featureGates.{name}" not in gates.needed:
            state = "not at all" if name not in have else ("on" if have[name] else "off")
            raise SchedgateError(f"{c.at}: the API server has feature gate {name} {state}; "
                                 f"{gates.source} asks for it {'on' if want else 'off'} (featureGates.{name}), "
                                 "and schedgate does not change the gates of a cluster it did not make")
    for api_version, want in gates.runtime_config:
        if (not api_version.startswith("api/") and f"runtimeConfig.{api_version}" not in gates.needed
                and serves(api, api_version) != want):
            raise SchedgateError(f"{c.at}: the API server {'does not serve' if want else 'serves'} "
                                 f"{api_version}; {gates.source} asks for it {'on' if want else 'off'} "
                                 f"(runtimeConfig.{api_version})")


def pinned_binaries(c: ExistingContext) -> None:
    c.bins = binaries(c.req.bin_dir)


def run_folder(c: ExistingContext) -> None:
    c.dir = RunDir.create(keep=c.req.keep)  # kept (schedgate up): `schedgate down` puts it back
    c.journal = Journal(c.dir.path / JOURNAL, str(c.kubeconfig), c.req.context)
    c.journal.save()
    out = c.dir.path / "pki"
    done = subprocess.run([str(made(c.bins, "the pinned binaries").pki), str(out)], capture_output=True, text=True)
    if done.returncode != 0:
        raise ComponentError(f"schedgate-pki failed: {done.stderr.strip()}")


def nobody_else(c: ExistingContext) -> None:
    ns = ignore_not_found(read_json, c.core.read_namespace, SYSTEM_NAMESPACE)
    if ns is not None:
        owner = ((ns.get("metadata") or {}).get("annotations") or {}).get(RUN_ANNOTATION, "unknown")
        raise SchedgateError(f"{c.at}: namespace {SYSTEM_NAMESPACE} exists (run {owner}): another "
                             "schedgate run uses this cluster, or one that died on another machine left it; "
                             f"once no run is using it: kubectl delete namespace {SYSTEM_NAMESPACE}")
    if ignore_not_found(read_json, c.core.read_node, SYNC_NODE) is not None:
        raise SchedgateError(f"{c.at}: node {SYNC_NODE} exists: a schedgate run uses this cluster or left "
                             f"it; once none does: kubectl delete node {SYNC_NODE}")
    config = c.req.scheduler_config
    lease = config.lease_name
    held = ignore_not_found(read_json, k8s.CoordinationV1Api(c.api).read_namespaced_lease, lease,
                            LEASE_NAMESPACE)
    spec = (held or {}).get("spec") or {}
    renewed = spec.get("renewTime")
    age = (datetime.now(UTC) - datetime.fromisoformat(renewed.replace("Z", "+00:00"))).total_seconds() \
        if renewed else float("inf")
    live = bool(spec.get("holderIdentity")) and age < float(spec.get("leaseDurationSeconds") or 15) * 2
    if c.req.scheduler_running and not live:
        raise SchedgateError(f"--scheduler-running: no scheduler holds lease {LEASE_NAMESPACE}/{lease} in the "
                             f"cluster of {c.at} (the lease of profile {config.profile_names[0]}); start "
                             "yours with leaderElection.resourceName set to it, or let schedgate start one")
    if not c.req.scheduler_running and live:
        raise SchedgateError(
            f"{c.at}: lease {LEASE_NAMESPACE}/{lease} is held by {spec['holderIdentity']} (renewed "
            f"{age:.0f}s ago): a scheduler for profile(s) {config.profile_names} already runs in this cluster; "
            "stop it, test the profile under another name, or test that one with --scheduler-running")


def find_nodes(c: ExistingContext) -> None:
    have = {n["metadata"]["name"]: n for n in read_json(c.core.list_node).get("items") or []}
    specs = c.req.definition.nodes()
    missing = [s.name for s in specs if s.name not in have]
    if missing:
        raise SchedgateError(f"{c.req.definition.source}: nodes {', '.join(missing)} are not in the cluster "
                             f"of {c.at} (it has {', '.join(sorted(have)[:8]) or 'none'}"
                             f"{', ...' if len(have) > 8 else ''}); the definition must name its nodes")
    c.node_objs = {s.name: have[s.name] for s in specs}
    # The cluster's other nodes (a control plane, a made cluster's sync node, nodes outside the definition)
    # count in the schedulers' "0/N nodes are available".
    c.extra = tuple(sorted(set(have) - set(c.node_objs) - {SYNC_NODE}))


def system_namespace(c: ExistingContext) -> None:
    journal = made(c.journal, "the journal")
    journal.will_create("Namespace", SYSTEM_NAMESPACE)
    journal.sweep_namespaces = True
    journal.namespaces_before = [n["metadata"]["name"] for n in read_json(c.core.list_namespace).get("items") or []]
    journal.save()
    c.core.create_namespace({"metadata": {
        "name": SYSTEM_NAMESPACE, "labels": {MANAGED_BY: "schedgate"},
        "annotations": {RUN_ANNOTATION: made(c.dir, "the run folder").path.name}}})
    journal.will_create("Node", SYNC_NODE)  # the cache barrier's node, made at the first sync


def nodes_as_defined(c: ExistingContext) -> None:
    """Before anything else is written: a node not as defined and closed to edits stops the run here."""
    api, run, bins = made(c.api, "the API client"), made(c.dir, "the run folder"), made(c.bins, "the pinned binaries")
    journal = made(c.journal, "the journal")
    kinds: dict[str, NodeBackend] = {}
    for name, n in c.node_objs.items():
        kubelet = bool(((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion"))
        kinds[name] = KubeletNodes(c.core, "existing") if kubelet else ApiOnlyNodes(c.core)
        if not kubelet:
            journal.status_owned.append(name)
    editable = frozenset(name for name, n in c.node_objs.items()
                         if ((n.get("metadata") or {}).get("labels") or {}).get(EDITABLE_LABEL) == "true")
    real_gpus = frozenset(name for name, n in c.node_objs.items()
                          if parse_quantity(((n.get("status") or {}).get("capacity") or {}).get(GPU, "0")) > 0)
    nodes = ExistingNodes(c.core, journal, kinds, editable, real_gpus, c.req.allow_fake_gpus)
    kubelets = [n for name, n in c.node_objs.items() if Ability.ADMITS_PODS in kinds[name].abilities]
    ca = cluster_ca(api, run.path / "cluster-ca.crt")
    c.backend = ExistingBackend(
        api=api, core=c.core, run=run, bins=bins,
        default_binary=Path(c.req.scheduler_binary or bins.kube_scheduler), server=str(api.configuration.host),
        ca=ca, journal=journal, nodes=nodes, pod_image=_pod_image(kubelets) if kubelets else PLACEHOLDER_IMAGE,
        resource_scale=resource_scale(c.req.definition, smallest_allocatable(kubelets)) if kubelets else {},
        extra_nodes=c.extra)
    c.cluster = Cluster(definition=c.req.definition, kubeconfig=c.kubeconfig, api=api,
                        kubernetes_version=c.version, backend=c.backend, timings=c.timings,
                        sync_node=SYNC_NODE, system_namespace_name=SYSTEM_NAMESPACE)
    try:
        c.cluster.nodes.reset()
    except NotHere as e:
        raise SchedgateError(f"{c.req.definition.source}: {e} — or describe the node as it is") from None


def scheduler_under_test(c: ExistingContext) -> None:
    config, backend = c.req.scheduler_config, made(c.backend, "the nodes as defined")
    if not c.req.scheduler_running:
        backend.start_scheduler(config, None, None, len(c.req.definition.nodes()))
        return
    running = RunningScheduler(name=config.lease_name, config=config, config_path=Path(config.source))
    for p in config.profile_names:
        backend.schedulers[p] = running

# -- the one rollback, and the end ----------------------------------------------
def rollback(c: ExistingContext) -> None:
    if c.dir is None:
        return  # nothing was written yet
    c.dir.keep = False  # a run that did not come up is not kept, even for `schedgate up`
    _undo(c)


def stop(c: ExistingContext) -> None:
    if not c.req.keep:
        _undo(c)


def _undo(c: ExistingContext) -> None:
    """Stop the schedulers schedgate started, put back every journaled change, remove the run folder;
    a Ctrl-C meanwhile waits until that is done (a half-undone cluster is what it must not leave)."""
    with interrupts_deferred():
        if c.backend is not None:
            for s in distinct(c.backend.schedulers):
                if isinstance(s, (SchedulerProcess, BlackBoxProcess)):  # not one the user runs
                    s.stop()
        if c.journal is not None and c.api is not None:
            done = c.journal.undo(c.api)
            log.info("existing: put back %d change(s) in the cluster of %s", len(done), c.at)
        if c.dir is not None:
            (c.dir.path / JOURNAL).unlink(missing_ok=True)
            c.dir.close()


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
