"""Least-privilege RBAC for a second scheduler.

The scheduler under test gets its own identity, bound to the upstream
``system:kube-scheduler`` and ``system:volume-scheduler`` roles, allowed to read
the authentication config in kube-system, and allowed to hold exactly one
lease: its own. (``system:kube-scheduler`` only grants the default
``kube-scheduler`` lease name.) A scheduler whose NetworkSlots plugin claims
slots in a shared pool may also get and update exactly those ConfigMaps (not
create, list or watch them, nor any other). A black-box scheduler (not kube-scheduler) gets less:
a ClusterRole of its own to read pods and nodes, bind pods, write their status and events, and hold
its lease; nothing else. The same objects serve a User (local provider, client certificate) or a
ServiceAccount (in-cluster).

What a scheduler's own plugins read (a custom resource, a ConfigMap of theirs) a scenario grants with a
ClusterRole labelled :data:`PLUGIN_ROLE_LABEL` ``"true"``: every scheduler schedgate starts has an aggregated
ClusterRole selecting that label (Kubernetes' ``aggregate-to-admin`` pattern), so the role's rules reach each of
them, whatever identity the provider gives it (a User, a ServiceAccount).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubernetes.client import ApiClient

from schedgate.kube.api import create_objects
from schedgate.spec.schedconfig import LEASE_NAMESPACE

# What a scheduler that binds through the API needs, and no more (a black box's ClusterRole).
BLACK_BOX_RULES = [
    {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
]
_META = {"labels": {"app.kubernetes.io/managed-by": "schedgate"}}
PLUGIN_ROLE_LABEL = "schedgate.io/aggregate-to-scheduler-under-test"
PLUGIN_ROLE_SUFFIX = ":plugins"  # each scheduler's aggregated ClusterRole: schedgate:<identity>:plugins


def scheduler_rbac(identity: str, subject: dict[str, str], lease: str,
                   claims: Iterable[tuple[str, str]] = (), black_box: bool = False) -> list[dict[str, Any]]:
    """Objects granting ``subject`` what a scheduler holding ``lease`` (and claiming in ``claims``) needs."""
    name = f"schedgate:{identity}"
    meta = _META
    if black_box:
        return [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": f"{name}:black-box", **meta}, "rules": BLACK_BOX_RULES},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": f"{name}:black-box", **meta},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{name}:black-box"},
             "subjects": [subject]},
            *_lease(name, subject, lease), *_plugins(name, subject)]
    by_ns: dict[str, list[str]] = {}
    for ns, cm in claims:
        by_ns.setdefault(ns, []).append(cm)
    claim_objs: list[dict[str, Any]] = []
    for ns, names in sorted(by_ns.items()):
        claim_objs += [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": f"{name}:slot-claims", "namespace": ns, **meta},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": sorted(names),
                        "verbs": ["get", "update"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": f"{name}:slot-claims", "namespace": ns, **meta},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{name}:slot-claims"},
             "subjects": [subject]},
        ]
    return claim_objs + [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"{name}:kube-scheduler", **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:kube-scheduler"},
         "subjects": [subject]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"{name}:volume-scheduler", **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:volume-scheduler"},
         "subjects": [subject]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{name}:auth-reader", "namespace": "kube-system", **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": "extension-apiserver-authentication-reader"},
         "subjects": [subject]},
        *_lease(name, subject, lease),
        *_plugins(name, subject),
    ]


def _plugins(name: str, subject: dict[str, str]) -> list[dict[str, Any]]:
    """An aggregated ClusterRole of every ClusterRole labelled :data:`PLUGIN_ROLE_LABEL`, bound to ``subject``."""
    role = f"{name}{PLUGIN_ROLE_SUFFIX}"
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role, **_META},
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {PLUGIN_ROLE_LABEL: "true"}}]}, "rules": []},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": role, **_META},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
         "subjects": [subject]},
    ]


def _lease(name: str, subject: dict[str, str], lease: str) -> list[dict[str, Any]]:
    """Create leases, and get and update exactly one: ``lease`` in kube-system."""
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": f"{name}:lease", "namespace": LEASE_NAMESPACE, **_META},
         "rules": [
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [lease],
              "verbs": ["get", "update"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{name}:lease", "namespace": LEASE_NAMESPACE, **_META},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{name}:lease"},
         "subjects": [subject]},
    ]


def grant(api: ApiClient, identity: str, subject: dict[str, str], lease: str,
          claims: Iterable[tuple[str, str]] = (), black_box: bool = False) -> None:
    """Create the objects of :func:`scheduler_rbac`; ones that already exist are kept."""
    create_objects(api, scheduler_rbac(identity, subject, lease, claims, black_box))


def user_subject(user: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}
