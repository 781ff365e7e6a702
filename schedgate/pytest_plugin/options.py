"""Every schedgate option, declared once: the pytest options and the ``schedgate`` command's read the same
table (:data:`OPTIONS`), and :func:`request_from` turns them into a validated cluster request."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _pytest.stash import StashKey  # pytest.StashKey, without importing pytest into `schedgate check`

from schedgate.errors import SchedgateError
from schedgate.providers import PROVIDERS, ClusterRequest
from schedgate.runtime.binaries import check_given
from schedgate.runtime.modbuild import ensure_scheduler_module
from schedgate.runtime.pins import PIN_ENV, select
from schedgate.runtime.toolchain import go_module_dir
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition
from schedgate.spec.files import check_executable
from schedgate.spec.gates import parse_gate_option
from schedgate.spec.roles import ROLES, role
from schedgate.spec.schedconfig import SchedulerConfig, load_scheduler_config
from schedgate.spec.shipped import shipped

if TYPE_CHECKING:
    import pytest

def worker_id(config: pytest.Config) -> str:
    """``gw0``, ``gw1``, … on an xdist worker; empty in a run without ``-n`` — also in a pytest that a
    worker's test starts as a subprocess (it inherits the worker's environment, not its role)."""
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput.get("workerid", "")) if isinstance(workerinput, dict) else ""


DEFAULT_CLUSTER = "clusters/inference.yaml"
DEFAULT_SCHEDULER_CONFIG = "clusters/profiles/gpu-packing-scheduler.yaml"
EXTENDER_KINDS = ("hard", "soft")


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    metavar: str | None = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    action: str | None = None
    cli: bool = False  # also an option of `schedgate up`
    env: str | None = None  # the environment variable that sets its default, read when the option is added

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def kwargs(self) -> dict[str, Any]:
        default = (os.environ.get(self.env) or self.default) if self.env else self.default
        out: dict[str, Any] = {"help": self.help, "default": default}
        if self.action:
            out["action"] = self.action
        else:
            out["metavar"] = self.metavar
        if self.choices:
            out["choices"] = self.choices
        return out


OPTIONS: tuple[Option, ...] = (
    Option("--provider", "where the cluster runs: local (processes on loopback, no Docker), kind (Docker) or "
           "existing (a cluster you run: --kubeconfig). Default: $SCHEDGATE_PROVIDER, else local", choices=PROVIDERS,
           env="SCHEDGATE_PROVIDER", cli=True),
    Option("--cluster", f"cluster definition (default: ini schedgate_cluster, else {DEFAULT_CLUSTER})",
           metavar="FILE", cli=True),
    Option("--scheduler-config", "KubeSchedulerConfiguration (or a 'profiles:' fragment) under test "
           f"(default: ini schedgate_scheduler_config, else {DEFAULT_SCHEDULER_CONFIG})", metavar="FILE", cli=True),
    Option("--scheduler-binary", "kube-scheduler binary under test (default: the one built from go/ at the pinned "
           "version)", metavar="FILE", cli=True),
    Option("--scheduler-module", "an out-of-tree scheduler under test, built from its Go module: a local folder "
           "(its main package) or MODULE@VERSION[/cmd/path], with the module's own go.mod (of the pinned Kubernetes "
           "minor); cached like the pinned binaries. Instead of --scheduler-binary", metavar="SOURCE", cli=True),
    Option("--bin-dir", "prebuilt etcd, kube-apiserver, kube-controller-manager, kube-scheduler, schedgate-pki "
           "(default: build them from go/ into the cache; with $KUBEBUILDER_ASSETS set, envtest's asset folder, "
           "etcd and kube-apiserver come from there). A binary that does not report the pinned version is refused "
           "before anything starts", metavar="DIR", cli=True),
    *(Option(r.option, f"{r.help} (default: {r.default})"
             + (f"; scenario files start it with startScheduler: {{config: {r.name}}}" if r.in_scenarios else ""),
             metavar="FILE") for r in ROLES),
    Option("--artifacts", "where each test's artifacts folder goes (pods, nodes, events, logs, metrics, "
           "placement.html). Default: artifacts", metavar="DIR", default="artifacts"),
    Option("--artifacts-on", "when to write a test's artifacts (default: failure)",
           choices=("failure", "always", "never"), default="failure"),
    Option("--explain", "print each written artifacts folder's explain.txt at the end: per pod, per node, the "
           "filter that rejected it or each score plugin's score, from the schedulers' own logs (also: schedgate repro "
           "FILE --explain)", action="store_true"),
    Option("--scheduler-image", "kind: a scheduler image in the local Docker engine to load and run "
           "(default: an image made from --scheduler-binary or the pinned build)", metavar="IMAGE", cli=True),
    Option("--kubernetes-version", "the pinned Kubernetes minor or version the run builds and runs (1.36, v1.36.3: "
           "go/go.mod or go/pins/); one no pin has is refused, not silently run. Default: "
           "$SCHEDGATE_KUBERNETES_VERSION, else go/go.mod's", metavar="VERSION",
           env="SCHEDGATE_KUBERNETES_VERSION", cli=True),
    Option("--feature-gates", "feature gates for every component of every cluster the run starts, over the "
           "definitions' own featureGates: NAME=true,NAME=false (checked against the pinned version's list)",
           metavar="GATES", cli=True),
    Option("--reuse-cluster", "kind: keep one cluster across runs; recreated if its definition or node image "
           "drifted", action="store_true", cli=True),
    Option("--kubeconfig", "existing: the kubeconfig of the cluster to run in (its nodes are the definition's; "
           "see --cluster)", metavar="FILE", cli=True),
    Option("--context", "existing: the kubeconfig context (default: its current-context)", metavar="NAME", cli=True),
    Option("--allow-fake-gpus", "existing: let tests change the GPU count of nodes that report real GPUs",
           action="store_true", cli=True),
    Option("--scheduler-running", "existing: the scheduler under test already runs in the cluster (your own "
           "deployment, holding the lease named after its first profile); schedgate starts none",
           action="store_true", cli=True),
    Option("--keep-cluster", "leave the cluster running after the run; the summary prints the KUBECONFIG to export "
           "and the command that stops it",
           action="store_true"),
    Option("--baseline-scheduler-binary", "performance scenarios: the kube-scheduler the one under test is "
           "measured against (default: the pinned build)", metavar="FILE"),
    Option("--baseline-scheduler-config", "performance scenarios: the baseline's configuration, its profile "
           "of the same name or its only one (default: the profile under test without out-of-tree plugins, or "
           "as the scenario says)", metavar="FILE"),
)


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("schedgate", "schedgate: scheduler end-to-end scenarios")
    for o in OPTIONS:
        g.addoption(o.flag, **o.kwargs())
    parser.addini("schedgate_cluster", "default cluster definition file (when --cluster is not given)", default=None)
    parser.addini("schedgate_scheduler_config", "default scheduler configuration file (when --scheduler-config is "
                  "not given)", default=None)
    parser.addini("schedgate_scenario", "a scenario file whose own cluster and scheduler the session runs (what "
                  "schedgate repro sets; --cluster and --scheduler-config still win)", default=None)


def add_cli_options(ap: argparse.ArgumentParser) -> None:
    """The options ``schedgate up`` shares with pytest (same names, choices and help)."""
    for o in OPTIONS:
        if o.cli:
            ap.add_argument(o.flag, **o.kwargs())


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
    return shipped(default)


def project_path(value: str | Path) -> Path:
    """A file named on the command line: as given if it exists, else schedgate's shipped file of that name."""
    p = Path(value)
    if p.is_absolute() or p.exists() or not shipped(p).exists():
        return p
    return shipped(p)


def _shown(p: Path) -> str:
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


# Options whose default is only how a run looks, not a sign that it uses schedgate.
_PRESENTATION = ("--artifacts", "--artifacts-on", "--explain")


def asked_for(config: pytest.Config) -> bool:
    """Whether this session names schedgate: one of its options on the command line or from its environment
    variables, or its ini settings. A session that does not is left alone until a test asks for a cluster."""
    for o in OPTIONS:
        if o.flag in _PRESENTATION:
            continue
        if config.getoption(o.dest) not in (None, False) and (
                config.getoption(o.dest) != o.default or (o.env and os.environ.get(o.env))):
            return True
    return bool(config.getini("schedgate_cluster") or config.getini("schedgate_scheduler_config")
                or config.getini("schedgate_scenario"))


def request_from(config: pytest.Config) -> ClusterRequest:
    """Read and validate every schedgate option; a problem raises SchedgateError in one line."""
    cached = config.stash.get(_REQUEST, None)
    if cached is not None:
        return cached
    check_kubernetes_version(config.getoption("kubernetes_version"))  # the pin a --scheduler-module builds against
    cluster_file = _resolve(config, "cluster", "schedgate_cluster", DEFAULT_CLUSTER)
    sched_file = _resolve(config, "scheduler_config", "schedgate_scheduler_config", DEFAULT_SCHEDULER_CONFIG)
    req = make_request(cluster_file, sched_file, provider=config.getoption("provider") or "local",
                       binary=config.getoption("scheduler_binary"), bin_dir=config.getoption("bin_dir"),
                       keep=bool(config.getoption("keep_cluster")), module=config.getoption("scheduler_module"))
    req = _scenario_own(config, req)
    gates = config.getoption("feature_gates")
    req = replace(req, scheduler_image=config.getoption("scheduler_image"),
                  reuse=bool(config.getoption("reuse_cluster")), worker=worker_id(config),
                  feature_gates=parse_gate_option(gates) if gates else (), **existing_options(config.getoption))
    if req.provider == "existing" and (req.worker or getattr(config.option, "numprocesses", None)):
        raise SchedgateError("--provider existing with pytest -n: the workers would edit the same nodes of one "
                             "cluster; run it without -n")
    check_given(req.bin_dir)
    for r in ROLES:
        role_config(config, r.name)  # a bad file fails before anything starts
    baseline_options(config)
    config.stash[_REQUEST] = req
    return req


_REQUEST = StashKey[ClusterRequest]()


def _scenario_own(config: pytest.Config, req: ClusterRequest) -> ClusterRequest:
    """With ini ``schedgate_scenario`` (``schedgate repro``), the session's cluster and scheduler are that file's
    own (its inline definition, its role's configuration), so the header names what runs and the file runs on
    the session's cluster; a ``--cluster`` or ``--scheduler-config`` given still wins."""
    path = config.getini("schedgate_scenario")
    if not path:
        return req
    scenario = load_scenario(project_path(path), req.scheduler_config if config.getoption("scheduler_config")
                             else None, lambda name: role_config(config, name))
    if not config.getoption("cluster"):
        req = replace(req, definition=scenario.definition)
    if scenario.scheduler is not None:
        req = replace(req, scheduler_config=stand_in(scenario.scheduler, DEFAULT_SCHEDULER_CONFIG))
    return req


def baseline_options(config: pytest.Config) -> tuple[SchedulerConfig | None, Path | None]:
    """``--baseline-scheduler-config`` (read) and ``--baseline-scheduler-binary`` (checked), if given."""
    binary, cfg = config.getoption("baseline_scheduler_binary"), config.getoption("baseline_scheduler_config")
    if binary:
        check_executable(binary, "--baseline-scheduler-binary")
    return (load_scheduler_config(_shown(project_path(cfg))) if cfg else None,
            Path(binary).resolve() if binary else None)


def check_kubernetes_version(wanted: str | None) -> None:
    """Select the pin the asked-for Kubernetes version names, for this process and those it starts (every binary
    and the node image follow it); a version no pin has is refused."""
    if not wanted:
        return
    pin = select(go_module_dir(), wanted)
    os.environ[PIN_ENV] = pin.version


def existing_options(get: Callable[[str], Any]) -> dict[str, Any]:
    """The existing provider's fields of a request, from pytest's or the command's options (by dest)."""
    kubeconfig = get("kubeconfig")
    return {"kubeconfig": Path(kubeconfig).resolve() if kubeconfig else None, "context": get("context") or None,
            "allow_fake_gpus": bool(get("allow_fake_gpus")), "scheduler_running": bool(get("scheduler_running"))}


def make_request(cluster_file: Path, sched_file: Path, *, provider: str = "local", binary: str | None = None,
                 bin_dir: str | None = None, keep: bool = False, module: str | None = None) -> ClusterRequest:
    """A validated cluster request (pytest options and the ``schedgate`` command both end here)."""
    definition = load_definition(_shown(cluster_file))
    sched = stand_in(load_scheduler_config(_shown(sched_file)), DEFAULT_SCHEDULER_CONFIG)
    if provider not in PROVIDERS:
        raise SchedgateError(f"--provider {provider!r}: unknown provider (known: {', '.join(PROVIDERS)})")
    if binary and module:
        raise SchedgateError("--scheduler-binary and --scheduler-module both name the scheduler under test: give one")
    if binary:
        check_executable(binary, "--scheduler-binary")
    if bin_dir and not Path(bin_dir).is_dir():
        raise SchedgateError(f"--bin-dir {bin_dir}: no such folder")
    if module:  # built last: every other option is checked before a build that may take minutes
        binary = str(ensure_scheduler_module(module, sys.stderr))
    if bin_dir and not Path(bin_dir).is_dir():
        raise SchedgateError(f"--bin-dir {bin_dir}: no such folder")
    return ClusterRequest(provider=provider, definition=definition, scheduler_config=sched,
                          scheduler_binary=Path(binary).resolve() if binary else None,
                          bin_dir=Path(bin_dir).resolve() if bin_dir else None, keep=keep)


def role_config(config: pytest.Config, name: str) -> SchedulerConfig:
    """The scheduler configuration of a role (``network-slots``, ``extender-hard``, ...): its option's file,
    else the shipped one."""
    try:
        r = role(name)
    except KeyError as e:
        raise SchedgateError(str(e.args[0])) from None
    path = config.getoption(r.dest)
    p = Path(path) if path else shipped(r.default)
    if not p.is_absolute():
        p = Path(config.invocation_params.dir) / p
    return stand_in(load_scheduler_config(_shown(p)), r.profile or r.default)


def stand_in(config: SchedulerConfig, replaced: str) -> SchedulerConfig:
    """A black box without a schedulerName of its own serves the profile it replaces: ``replaced``, or the
    first profile of the shipped file of that name."""
    if config.black_box is None or config.black_box.named:
        return config
    if replaced.endswith(".yaml"):
        replaced = load_scheduler_config(shipped(replaced)).profile_names[0]
    return config.standing_in_for(replaced)


def _role(name: str) -> Callable[[pytest.Config], SchedulerConfig]:
    def get(config: pytest.Config) -> SchedulerConfig:
        return role_config(config, name)

    get.__doc__ = f"The configuration of the {name} role ({role(name).option}, default {role(name).default})."
    return get


slots_config = _role("network-slots")
shared_slots_config = _role("shared-slots")
tenant_config = _role("tenant-filter")
gang_config = _role("gang")


def extender_config(config: pytest.Config, kind: str) -> SchedulerConfig:
    """The configuration for the ``hard`` or ``soft`` extender scheduler."""
    return role_config(config, f"extender-{kind}")
