"""The sync node's last line of defence: an admission policy that refuses to bind a scenario's pod there.

The sync node has no room (allocatable ``pods`` 0), so a profile with NodeResourcesFit never chooses it. A
profile without that plugin might; and a scheduler that binds there changes the verdict of the test it
runs in. In a cluster schedgate made, a ValidatingAdmissionPolicy on bindings (``pods/binding``) refuses any binding
to the sync node of a pod outside schedgate's own namespace, in the API server itself: whatever the
scheduler decides, no such pod is ever bound there (the scheduler sees its bind refused, with this
policy's message, and tries again).
"""

from __future__ import annotations

from typing import Any

import kubernetes.client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.errors import ComponentError
from schedgate.kube.poll import poll_until

POLICY = "schedgate-sync-node"


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
                "expression": f"object.target.name != '{node}' || request.namespace == '{namespace}'",
                "message": f"{node} is schedgate's own node (its cache barrier's): only schedgate's probes, in "
                           f"namespace {namespace}, may be bound there"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY},
        "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
    }
    for create, body in ((admission.create_validating_admission_policy, policy),
                         (admission.create_validating_admission_policy_binding, binding)):
        try:
            create(body)
        except ApiException as e:
            if e.status != 409:  # already there: a cluster reused across runs
                raise
