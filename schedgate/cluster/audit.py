"""The API server's own record of who removed which pod: its audit log, as a cluster schedgate made writes it.

A scheduler decides what evidence of a preemption it leaves (the victim's "Preempted" event, its
DisruptionTarget condition); the API server records every deletion and eviction whatever the scheduler
says. The policy (:data:`POLICY`) keeps only those, at the Metadata level (who, what, when; no bodies), so
the log stays small however many pods a run makes. :func:`removals` reads them back for a namespace, and
:func:`by_schedulers` keeps those a scheduler's identity made: each such pod is a preemption's victim,
which the invariants judge (:mod:`schedgate.scenarios.invariants`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

AUDIT_LOG = "audit.log"
# The identities a cluster schedgate made gives its schedulers, by group where their names are made later: the
# started ones' certificates on local (SCHEDULER_GROUP), kube-system's ServiceAccounts on kind.
SCHEDULER_GROUP = "schedgate:schedulers"
SCHEDULER_GROUPS = (SCHEDULER_GROUP, "system:serviceaccounts:kube-system")
_STATUS = {"verbs": ["patch", "update"], "resources": [{"group": "", "resources": ["pods/status"]}]}
POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted", "Panic"],
    "rules": [
        {"level": "Metadata", "verbs": ["delete", "deletecollection"],
         "resources": [{"group": "", "resources": ["pods"]}]},
        {"level": "Metadata", "verbs": ["create"], "resources": [{"group": "", "resources": ["pods/eviction"]}]},
        # A scheduler's and the controller manager's status writes, with what they wrote: the DisruptionTarget
        # condition a preemption or a taint eviction gives its victim among them.
        {"level": "Request", "users": ["system:kube-scheduler", "system:kube-controller-manager"], **_STATUS},
        {"level": "Request", "userGroups": list(SCHEDULER_GROUPS), **_STATUS},
        {"level": "None"},
    ],
}
# Their names: the default scheduler's, each started one's on local (schedgate:scheduler:<lease>), and on kind the
# ServiceAccounts of the one under test (a static pod) and of a black box (schedgate.providers.identity).
SCHEDULER_USERS = ("system:kube-scheduler",)
SCHEDULER_USER_PREFIXES = ("schedgate:scheduler:", "system:serviceaccount:kube-system:schedgate-scheduler-",
                           "system:serviceaccount:kube-system:sched-")
READ_LIMIT = 64 << 20  # the log's last 64 MiB: a reused kind cluster's grows across runs


def policy_text() -> str:
    return yaml.safe_dump(POLICY, sort_keys=False)


def audit_args(policy: str, log: str) -> list[tuple[str, str]]:
    """kube-apiserver's flags (name, value) to write the audit log to ``log`` by the policy file ``policy``.
    Blocking: an entry is written before the request's answer, so a deletion the harness has seen is in the log.
    Rotated at 100 MB, one old file kept (a reused cluster's log outlives runs; a run reads the newest)."""
    return [("audit-policy-file", policy), ("audit-log-path", log), ("audit-log-format", "json"),
            ("audit-log-mode", "blocking"), ("audit-log-maxsize", "100"), ("audit-log-maxbackup", "1")]


def audit_flags(folder: Path) -> list[str]:
    """kube-apiserver's flags to write the audit log into ``folder`` (the policy written there too)."""
    policy = folder / "audit-policy.yaml"
    policy.write_text(policy_text())
    return [f"--{k}={v}" for k, v in audit_args(str(policy), str(folder / AUDIT_LOG))]


@dataclass(frozen=True)
class Removal:
    """A pod the API server deleted or evicted at someone's request."""

    pod: str  # namespace/name
    how: str  # "deleted" or "evicted"
    user: str
    at: str  # the API server's time of the answer (RFC 3339)


def removals(lines: Iterable[str], namespace: str) -> list[Removal]:
    """Every pod of ``namespace`` the log says was deleted or evicted, with a success answer, in order."""
    out: list[Removal] = []
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue  # a line cut short where the log is read while written
        ref, status = e.get("objectRef") or {}, e.get("responseStatus") or {}
        if e.get("stage") != "ResponseComplete" or ref.get("resource") != "pods" \
                or ref.get("namespace") != namespace or not ref.get("name") or int(status.get("code") or 0) >= 300:
            continue
        sub = ref.get("subresource") or ""
        how = "deleted" if e.get("verb") == "delete" and not sub else \
            "evicted" if e.get("verb") == "create" and sub == "eviction" else ""
        if how:
            out.append(Removal(f"{namespace}/{ref['name']}", how, str((e.get("user") or {}).get("username") or ""),
                               str(e.get("stageTimestamp") or "")))
    return out


def disruptions(lines: Iterable[str], namespace: str) -> dict[str, tuple[str, str]]:
    """The pods of ``namespace`` (namespace/name) a logged identity gave a DisruptionTarget condition (a successful
    status write that names it), as a preemption or a taint eviction does before it deletes: pod -> (the
    condition's reason, who wrote it), the last such write of each."""
    out: dict[str, tuple[str, str]] = {}
    for line in lines:
        if "DisruptionTarget" not in line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        ref, status = e.get("objectRef") or {}, e.get("responseStatus") or {}
        if ref.get("subresource") != "status" or ref.get("namespace") != namespace or not ref.get("name") \
                or int(status.get("code") or 0) >= 300:
            continue
        conditions = ((e.get("requestObject") or {}).get("status") or {}).get("conditions") or []
        for c in conditions:
            if isinstance(c, dict) and c.get("type") == "DisruptionTarget":
                out[f"{namespace}/{ref['name']}"] = (str(c.get("reason") or ""),
                                                     str((e.get("user") or {}).get("username") or ""))
    return out


def marked(lines: Iterable[str], namespace: str) -> set[str]:
    """The pods of ``namespace`` a scheduler's identity gave a DisruptionTarget condition."""
    return {pod for pod, (_, user) in disruptions(lines, namespace).items() if is_scheduler(user)}


def is_scheduler(user: str) -> bool:
    return user in SCHEDULER_USERS or user.startswith(SCHEDULER_USER_PREFIXES)


def by_schedulers(found: Iterable[Removal]) -> list[Removal]:
    """The removals a scheduler's identity made: preemptions, whatever the scheduler reported of them."""
    return [r for r in found if is_scheduler(r.user)]
