"""The API server's audit log read back: who deleted or evicted which pod of a namespace."""

from __future__ import annotations

import json

import yaml

from schedgate.cluster.audit import POLICY, audit_flags, by_schedulers, disruptions, marked, removals


def entry(verb: str, name: str, user: str, *, ns: str = "t", sub: str = "", code: int = 200,
          stage: str = "ResponseComplete") -> str:
    ref = {"resource": "pods", "namespace": ns, "name": name, **({"subresource": sub} if sub else {})}
    return json.dumps({"kind": "Event", "stage": stage, "verb": verb, "objectRef": ref, "user": {"username": user},
                       "responseStatus": {"code": code}, "stageTimestamp": "2026-12-06T10:00:00.000000Z"})


LOG = [
    entry("delete", "victim", "schedgate:scheduler:gpu-packing-scheduler"),
    entry("create", "evicted", "system:kube-scheduler", sub="eviction", code=201),
    entry("delete", "cleanup", "admin"),                                          # the harness's own delete
    entry("delete", "other-ns", "system:kube-scheduler", ns="elsewhere"),
    entry("delete", "refused", "system:kube-scheduler", code=403),               # not removed
    entry("delete", "early", "system:kube-scheduler", stage="RequestReceived"),  # not answered yet
    entry("patch", "status", "system:kube-scheduler", sub="status"),
    '{"kind": "Event", "stage": "ResponseComp',                                   # a line still being written
]


def test_removals_are_the_namespaces_answered_deletions_and_evictions():
    found = removals(LOG, "t")
    assert [(r.pod, r.how, r.user) for r in found] == [
        ("t/victim", "deleted", "schedgate:scheduler:gpu-packing-scheduler"),
        ("t/evicted", "evicted", "system:kube-scheduler"),
        ("t/cleanup", "deleted", "admin")]


def test_only_a_schedulers_identity_makes_a_victim():
    assert [r.pod for r in by_schedulers(removals(LOG, "t"))] == ["t/victim", "t/evicted"]


def test_the_flags_write_the_policy_beside_the_log(tmp_path):
    flags = audit_flags(tmp_path)
    assert f"--audit-log-path={tmp_path / 'audit.log'}" in flags and "--audit-log-mode=blocking" in flags
    assert yaml.safe_load((tmp_path / "audit-policy.yaml").read_text()) == POLICY
    assert POLICY["rules"][-1] == {"level": "None"}, "everything else unlogged: the log stays small"


def status_write(name: str, user: str, conditions: list[str], *, code: int = 200, ns: str = "t") -> str:
    ref = {"resource": "pods", "namespace": ns, "name": name, "subresource": "status"}
    body = {"status": {"$setElementOrder/conditions": [{"type": c} for c in conditions],
                       "conditions": [{"type": c, "status": "True", "reason": "PreemptionByScheduler"}
                                      for c in conditions]}}
    return json.dumps({"kind": "Event", "stage": "ResponseComplete", "verb": "patch", "objectRef": ref,
                       "user": {"username": user}, "requestObject": body, "responseStatus": {"code": code}})


def test_a_victim_is_marked_by_a_schedulers_successful_disruption_target_write():
    log = [status_write("victim", "system:kube-scheduler", ["DisruptionTarget"]),
           status_write("pending", "system:kube-scheduler", ["PodScheduled"]),             # an attempt's verdict
           status_write("by-kubelet", "system:node:n1", ["DisruptionTarget"]),             # not a scheduler
           status_write("refused", "system:serviceaccount:kube-system:schedgate-scheduler-x", ["DisruptionTarget"],
                        code=409),
           status_write("kind", "system:serviceaccount:kube-system:schedgate-scheduler-x", ["DisruptionTarget"]),
           status_write("other-ns", "system:kube-scheduler", ["DisruptionTarget"], ns="elsewhere")]
    assert marked(log, "t") == {"t/victim", "t/kind"}
    assert disruptions(log, "t")["t/by-kubelet"] == ("PreemptionByScheduler", "system:node:n1")  # for `evicted`


def test_the_policy_logs_status_writes_of_schedulers_only_with_their_bodies():
    status = [r for r in POLICY["rules"] if r.get("resources") == [{"group": "", "resources": ["pods/status"]}]]
    assert {r["level"] for r in status} == {"Request"}
    assert all(r.get("users") or r.get("userGroups") for r in status), "a kubelet's status writes stay out"
