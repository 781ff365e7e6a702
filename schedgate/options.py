"""Command-line options and ini settings, turned into a validated cluster request."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from schedgate.definitions import load_definition
from schedgate.errors import SchedgateError
from schedgate.providers import PROVIDERS, ClusterRequest
from schedgate.schedconfig import SchedulerConfig, load_scheduler_config

PROJECT = Path(__file__).resolve().parent.parent
DEFAULT_CLUSTER = "clusters/inference.yaml"
DEFAULT_SCHEDULER_CONFIG = "clusters/profiles/gpu-packing-scheduler.yaml"
EXTENDER_KINDS = ("hard", "soft")


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("schedgate", "schedgate: scheduler end-to-end scenarios")
    g.addoption("--provider", choices=PROVIDERS, default=os.environ.get("SCHEDGATE_PROVIDER") or None,
                help="where the cluster runs: local (processes on loopback, no Docker) or kind (Docker). "
                     "Default: $SCHEDGATE_PROVIDER, else local")
    g.addoption("--cluster", metavar="FILE", default=None,
                help=f"cluster definition (default: ini schedgate_cluster, else {DEFAULT_CLUSTER})")
    g.addoption("--scheduler-config", metavar="FILE", default=None,
                help="KubeSchedulerConfiguration (or a 'profiles:' fragment) under test "
                     f"(default: ini schedgate_scheduler_config, else {DEFAULT_SCHEDULER_CONFIG})")
    g.addoption("--scheduler-binary", metavar="FILE", default=None,
                help="kube-scheduler binary under test (default: the one built from go/ at the pinned version)")
    g.addoption("--bin-dir", metavar="DIR", default=None,
                help="prebuilt etcd, kube-apiserver, kube-controller-manager, kube-scheduler, schedgate-pki "
                     "(default: build them from go/ into the cache)")
    g.addoption("--slots-scheduler-config", metavar="FILE", default=None,
                help="scheduler configuration enabling the NetworkSlots plugin with fault injection "
                     "(default: clusters/profiles/network-slots.yaml)")
    g.addoption("--shared-slots-scheduler-config", metavar="FILE", default=None,
                help="scheduler configuration with two NetworkSlots profiles sharing one slot pool, each run "
                     "in its own process (default: clusters/profiles/shared-slots.yaml)")
    g.addoption("--tenant-scheduler-config", metavar="FILE", default=None,
                help="scheduler configuration enabling the TenantFilter plugin "
                     "(default: clusters/profiles/tenant-filter.yaml)")
    for kind in EXTENDER_KINDS:
        g.addoption(f"--{kind}-extender-config", metavar="FILE", default=None,
                    help=f"scheduler configuration whose extender is a {kind} dependency "
                         f"(default: clusters/profiles/extender-{kind}.yaml)")
    g.addoption("--artifacts", metavar="DIR", default="artifacts",
                help="where each test's artifacts folder goes (pods, nodes, events, logs, metrics, "
                     "placement.html). Default: artifacts")
    g.addoption("--artifacts-on", choices=("failure", "always", "never"), default="failure",
                help="when to write a test's artifacts (default: failure)")
    g.addoption("--scheduler-image", metavar="IMAGE", default=None,
                help="kind: a scheduler image in the local Docker engine to load and run "
                     "(default: an image made from --scheduler-binary or the pinned build)")
    g.addoption("--kubernetes-version", metavar="VERSION", default=os.environ.get("SCHEDGATE_KUBERNETES_VERSION"),
                help="the Kubernetes version the run must use (e.g. v1.37.2); a checkout pinned to another "
                     "version (go/go.mod) is refused, not silently run. Default: $SCHEDGATE_KUBERNETES_VERSION, "
                     "else the pin")
    g.addoption("--reuse-cluster", action="store_true",
                help="kind: keep one cluster across runs; recreated if its definition or node image drifted")
    g.addoption("--keep-cluster", action="store_true",
                help="leave the cluster running after the run and print how to reach it")
    parser.addini("schedgate_cluster", "default cluster definition file", default=None)
    parser.addini("schedgate_scheduler_config", "default scheduler configuration file", default=None)


def _resolve(config: pytest.Config, option: str, ini: str, default: str) -> Path:
    value = config.getoption(option)
    if value:
        p = Path(value)
        return p if p.is_absolute() else Path(config.invocation_params.dir) / p
    ini_value = config.getini(ini)
    if ini_value:
        p = Path(str(ini_value))
        base = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
        return p if p.is_absolute() else base / p
    return PROJECT / default


def project_path(value: str | Path) -> Path:
    """A file named on the command line: as given if it exists, else relative to schedgate's project folder."""
    p = Path(value)
    if p.is_absolute() or p.exists() or not (PROJECT / p).exists():
        return p
    return PROJECT / p


def _shown(p: Path) -> str:
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def request_from(config: pytest.Config) -> ClusterRequest:
    """Read and validate every schedgate option; a problem raises SchedgateError in one line."""
    cached = config.stash.get(_REQUEST, None)
    if cached is not None:
        return cached
    cluster_file = _resolve(config, "cluster", "schedgate_cluster", DEFAULT_CLUSTER)
    sched_file = _resolve(config, "scheduler_config", "schedgate_scheduler_config", DEFAULT_SCHEDULER_CONFIG)
    req = make_request(cluster_file, sched_file, provider=config.getoption("provider") or "local",
                       binary=config.getoption("scheduler_binary"), bin_dir=config.getoption("bin_dir"),
                       keep=bool(config.getoption("keep_cluster")))
    req = replace(req, scheduler_image=config.getoption("scheduler_image"),
                  reuse=bool(config.getoption("reuse_cluster")))
    check_kubernetes_version(config.getoption("kubernetes_version"))
    for kind in EXTENDER_KINDS:
        extender_config(config, kind)  # a bad file fails before anything starts
    slots_config(config)
    tenant_config(config)
    shared_slots_config(config)
    config.stash[_REQUEST] = req
    return req


_REQUEST = pytest.StashKey[ClusterRequest]()


def check_kubernetes_version(wanted: str | None) -> None:
    """Refuse a run whose asked-for Kubernetes version is not the one this checkout builds."""
    if not wanted:
        return
    from schedgate.toolchain import pinned_kubernetes_version

    pinned = pinned_kubernetes_version()
    if wanted.lstrip("v") != pinned.lstrip("v"):
        raise SchedgateError(f"--kubernetes-version {wanted}: this checkout builds Kubernetes {pinned} (go/go.mod); "
                             f"pin {wanted} with go/hack/pin-kubernetes.sh {wanted.lstrip('v')} (the node image "
                             "and every binary follow the pin)")


def make_request(cluster_file: Path, sched_file: Path, *, provider: str = "local", binary: str | None = None,
                 bin_dir: str | None = None, keep: bool = False) -> ClusterRequest:
    """A validated cluster request (pytest options and the ``schedgate`` command both end here)."""
    definition = load_definition(_shown(cluster_file))
    sched = load_scheduler_config(_shown(sched_file))
    if provider not in PROVIDERS:
        raise SchedgateError(f"--provider {provider!r}: unknown provider (known: {', '.join(PROVIDERS)})")
    if binary and not Path(binary).is_file():
        raise SchedgateError(f"--scheduler-binary {binary}: no such file")
    if bin_dir and not Path(bin_dir).is_dir():
        raise SchedgateError(f"--bin-dir {bin_dir}: no such folder")
    return ClusterRequest(provider=provider, definition=definition, scheduler_config=sched,
                          scheduler_binary=Path(binary).resolve() if binary else None,
                          bin_dir=Path(bin_dir).resolve() if bin_dir else None, keep=keep)


def extra_config(config: pytest.Config, option: str, default: str) -> SchedulerConfig:
    """A scheduler configuration that a scenario starts beside the session's (validated)."""
    path = config.getoption(option)
    p = Path(path) if path else PROJECT / default
    if not p.is_absolute():
        p = Path(config.invocation_params.dir) / p
    return load_scheduler_config(_shown(p))


def extender_config(config: pytest.Config, kind: str) -> SchedulerConfig:
    """The configuration for the ``hard`` or ``soft`` extender scheduler."""
    return extra_config(config, f"{kind}_extender_config", f"clusters/profiles/extender-{kind}.yaml")


def slots_config(config: pytest.Config) -> SchedulerConfig:
    """The configuration enabling the NetworkSlots plugin with fault injection."""
    return extra_config(config, "slots_scheduler_config", "clusters/profiles/network-slots.yaml")


def shared_slots_config(config: pytest.Config) -> SchedulerConfig:
    """Two NetworkSlots profiles sharing one slot pool, to be run one per process."""
    return extra_config(config, "shared_slots_scheduler_config", "clusters/profiles/shared-slots.yaml")


def tenant_config(config: pytest.Config) -> SchedulerConfig:
    """The configuration enabling the TenantFilter plugin."""
    return extra_config(config, "tenant_scheduler_config", "clusters/profiles/tenant-filter.yaml")


def role_config(config: pytest.Config, role: str) -> SchedulerConfig:
    """A scheduler configuration by the role a scenario file names (see schedgate.scenario.ROLES)."""
    if role == "network-slots":
        return slots_config(config)
    if role == "tenant-filter":
        return tenant_config(config)
    kind = role.removeprefix("extender-")
    if kind in EXTENDER_KINDS:
        return extender_config(config, kind)
    raise SchedgateError(f"unknown scheduler role {role!r} "
                         "(known: network-slots, tenant-filter, extender-hard, extender-soft)")
