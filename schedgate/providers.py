"""Cluster providers: how a definition and a scheduler under test become a running cluster.

Scenario code never knows which provider runs it. ``local`` (processes on
loopback, API-only nodes) is built; ``kind`` and ``existing`` plug in here.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kubernetes import config as kube_config

from schedgate.cluster import Cluster
from schedgate.definitions import ClusterDefinition
from schedgate.errors import SchedgateError, ToolchainError
from schedgate.local import LocalControlPlane, under_test_user
from schedgate.procs import RunDir, reap_orphans
from schedgate.rbac import grant, user_subject
from schedgate.schedconfig import SchedulerConfig
from schedgate.scheduler import SchedulerProcess, distinct
from schedgate.toolchain import Binaries, ensure_binaries, pinned_kubernetes_version

PROVIDERS = ("local", "kind")


@dataclass(frozen=True)
class ClusterRequest:
    provider: str
    definition: ClusterDefinition
    scheduler_config: SchedulerConfig
    scheduler_binary: Path | None = None
    bin_dir: Path | None = None
    keep: bool = False
    scheduler_image: str | None = None  # kind: an image already built (default: one made from the binary)
    reuse: bool = False  # kind: keep one cluster across runs, recreated when the definition or image drifted


@dataclass
class Started:
    cluster: Cluster
    stop: Callable[[], None]
    run_dir: Path
    reaped: list[str]


INFO = "info.json"


def write_info(run: Path, req: ClusterRequest, cluster: Cluster) -> None:
    """What ``schedgate status`` shows about a run: provider, definition, scheduler, how to reach it."""
    info = {"provider": req.provider, "cluster": req.definition.name, "definition": req.definition.source,
            "scheduler_config": req.scheduler_config.source, "profiles": sorted(cluster.schedulers),
            "kubeconfig": str(cluster.kubeconfig), "kubernetes": cluster.kubernetes_version,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kept": req.keep}
    (run / INFO).write_text(json.dumps(info, indent=1) + "\n")


def read_info(run: Path) -> dict[str, Any]:
    try:
        info: dict[str, Any] = json.loads((run / INFO).read_text())
    except (OSError, ValueError):
        return {}
    return info


def binaries(bin_dir: Path | None, out: TextIO | None) -> Binaries:
    if bin_dir is None:
        return ensure_binaries(out)
    bins = Binaries(Path(bin_dir), pinned_kubernetes_version())
    missing = bins.missing(mutants=False)
    if missing:
        raise ToolchainError(f"--bin-dir {bin_dir}: missing executable {', '.join(missing)}")
    return bins


def start_cluster(req: ClusterRequest, out: TextIO | None = sys.stderr) -> Started:
    if req.provider not in PROVIDERS:
        raise SchedgateError(f"--provider {req.provider!r}: unknown provider (known: {', '.join(PROVIDERS)})")
    if req.scheduler_binary is not None and not Path(req.scheduler_binary).is_file():
        raise SchedgateError(f"--scheduler-binary {req.scheduler_binary}: no such file")
    reaped = reap_orphans()
    if req.provider == "kind":
        from schedgate.kind import start_kind

        started: Started = start_kind(req, reaped, out, reuse=req.reuse)
        return started
    bins = binaries(req.bin_dir, out)
    return _start_local(req, bins, reaped, out)


def _start_local(req: ClusterRequest, bins: Binaries, reaped: list[str], out: TextIO | None) -> Started:
    def say(msg: str) -> None:
        if out is not None:
            print(f"schedgate: {msg} ({time.monotonic() - t0:.1f}s)", file=out, flush=True)

    t0 = time.monotonic()
    run = RunDir.create(keep=req.keep)
    cp = LocalControlPlane(bins=bins, run=run, under_test=req.scheduler_config,
                           scheduler_binary=Path(req.scheduler_binary or bins.kube_scheduler))
    try:
        say(f"starting a local control plane for cluster {req.definition.name!r} in {run.path}")
        cp.start_api()
        say("etcd and kube-apiserver ready")
        api = kube_config.new_client_from_config(config_file=str(cp.admin_kubeconfig))  # type: ignore[no-untyped-call]
        lease = req.scheduler_config.lease_name
        grant(api, lease, user_subject(under_test_user(lease)), lease, req.scheduler_config.shared_pools)

        def launch(config: SchedulerConfig, binary: Path | None, server: str | None = None) -> SchedulerProcess:
            lease = config.lease_name
            grant(api, lease, user_subject(under_test_user(lease)), lease, config.shared_pools)
            return cp.add_scheduler(config, Path(binary or req.scheduler_binary or bins.kube_scheduler), server)

        cluster = Cluster(provider="local", definition=req.definition, kubeconfig=cp.admin_kubeconfig, api=api,
                          kubernetes_version=bins.kubernetes_version, schedulers=cp.schedulers,
                          components=cp.components, launcher=launch, retirer=cp.remove_scheduler,
                          api_only_nodes=True, timings=cp.timings, apiserver_restarter=cp.restart_api,
                          api_endpoint=("127.0.0.1", cp.api_port))
        t_nodes = time.monotonic()
        cluster.apply_nodes()
        cp.timings["nodes"] = time.monotonic() - t_nodes
        say(f"{len(req.definition.nodes())} nodes registered; starting controllers and schedulers")
        cp.start_schedulers()
        cp.timings["first-sync"] = cluster.sync_schedulers()
        cp.timings["total"] = time.monotonic() - t0
        say(f"schedulers ready: {', '.join(s.name for s in distinct(cluster.schedulers))}")
        write_info(run.path, req, cluster)
    except BaseException:
        cp.stop()
        run.keep = False
        run.close()
        raise

    def stop() -> None:
        if not req.keep:
            cp.stop()
        run.close()

    return Started(cluster=cluster, stop=stop, run_dir=run.path, reaped=reaped)
