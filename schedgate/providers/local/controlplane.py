"""The local provider: a real control plane as processes on loopback.

etcd, kube-apiserver (TLS, RBAC), kube-controller-manager (the controllers
scenarios need, workload controllers included) and kube-scheduler processes,
built from the pinned modules, bound to 127.0.0.1 on free ports. Nodes are API
objects. Without a node agent nothing heartbeats, so no node-lifecycle
controller runs to mark them NotReady behind a test's back; with one
(``nodeAgent: {kind: kwok}``, :mod:`schedgate.spec.agent`) kwok renews every
node's Lease and runs its pods, and the node lifecycle and taint eviction
controllers run too. Starts in seconds and needs no Docker.
"""

from __future__ import annotations

import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from kubernetes import client as k8s

from schedgate.cluster.audit import SCHEDULER_GROUP, audit_flags
from schedgate.errors import ComponentError
from schedgate.kube.api import new_client
from schedgate.runtime.blackbox import BlackBoxProcess
from schedgate.runtime.health import free_port, probe, tls_context, wait_ready
from schedgate.runtime.procs import Proc, RunDir
from schedgate.runtime.scheduler import Scheduler, SchedulerProcess, distinct, forget
from schedgate.runtime.toolchain import Binaries
from schedgate.spec.agent import NodeAgent
from schedgate.spec.features import minor_of
from schedgate.spec.gates import Gates
from schedgate.spec.schedconfig import SchedulerConfig, default_scheduler_config
from schedgate.spec.shipped import shipped

ADMIN = "admin"
DEFAULT_SCHEDULER_USER = "system:kube-scheduler"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
ETCD_CLIENT = "etcd-client"  # the API server's certificate for etcd
# kube-apiserver's post-start hooks that sleep 1 s before their first try (wait.Poll, v1.35-v1.37)
HOOKS_THAT_WAIT = ("rbac/bootstrap-roles", "scheduling/bootstrap-system-priority-classes")
# The controllers scenarios need: default ServiceAccounts in new namespaces,
# namespace deletion, owner-reference cleanup, claims, and the workload
# controllers that make pods (and the disruption controller, whose PodDisruptionBudget
# status preemption reads). Node lifecycle is left out on purpose: API-only nodes
# have no heartbeat; a node agent brings it (AGENT_CONTROLLERS).
CONTROLLERS = ("serviceaccount-controller", "namespace-controller", "garbage-collector-controller",
               "resourceclaim-controller", "deployment-controller", "replicaset-controller",
               "daemonset-controller", "job-controller", "statefulset-controller", "disruption-controller",
               "clusterrole-aggregation-controller")  # the schedulers' plugin roles (providers.rbac)
AGENT_CONTROLLERS = ("node-lifecycle-controller", "taint-eviction-controller", "pod-garbage-collector-controller")
# Controllers a feature gate brings, by the first minor whose kube-controller-manager knows them: with
# GenericWorkload, the PodGroup's finalizer is removed once no pod uses it (without it a deleted group
# stays Terminating and its claims stay reserved for it).
GATED_CONTROLLERS = {"GenericWorkload": ((1, 36), ("podgroup-protection-controller",))}
AGENT = "kwok"
AGENT_USER = "schedgate-node-agent"
STAGES = "go/kwok/stages.yaml"  # what kwok does to pods (go/kwok/ pins the kwok)


Launched = SchedulerProcess | BlackBoxProcess  # what this control plane runs as a scheduler


def under_test_user(lease: str) -> str:
    return f"schedgate:scheduler:{lease}"


@dataclass
class LocalControlPlane:
    bins: Binaries
    run: RunDir
    under_test: SchedulerConfig
    scheduler_binary: Path
    nodes: int = 0  # the definition's size: the schedulers' log flags depend on it (schedlog.log_flags)
    gates: Gates = field(default_factory=Gates)  # the definition's featureGates and runtimeConfig, for each
    agent: NodeAgent | None = None  # the definition's nodeAgent
    kwok: Path | None = None  # its binary (built before anything starts)
    timings: dict[str, float] = field(default_factory=dict)
    procs: dict[str, Proc] = field(default_factory=dict)
    schedulers: dict[str, Launched] = field(default_factory=dict)
    api_port: int = 0
    etcd_port: int = 0
    _api: k8s.ApiClient | None = None

    @property
    def pki(self) -> Path:
        return self.run.path / "pki"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.run.path / "admin.kubeconfig"

    def api_client(self) -> k8s.ApiClient:
        """A client of the API server as schedgate's admin (one per control plane)."""
        if self._api is None:
            self._api = new_client(self.admin_kubeconfig)
        return self._api

    def start_api(self) -> None:
        """PKI, etcd and kube-apiserver, ready to serve."""
        t0 = time.monotonic()
        lease = self.under_test.lease_name
        identities = [f"{ADMIN}=schedgate-admin/system:masters",
                      f"kube-scheduler={DEFAULT_SCHEDULER_USER}",
                      f"kube-controller-manager={CONTROLLER_MANAGER_USER}",
                      f"under-test={under_test_user(lease)}/{SCHEDULER_GROUP}",
                      f"{ETCD_CLIENT}=schedgate:etcd-client",
                      *([f"{AGENT}={AGENT_USER}/system:masters"] if self.agent else [])]
        self._pki(identities)
        self.timings["pki"] = time.monotonic() - t0

        # etcd serves TLS only and asks for a client certificate of the run's CA, on loopback: another user
        # of the machine reaches neither its data nor its peer port (the keys live in the 0700 run folder).
        etcd_port, peer_port = free_port(), free_port()
        pki = self.pki
        tls = [f"--cert-file={pki / 'serving.crt'}", f"--key-file={pki / 'serving.key'}", "--client-cert-auth",
               f"--trusted-ca-file={pki / 'ca.crt'}", f"--peer-cert-file={pki / 'serving.crt'}",
               f"--peer-key-file={pki / 'serving.key'}", "--peer-client-cert-auth",
               f"--peer-trusted-ca-file={pki / 'ca.crt'}"]
        etcd = self.run.start("etcd", [
            str(self.bins.etcd), "--name=schedgate", f"--data-dir={self.run.path / 'etcd'}",
            f"--listen-client-urls=https://127.0.0.1:{etcd_port}",
            f"--advertise-client-urls=https://127.0.0.1:{etcd_port}",
            f"--listen-peer-urls=https://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=https://127.0.0.1:{peer_port}",
            f"--initial-cluster=schedgate=https://127.0.0.1:{peer_port}",
            # One member: its raft ticks only decide how soon it elects itself at start (0.5-0.9 s with the
            # default 100/1000 ms, 0.05-0.14 s here; kube-apiserver serves once its storage answers).
            *tls, "--unsafe-no-fsync", "--log-level=warn", "--heartbeat-interval=10", "--election-timeout=100",
        ])
        self.procs["etcd"] = etcd
        self.etcd_port = etcd_port

        # kube-apiserver starts beside etcd, not after it: its own start (the API groups, their storage and
        # OpenAPI) takes longer than etcd's, and its etcd clients connect once etcd listens. Each wait below
        # still fails at once, naming the component, if that process exits.
        self.api_port = free_port()
        api = self.run.start("kube-apiserver", [
            str(self.bins.kube_apiserver),
            f"--etcd-servers=https://127.0.0.1:{etcd_port}", f"--etcd-cafile={pki / 'ca.crt'}",
            f"--etcd-certfile={pki / f'{ETCD_CLIENT}.crt'}", f"--etcd-keyfile={pki / f'{ETCD_CLIENT}.key'}",
            "--anonymous-auth=false",
            "--bind-address=127.0.0.1", f"--secure-port={self.api_port}", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={pki / 'serving.crt'}", f"--tls-private-key-file={pki / 'serving.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/16",
            "--endpoint-reconciler-type=none", f"--cert-dir={self.run.path / 'apiserver'}",
            "--profiling=false",
            # A namespace's pods (and a test's delete-all) go in parallel, not one by one: 300 pods took
            # 1.6-2.6 s with the default single worker.
            "--delete-collection-workers=4",
            *self.gates.feature_gates_flag(), *self.gates.runtime_config_flag(), *audit_flags(self.run.path),
        ])
        self.procs["kube-apiserver"] = api
        etcd_ctx = tls_context(pki / "ca.crt", pki / f"{ETCD_CLIENT}.crt", pki / f"{ETCD_CLIENT}.key")
        self.timings["etcd"] = wait_ready(etcd, probe("127.0.0.1", etcd_port, "/health", etcd_ctx), 30,
                                          f"GET https://127.0.0.1:{etcd_port}/health")
        # Serving: ready but for the two post-start hooks that wait a fixed second before they write the
        # bootstrap PriorityClasses and RBAC roles (wait.Poll: an interval before the first try). What needs
        # only the admin (system:masters) is done inside that second; wait_api_ready() before the schedulers.
        path = "/readyz?" + "&".join(f"exclude=poststarthook/{hook}" for hook in HOOKS_THAT_WAIT)
        self.timings["kube-apiserver serving"] = self.timings["etcd"] + wait_ready(  # from its start, beside etcd's
            api, probe("127.0.0.1", self.api_port, path, self._admin_tls()), 60,
            f"GET https://127.0.0.1:{self.api_port}{path}")
        for ident in (ADMIN, "kube-scheduler", "kube-controller-manager", "under-test",
                      *([AGENT] if self.agent else [])):
            self.write_kubeconfig(ident)

    def wait_api_ready(self) -> None:
        """``/readyz`` whole: the bootstrap roles the schedulers and controllers run under exist."""
        api = self.procs["kube-apiserver"]
        wait_ready(api, probe("127.0.0.1", self.api_port, "/readyz", self._admin_tls()), 60,
                   f"GET https://127.0.0.1:{self.api_port}/readyz")

    def _admin_tls(self) -> ssl.SSLContext:
        return tls_context(self.pki / "ca.crt", self.pki / f"{ADMIN}.crt", self.pki / f"{ADMIN}.key")

    def launch_controllers(self) -> tuple[Proc, Callable[[], bool]]:
        # After /readyz, not inside the hooks' second: it polls kube-apiserver's /healthz once a second before it
        # starts its controllers (WaitForAPIServer), and a first poll that fails costs it that second.
        port = free_port()
        minor = minor_of(self.bins.kubernetes_version) or (0, 0)
        controllers = CONTROLLERS + (AGENT_CONTROLLERS if self.agent else ()) + tuple(
            c for gate, (since, names) in GATED_CONTROLLERS.items() if self.gates.on(gate) and minor >= since
            for c in names)
        kcm = self.run.start("kube-controller-manager", [
            str(self.bins.kube_controller_manager),
            f"--kubeconfig={self.kubeconfig('kube-controller-manager')}",
            f"--controllers={','.join(controllers)}", "--leader-elect=false",
            *(self.agent.controller_flags() if self.agent else []),
            # Each controller under its own ServiceAccount and bootstrap role: as system:kube-controller-manager
            # the namespace controller may not delete a namespace's pods, and namespaces never finish deleting.
            "--use-service-account-credentials=true",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--tls-cert-file={self.pki / 'serving.crt'}", f"--tls-private-key-file={self.pki / 'serving.key'}",
            *self.gates.feature_gates_flag(),
        ])
        self.procs["kube-controller-manager"] = kcm
        return kcm, probe("127.0.0.1", port, "/healthz", tls_context(self.pki / "ca.crt"))

    def launch_agent(self) -> tuple[Proc, Callable[[], bool]] | None:
        """kwok on every node (the sync node too: the node lifecycle controller would taint it otherwise)."""
        if self.agent is None or self.kwok is None:
            return None
        port = free_port()
        proc = self.run.start(AGENT, [
            str(self.kwok), f"--kubeconfig={self.kubeconfig(AGENT)}", f"--config={shipped(STAGES)}",
            "--manage-all-nodes=true", f"--node-lease-duration-seconds={self.agent.lease_seconds()}",
            f"--server-address=127.0.0.1:{port}",
        ])
        self.procs[AGENT] = proc
        return proc, probe("127.0.0.1", port, "/healthz", None)

    def scheduler(self, config: SchedulerConfig, binary: Path, identity: str, lease: str,
                  nodes: int | None = None) -> Launched:
        if config.black_box is not None:
            box = BlackBoxProcess(name=lease, config=config, kubeconfig=self.kubeconfig(identity), run=self.run,
                                  built=self.bins.programs)
            for profile in config.profile_names:
                self.schedulers[profile] = box
            return box
        effective = config.effective(kubeconfig=str(self.kubeconfig(identity)), lease=lease)
        path = effective.write(self.run.path / f"{lease}.config.yaml")
        proc = SchedulerProcess(name=lease, config=config, effective=effective, config_path=path, binary=binary,
                                port=free_port(), pki=self.pki, run=self.run, nodes=self.nodes if nodes is None
                                else nodes, extra_args=self.gates.feature_gates_flag())
        for profile in config.profile_names:
            self.schedulers[profile] = proc
        return proc

    def start_schedulers(self) -> list[Scheduler]:
        """Start the default scheduler, the one under test and the controllers in parallel."""
        t0 = time.monotonic()
        default = self.scheduler(default_scheduler_config(), self.bins.kube_scheduler, "kube-scheduler",
                                 "kube-scheduler")
        under_test = self.scheduler(self.under_test, self.scheduler_binary, "under-test",
                                    self.under_test.lease_name)
        kcm, kcm_ready = self.launch_controllers()
        agent = self.launch_agent()
        for s in (default, under_test):
            s.launch()
        for s in (default, under_test):
            s.wait_healthy()
        wait_ready(kcm, kcm_ready, 60, "GET /healthz")
        if agent is not None:
            self.timings[AGENT] = wait_ready(*agent, 60, "GET /healthz")
        self.timings["schedulers+controllers"] = time.monotonic() - t0
        return [default, under_test]

    def add_scheduler(self, config: SchedulerConfig, binary: Path, server: str | None = None,
                      nodes: int | None = None) -> Scheduler:
        """Start one more scheduler, under its own user, while the cluster runs.

        ``server`` (``https://host:port``) replaces the API server's address in its kubeconfig, e.g. a
        proxy in front of it; the serving certificate is still checked, under its own name. ``nodes``: how many
        it will see (its log flags), the definition's size if not said."""
        lease = config.lease_name
        identity = "sched-" + "".join(c if c.isalnum() or c == "-" else "-" for c in lease)
        self._pki([f"{identity}={under_test_user(lease)}/{SCHEDULER_GROUP}"])
        self.write_kubeconfig(identity, server)
        proc = self.scheduler(config, binary, identity, lease, nodes)
        proc.start()
        return proc

    def restart_api(self) -> float:
        """Kill kube-apiserver and start it again with the same flags (port, etcd, certificates).

        Returns the seconds from the stop to ``/readyz`` answering again. Clients (schedulers,
        controllers, the harness) keep their addresses: they reconnect, re-list and re-watch.
        """
        old = self.procs["kube-apiserver"]
        t0 = time.monotonic()
        old.kill()  # as a crash would: no graceful drain, the shortest outage
        api = self.run.start("kube-apiserver", old.argv)
        self.procs["kube-apiserver"] = api
        wait_ready(api, probe("127.0.0.1", self.api_port, "/readyz", self._admin_tls()), 60,
                   f"GET https://127.0.0.1:{self.api_port}/readyz after a restart")
        return time.monotonic() - t0

    def remove_scheduler(self, proc: Scheduler) -> None:
        proc.stop()
        forget(self.schedulers, proc)

    def _pki(self, identities: list[str]) -> None:
        out = subprocess.run([str(self.bins.pki), str(self.pki), *identities], capture_output=True, text=True)
        if out.returncode != 0:
            raise ComponentError(f"schedgate-pki failed: {out.stderr.strip()}")

    def kubeconfig(self, identity: str) -> Path:
        return self.run.path / f"{identity}.kubeconfig"

    def write_kubeconfig(self, identity: str, server: str | None = None) -> None:
        pki = self.pki
        cluster: dict[str, str] = {"server": server or f"https://127.0.0.1:{self.api_port}",
                                   "certificate-authority": str(pki / "ca.crt")}
        if server:
            cluster["tls-server-name"] = "localhost"  # a SAN of the serving certificate, whatever the proxy's address
        doc = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "schedgate", "cluster": cluster}],
            "users": [{"name": identity, "user": {
                "client-certificate": str(pki / f"{identity}.crt"), "client-key": str(pki / f"{identity}.key")}}],
            "contexts": [{"name": "schedgate", "context": {"cluster": "schedgate", "user": identity}}],
            "current-context": "schedgate",
        }
        path = self.kubeconfig(identity)
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)

    def components(self) -> list[Proc]:
        """Every process whose death fails a test: control plane and schedulers."""
        return list(self.procs.values()) + [s.proc for s in distinct(self.schedulers) if s.proc]

    def stop(self) -> None:
        """Stop schedulers, then the control plane, newest first. With etcd or the API server gone nothing
        can shut down gracefully (a scheduler would try to release its lease): then it is SIGKILL at once."""
        lost = any(not p.alive() for p in self.procs.values())
        for s in distinct(self.schedulers):
            if lost:
                s.kill()
            else:
                s.stop()
        for p in reversed(list(self.procs.values())):
            p.kill() if lost else p.stop()
