"""The cache barrier's admission policy: its probes are never bound to a node of the run, and no other pod to
the sync node.

A kube-scheduler's probe asks for a resource no node has, so a profile with NodeResourcesFit never binds it;
where the cluster has devices, the probe fits its marker once its scheduler has seen the newest devices, and
the bind is what it comes to. A ValidatingAdmissionPolicy on bindings (``pods/binding``) refuses, in the API
server itself, any bind of a probe (a pod ``sync-*`` of schedgate's namespace) but to the sync node, and any
bind to the sync node (a black box's, made only where one runs) of a pod outside that namespace: the
scheduler sees its bind refused with this policy's name, which is the barrier's signal where it binds.
"""

from __future__ import annotations

from typing import Any

import kubernetes.client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.cluster.node_kinds import MERGE
from schedgate.errors import ComponentError
from schedgate.kube.poll import poll_until

POLICY = "schedgate-sync-node"
PROBES = "sync-"  # the names of the barrier's probes begin so


def guard_sync_node(api: Any, node: str, namespace: str) -> None:
    """Create the policy and its binding (an existing one is kept), and wait until it is in force."""
    install_sync_guard(api, node, namespace)
    # The API server loads a new policy from its informer, a moment later (0.4-0.9 s here): wait until it
    # denies a (dry-run) binding of some pod to the node, so that no test runs before it holds.
    core: Any = k8s.CoreV1Api(api)
    probe = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "schedgate-guard-probe"},
             "target": {"apiVersion": "v1", "kind": "Node", "name": node}}

    def denied() -> bool:
        try:
            core.create_namespaced_binding("default", probe, dry_run="All", _preload_content=False)
        except ApiException as e:
            return POLICY in (e.body or "")
        return False

    poll_until(denied, f"the admission policy {POLICY} in force", 30, interval=0.1, error=ComponentError)


def install_sync_guard(api: Any, node: str, namespace: str) -> None:
    """Create the policy and its binding, without waiting: a provider does it early in a cluster's start,
    so that the policy is loaded by the time the first barrier checks it."""
    admission: Any = k8s.AdmissionregistrationV1Api(api)  # takes plain dict manifests, which its stubs do not model
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["pods/binding", "bindings"]}]},  # a scheduler's bind, and the older bindings API
            "validations": [{
                "expression": f"object.target.name == '{node}' ? request.namespace == '{namespace}' : "
                              f"!(request.namespace == '{namespace}' && request.name.startsWith('{PROBES}'))",
                "message": f"schedgate's cache-barrier probes (pods {PROBES}* of namespace {namespace}) are never "
                           f"bound but to {node}, schedgate's own node, and no other pod is"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY},
        "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
    }
    for create, replace, body in (
            (admission.create_validating_admission_policy, admission.patch_validating_admission_policy, policy),
            (admission.create_validating_admission_policy_binding, admission.patch_validating_admission_policy_binding,
             binding)):
        try:
            create(body)
        except ApiException as e:
            if e.status != 409:
                raise
            replace(POLICY, body, _content_type=MERGE)  # a cluster reused across runs: the policy as written here
