"""A scheduler under test that is not kube-scheduler: any program that binds pods through the API.

A ``BlackBoxScheduler`` file says how to start it and what it offers; schedgate
knows nothing else of it. It gets its own identity and least-privilege RBAC,
a kubeconfig and a name, and proves it is up by binding a probe pod (or by a
readiness URL first, if it has one)::

    apiVersion: schedgate.io/v1alpha1
    kind: BlackBoxScheduler
    schedulerName: pool-scheduler        # default: the profile it stands in for
    command: [./my-scheduler, --kubeconfig={kubeconfig}, --name={name}, --lease={lease}]
    readyURL: http://127.0.0.1:{port}/healthz
    provides: [messages]

Placeholders: ``{kubeconfig}`` (its own, also in ``$KUBECONFIG``), ``{name}``
(the schedulerName), ``{lease}`` and ``{namespace}`` (the lease it may hold),
``{port}`` (a free port on 127.0.0.1) and ``{run}`` (the run folder).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgate.errors import DefinitionError

API_VERSION = "schedgate.io/v1alpha1"
KIND = "BlackBoxScheduler"
PLACEHOLDERS = ("kubeconfig", "name", "lease", "namespace", "port", "run")
FIELDS = ("apiVersion", "kind", "schedulerName", "command", "readyURL", "provides", "startTimeout", "env")

# What a scenario may need beyond the common ground every scheduler under test is held to: binding by
# spec.schedulerName, resources, node selector and required node affinity, taints and tolerations,
# cordoned nodes, requeueing when the cluster changes, PodScheduled=False with reason Unschedulable or
# SchedulerError, Scheduled and FailedScheduling events by its name. A black box offers what it lists
# in ``provides``; a scenario that needs anything else is skipped with the reason.
CAPABILITIES: Mapping[str, str] = {
    "kube-scheduler": "configures kube-scheduler itself (its profiles, plugins or extenders)",
    "metrics": "reads kube-scheduler's /metrics",
    "messages": "matches kube-scheduler's wording of why a pod did not fit",
    "scoring": "expects the node a profile's scores choose among feasible ones",
    "preemption": "expects lower-priority pods to be preempted",
    "inter-pod-affinity": "uses inter-pod affinity or anti-affinity",
    "topology-spread": "uses topology spread constraints",
    "host-ports": "uses host ports",
    "logs": "counts kube-scheduler's log lines (scheduling attempts)",
    "scheduling-gates": "expects kube-scheduler's SchedulingGated condition on a gated pod",
    "devices": "uses DRA devices (ResourceClaims)",
}
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class BlackBox:
    """How to run a black-box scheduler (see the module's docstring)."""

    command: tuple[str, ...]
    source: str
    ready_url: str | None = None
    provides: frozenset[str] = frozenset()
    start_timeout: float = 60.0
    env: Mapping[str, str] = field(default_factory=dict)
    named: bool = True  # the file set schedulerName (else it takes the name of what it stands in for)

    @property
    def program(self) -> str:
        return self.command[0]

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command with every placeholder filled in (checked when the file was read)."""
        return [fill(a, values) for a in self.command]

    def url(self, values: Mapping[str, str]) -> str | None:
        return fill(self.ready_url, values) if self.ready_url else None

    def lacks(self, needs: Mapping[str, str]) -> list[tuple[str, str]]:
        """The needs (capability -> where it comes from) this scheduler does not offer, sorted."""
        return sorted((cap, why) for cap, why in needs.items() if cap in CAPABILITIES and cap not in self.provides)


def fill(text: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def is_black_box(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND


def parse_black_box(doc: dict[str, Any], source: str) -> tuple[str | None, BlackBox]:
    """The schedulerName (None when the file leaves it to what it stands in for) and the black box."""
    for key in doc:
        if key not in FIELDS:
            raise DefinitionError(source, str(key), f"unknown field (known: {', '.join(FIELDS)})")
    if doc.get("apiVersion") != API_VERSION:
        raise DefinitionError(source, "apiVersion", f"must be {API_VERSION}, got {doc.get('apiVersion')!r}")
    name = doc.get("schedulerName")
    if name is not None and not (isinstance(name, str) and re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?",
                                                                         name)):
        raise DefinitionError(source, "schedulerName", f"must be a DNS name, got {name!r}")
    command = doc.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        raise DefinitionError(source, "command", "required: the program and its arguments, a list of non-empty "
                                                 "strings, e.g. [./my-scheduler, --kubeconfig={kubeconfig}]")
    for i, arg in enumerate(command):
        _check_placeholders(source, f"command[{i}]", arg)
    url = doc.get("readyURL")
    if url is not None:
        if not isinstance(url, str) or not re.match(r"https?://", url):
            raise DefinitionError(source, "readyURL", f"must be an http:// or https:// URL, got {url!r}")
        _check_placeholders(source, "readyURL", url)
    provides = doc.get("provides") or []
    if not isinstance(provides, list):
        raise DefinitionError(source, "provides", f"must be a list of capabilities, got {provides!r}")
    for i, cap in enumerate(provides):
        if not isinstance(cap, str) or cap not in CAPABILITIES or cap == "kube-scheduler":
            known = ", ".join(c for c in CAPABILITIES if c != "kube-scheduler")
            raise DefinitionError(source, f"provides[{i}]", f"unknown capability {cap!r} (known: {known})")
    timeout = doc.get("startTimeout", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 600:
        raise DefinitionError(source, "startTimeout", f"must be seconds from 1 to 600, got {timeout!r}")
    env = doc.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise DefinitionError(source, "env", "must map variable names to strings")
    return name, BlackBox(command=tuple(command), source=source, ready_url=url, provides=frozenset(provides),
                          start_timeout=float(timeout), env=dict(env), named=name is not None)


def _check_placeholders(source: str, where: str, text: str) -> None:
    for m in _PLACEHOLDER.finditer(text):
        if m.group(1) not in PLACEHOLDERS:
            raise DefinitionError(source, where, f"unknown placeholder {{{m.group(1)}}} (known: "
                                                 f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)})")


def resolve_program(program: str, base: Path, built: Mapping[str, Path]) -> str:
    """The program to run: a name schedgate builds (``schedgate-pool-scheduler``, its mutants) is the
    cached binary; a path with a slash is relative to the file's folder; anything else is looked up in
    ``$PATH`` when it starts."""
    if program in built:
        return str(built[program])
    if "/" in program:
        return str((base / program).resolve())
    return program
