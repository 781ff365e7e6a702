"""A running kind control plane given another definition's feature gates, API versions and node agent, in
place of a new cluster: a kind cluster takes a minute to make here, and under ``pytest -n`` a worker went on
to make one for each gate set its files named (six in a run of the whole suite).

kubeadm runs the API server, the controller manager and its own kube-scheduler as static pods; their
manifests are rewritten with the new flags and the kubelet restarts each. The step is done when each has
been replaced by a process started after the rewrite: the API server ready again and reporting the gates
(``kubernetes_feature_enabled``), the controller manager and kubeadm's scheduler holding their leader
Leases under a new identity. kwok is restarted with the agent's Lease duration. The scheduler under test is
the caller's to restart (its flags follow :attr:`KindBackend.scheduler_args`). A plane of kubelet workers is
not reconfigured: their kubelets were started with the old gates.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import yaml
from kubernetes import client as k8s

from schedgate.cluster.apiserver import start_and_gates
from schedgate.errors import ComponentError
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.poll import poll_until
from schedgate.providers.base import made
from schedgate.providers.kind.context import KindContext
from schedgate.providers.kind.kwok import QUIET, start_kwok
from schedgate.providers.kind.scheduler import StaticScheduler
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.gates import Gates

log = logging.getLogger("schedgate")

MANIFESTS = "/etc/kubernetes/manifests"
API_SERVER, CONTROLLERS, SCHEDULER = "kube-apiserver", "kube-controller-manager", "kube-scheduler"
RESTART_TIMEOUT = 120.0
NODE_LEASES = "kube-node-lease"
T = TypeVar("T")


def flags_of(gates: Gates, controller_flags: list[str]) -> dict[str, dict[str, str | None]]:
    """Each static pod's flags a plane key decides (:func:`schedgate.pytest_plugin.planes.plane_key`): the
    value to set, or ``None`` to leave the flag out."""
    def value(flag: list[str]) -> str | None:
        return flag[0].split("=", 1)[1] if flag else None

    gate_flag = {"feature-gates": value(gates.feature_gates_flag())}
    grace = {f[2:].split("=", 1)[0]: f.split("=", 1)[1] for f in controller_flags}
    # kind writes --runtime-config= (empty) when a definition sets no API versions: kept so, not removed.
    return {API_SERVER: {**gate_flag, "runtime-config": value(gates.runtime_config_flag()) or ""},
            CONTROLLERS: {**gate_flag, **grace}, SCHEDULER: dict(gate_flag)}


def with_flags(command: list[str], flags: dict[str, str | None]) -> list[str]:
    """``command`` with each ``--name=value`` of ``flags`` in place of its own (``None``: left out); a flag
    it lacks is added at the end, in ``flags``' order."""
    out: list[str] = []
    for arg in command:
        name = arg[2:].split("=", 1)[0] if arg.startswith("--") else None
        if name in flags:
            if flags[name] is not None:
                out.append(f"--{name}={flags[name]}")
            continue
        out.append(arg)
    have = {a[2:].split("=", 1)[0] for a in command if a.startswith("--")}
    return out + [f"--{k}={v}" for k, v in flags.items() if k not in have and v is not None]


def rewritten(manifest: str, flags: dict[str, str | None]) -> str | None:
    """The static pod's manifest with ``flags`` set in its one container's command, or ``None`` if that changes
    nothing (the kubelet then restarts nothing)."""
    doc: dict[str, Any] = yaml.safe_load(manifest)
    container = doc["spec"]["containers"][0]
    command = with_flags(list(container["command"]), flags)
    if command == container["command"]:
        return None
    container["command"] = command
    return yaml.safe_dump(doc, sort_keys=False)


def lease_holder(coord: k8s.CoordinationV1Api, name: str) -> str:
    lease = read_json(coord.read_namespaced_lease, name, "kube-system")
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def answers_ready(api: k8s.ApiClient) -> bool:
    try:
        return start_and_gates(api) is not None
    except Exception:  # noqa: BLE001 - not listening
        return False


def serving_since(api: k8s.ApiClient, since: float, want: tuple[tuple[str, bool], ...]) -> bool:
    """Whether an API server started at ``since`` or later answers ready and reports each gate of ``want`` as
    set (the old one may answer for a moment after its manifest changed)."""
    try:
        now = start_and_gates(api)
    except Exception:  # noqa: BLE001 - the API server is restarting: the connection refused until it listens
        return False
    return now is not None and now[0] >= since and all(now[1].get(name) == on for name, on in want)


def replane(read: Any, write_all: Any, kill: Any, api: k8s.ApiClient, definition: ClusterDefinition,
            controller_flags: list[str]) -> list[str]:
    """Give the control plane ``definition``'s gates and the controller flags of its node agent: ``read(path)``
    and ``write_all([(path, text)])`` reach the control-plane container, ``kill(pod)`` SIGKILLs a static pod's
    containers. Returns the static pods restarted.

    The kubelet stops the old API server with a SIGTERM and then waits up to the pod's grace period (30 s,
    kubeadm sets none) before it starts the new one; the old one stopped answering at once but ran on for the
    whole 30 s. So once it no longer answers ready (the kubelet has begun to stop it), it is killed. Its
    controller manager and scheduler, stopped while the API server was away, could not give up their Leases:
    those are deleted once it is back, so the new ones take them at once rather than after 15 s."""
    coord = k8s.CoordinationV1Api(api)
    wanted = flags_of(definition.gates, controller_flags)
    changes = [(name, text) for name in (API_SERVER, CONTROLLERS, SCHEDULER)
               if (text := rewritten(read(f"{MANIFESTS}/{name}.yaml").decode(), wanted[name])) is not None]
    if not changes:
        return []
    holders = {name: lease_holder(coord, name) for name, _ in changes if name != API_SERVER}
    since = math.floor(time.time())  # process_start_time_seconds: whole seconds
    write_all([(f"{MANIFESTS}/{name}.yaml", text) for name, text in changes])
    restarted = [name for name, _ in changes]
    log.info("kind: control plane given %s (%s restarted)", definition.gates.feature_gates_flag() or "no gates",
             ", ".join(restarted))
    if API_SERVER in restarted:
        poll_until(lambda: not answers_ready(api), "the old API server stopping (the kubelet took the new "
                   "manifest)", RESTART_TIMEOUT, error=ComponentError)
        kill(API_SERVER)
        poll_until(lambda: serving_since(api, since, definition.gates.feature_gates), "the API server back with "
                   f"{' '.join(definition.gates.feature_gates_flag()) or 'no feature gates'}", RESTART_TIMEOUT,
                   error=ComponentError)
    for name, before in holders.items():
        if lease_holder(coord, name) == before:  # its holder is gone
            ignore_not_found(coord.delete_namespaced_lease, name, "kube-system")
    for name, before in holders.items():
        def moved(name: str = name, before: str = before) -> bool:
            try:
                now = lease_holder(coord, name)
            except Exception:  # noqa: BLE001 - the API server may still be settling
                return False
            return bool(now) and now != before
        poll_until(moved, f"{name} restarted and leading (its Lease held anew)", RESTART_TIMEOUT,
                   error=ComponentError)
    return restarted


def release_node_leases(api: k8s.ApiClient) -> None:
    """Every node's Lease deleted: a kwok started anew holds none of them (its identity is its host name and a
    new UUID), and takes a Lease another holder renewed only once that expires, up to an hour for the quiet
    agent's (:data:`QUIET`); until then it plays no pod on the node. It makes each one again at once."""
    k8s.CoordinationV1Api(api).delete_collection_namespaced_lease(NODE_LEASES)


def handed_over(stop: Callable[[], None], release: Callable[[], None], start: Callable[[], T]) -> T:
    """The node agent replaced: the old one stopped (so it renews nothing more), the Leases it held released,
    the new one started."""
    stop()
    release()
    return start()


def reconfigure(c: KindContext, definition: ClusterDefinition) -> None:
    """The cluster of ``c`` given ``definition``'s gates and node agent (its nodes are the caller's to replace):
    the control plane's static pods, kubeadm's scheduler healthy again, kwok restarted if the agent's Lease
    changed, and every scheduler the backend starts from now on given the new gates."""
    backend, run = made(c.backend, "the scheduler under test"), made(c.dir, "the run folder")
    plane = backend.plane()
    restarted = replane(plane.read, plane.write_all,
                        lambda pod: plane.host.kill_pod_containers(plane.container, "kube-system", pod),
                        c.client(), definition,
                        (definition.agent or QUIET).controller_flags())
    default = backend.schedulers.get("default-scheduler")
    if SCHEDULER in restarted and isinstance(default, StaticScheduler):  # kubeadm's, a static pod
        default.wait_healthy()
    if repr(definition.agent) != repr(c.req.definition.agent) and c.agent is not None:
        c.agent = backend.agent = handed_over(
            c.agent.stop, lambda: release_node_leases(c.client()),
            lambda: start_kwok(run, made(c.kwok, "kwok"), c.kubeconfig, definition.agent))
    backend.scheduler_args = tuple(definition.gates.feature_gates_flag())
    c.req = replace(c.req, definition=definition)
