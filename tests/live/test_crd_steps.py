"""Custom resources on a running cluster: a scenario applies a CustomResourceDefinition from a file and an object of
its kind at once (the step waits until the API server serves the kind), changes it, grants the schedulers' plugins
reading it (a ClusterRole labelled for their aggregated roles), and leaves nothing behind: the CRD is gone when the
run closes, so the next file on the cluster may define it again."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from support import ROOT, load_text

from schedgate.errors import SchedgateError
from schedgate.providers.rbac import PLUGIN_ROLE_LABEL
from schedgate.scenarios.run import Run
from schedgate.spec.roles import role
from schedgate.spec.schedconfig import SchedulerConfig, load_scheduler_config

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: quotas.live.schedgate.io}
spec:
  group: live.schedgate.io
  scope: Namespaced
  names: {kind: Quota, plural: quotas}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {gpus: {type: integer}}}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


def schedulers_subjects(cluster) -> list[str]:
    """The user each scheduler schedgate started runs as, from its aggregated role's binding."""
    rbac = k8s.RbacAuthorizationV1Api(cluster.api)
    out = []
    for b in rbac.list_cluster_role_binding(label_selector="app.kubernetes.io/managed-by=schedgate").items:
        if b.metadata.name.endswith(":plugins"):
            for s in b.subjects:
                out.append(f"system:serviceaccount:{s.namespace}:{s.name}" if s.kind == "ServiceAccount" else s.name)
    return out


def may(cluster, user: str, verb: str, resource: str) -> bool:
    review = k8s.AuthorizationV1Api(cluster.api).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": {"group": "live.schedgate.io", "resource": resource,
                                                      "verb": verb}}})
    return bool(review.status.allowed)


def no_roles(name: str) -> SchedulerConfig:
    raise AssertionError(f"the scenario names no role ({name})")


def test_a_crd_and_an_object_of_its_kind_apply_at_once_and_the_crd_is_gone_after_the_run(cluster, ns, tmp_path):
    (tmp_path / "crds.yaml").write_text(CRD)
    scenario = load_text(tmp_path, f"""
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: custom-resources
cluster: {ROOT}/clusters/inference.yaml
steps:
  - apply: {{files: [crds.yaml]}}
  - apply:
      manifest: {{apiVersion: live.schedgate.io/v1, kind: Quota, metadata: {{name: team-a}}, spec: {{gpus: 4}}}}
  - patch: {{kind: Quota, name: team-a, patch: {{spec: {{gpus: 8}}}}}}
  - apply:
      manifest:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata: {{name: live-quota-reader, labels: {{{PLUGIN_ROLE_LABEL}: "true"}}}}
        rules: [{{apiGroups: [live.schedgate.io], resources: [quotas], verbs: [get, list, watch]}}]
""")
    custom = k8s.CustomObjectsApi(cluster.api)
    ext = k8s.ApiextensionsV1Api(cluster.api)
    for turn in range(2):  # the second run defines the CRD again: the first one's is gone, not terminating
        run = Run(scenario=scenario, cluster=cluster, ns=ns, start_scheduler=cluster.start_scheduler,
                  role_config=no_roles)
        try:
            run.run()
            quota = custom.get_namespaced_custom_object("live.schedgate.io", "v1", ns.name, "quotas", "team-a")
            assert quota["spec"] == {"gpus": 8}, (turn, quota)
            # Every scheduler schedgate started may now read what the labelled role grants (the step waited).
            subjects = schedulers_subjects(cluster)
            assert len(subjects) >= 1, subjects
            for user in subjects:
                assert may(cluster, user, "list", "quotas"), (turn, user)
                assert not may(cluster, user, "delete", "quotas"), (turn, user)
        finally:
            run.close()
        try:
            ext.read_custom_resource_definition("quotas.live.schedgate.io")
            raise AssertionError(f"run {turn}: the CRD is still there after the run closed")
        except ApiException as e:
            assert e.status == 404, e


def test_a_plugin_that_cannot_list_its_custom_resources_stops_its_scheduler_at_once_saying_why(cluster, ns, tmp_path):
    """The GPUQuota scheduler started before its CRD and role: its plugin's first list is refused, and the step
    fails in seconds with the API server's answer, not with a placement timeout."""
    scenario = load_text(tmp_path, f"""
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: no-crd
cluster: {ROOT}/clusters/inference.yaml
steps:
  - startScheduler: {{config: gpu-quota}}
""")
    run = Run(scenario=scenario, cluster=cluster, ns=ns, start_scheduler=cluster.start_scheduler,
              role_config=lambda name: load_scheduler_config(ROOT / role(name).default))
    started = time.monotonic()
    try:
        with pytest.raises(SchedgateError, match=r"GPUQuota: cannot list .*gpuquotas.* is forbidden"):
            run.run()
    finally:
        run.close()
    assert time.monotonic() - started < 30
    # Not left as one of the cluster's schedulers: the next test's catch-up would start it again, and fail so.
    assert "gpu-quota-scheduler" not in cluster.schedulers, sorted(cluster.schedulers)
    assert cluster.catch_up() == []


def test_an_object_outcome_waits_for_a_custom_resources_status_and_fails_saying_what_it_saw(cluster, ns, tmp_path):
    """``expect.object`` reads a field of an object an apply step made: the status a controller would write
    (here a patch writes it: the CRD has no status subresource), waited for; a value never reached fails at
    its deadline with the value it saw."""
    (tmp_path / "crds.yaml").write_text(CRD)
    steps = """
  - apply: {files: [crds.yaml]}
  - apply:
      manifest: {apiVersion: live.schedgate.io/v1, kind: Quota, metadata: {name: team-a}, spec: {gpus: 4}}
  - patch: {kind: Quota, name: team-a, patch: {status: {phase: Ready, used: 3}}}
  - expect: {object: {kind: Quota, name: team-a, field: status.phase, equals: Ready}}
  - expect: {object: {kind: Quota, name: team-a, field: status.used, equals: 3}}
  - expect: {object: {kind: Quota, name: team-a, field: spec.gpus, matches: "^4$"}}
"""
    header = (f"apiVersion: schedgate.io/v1alpha1\nkind: Scenario\nname: status\n"
              f"cluster: {ROOT}/clusters/inference.yaml\n")
    run = Run(scenario=load_text(tmp_path, header + "steps:" + steps), cluster=cluster, ns=ns,
              start_scheduler=cluster.start_scheduler, role_config=no_roles)
    try:
        run.run()
    finally:
        run.close()
    never = steps + '  - expect: {object: {kind: Quota, name: team-a, field: status.used, equals: "3"}, timeout: 1}\n'
    run = Run(scenario=load_text(tmp_path, header + "steps:" + never), cluster=cluster, ns=ns,
              start_scheduler=cluster.start_scheduler, role_config=no_roles)
    try:
        with pytest.raises(AssertionError, match=r"Quota/team-a: not status.used equals \"3\" after 1s \(status.used "
                                                 r"is 3\)"):
            run.run()
    finally:
        run.close()
