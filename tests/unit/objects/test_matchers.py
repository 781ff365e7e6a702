"""Matchers: a wrong kind of failure or a wrong node fails at once, never passes."""

from __future__ import annotations

import pytest

from schedgate.kube.watch import Verdict
from schedgate.objects.matchers import gone, scheduled_on, scheduling_error, unschedulable
from schedgate.objects.metrics import parse_metrics


def pod(node=None, reason=None, message="", status="False"):
    p = {"metadata": {"name": "p"}, "spec": {"schedulerName": "s"}, "status": {}}
    if node:
        p["spec"]["nodeName"] = node
    if reason:
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": status, "reason": reason,
                                      "message": message}]
    return p


def test_unschedulable_matches_only_the_unschedulable_reason():
    m = unschedulable(message=r"node affinity")
    assert m(pod(reason="Unschedulable", message="3 node(s) didn't match Pod's node affinity")).verdict is Verdict.MATCH
    assert m(pod(reason="Unschedulable", message="1 Insufficient cpu")).verdict is Verdict.PENDING
    assert m(pod()).verdict is Verdict.PENDING


def test_a_scheduler_error_is_never_taken_for_a_rejection():
    c = unschedulable()(pod(reason="SchedulerError", message="extender failed"))
    assert c.verdict is Verdict.FAIL
    assert "SchedulerError" in c.why


def test_a_rejection_is_never_taken_for_a_scheduler_error():
    assert scheduling_error()(pod(reason="Unschedulable")).verdict is Verdict.FAIL
    assert scheduling_error()(pod(reason="SchedulerError")).verdict is Verdict.MATCH


def test_a_bound_pod_fails_every_unbound_expectation():
    assert unschedulable()(pod(node="n1")).verdict is Verdict.FAIL
    assert scheduling_error()(pod(node="n1")).verdict is Verdict.FAIL


def test_scheduled_on_names_the_allowed_set_and_fails_outside_it():
    m = scheduled_on(["a", "b"], never=["c"])
    assert m(pod(node="a")).verdict is Verdict.MATCH
    assert m(pod()).verdict is Verdict.PENDING
    assert m(pod(node="c")).verdict is Verdict.FAIL
    assert "forbidden" in m(pod(node="c")).why
    assert m(pod(node="z")).verdict is Verdict.FAIL
    with pytest.raises(ValueError):
        scheduled_on([])
    with pytest.raises(ValueError):
        scheduled_on(["a"], never=["a"])


def test_gone_matches_only_a_missing_object():
    assert gone()(None).verdict is Verdict.MATCH
    assert gone()(pod()).verdict is Verdict.PENDING


def test_prometheus_text_is_parsed_with_labels_and_summed_by_selection():
    text = """\
# HELP scheduler_schedule_attempts_total Number of attempts
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="gpu-packing-scheduler",result="scheduled"} 7
scheduler_schedule_attempts_total{profile="gpu-packing-scheduler",result="unschedulable"} 2
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 3
scheduler_pending_pods{queue="active"} 0
odd{label="with \\"quote\\""} 1.5e3
"""
    m = parse_metrics(text)
    assert m.value("scheduler_schedule_attempts_total", profile="gpu-packing-scheduler") == 9
    assert m.value("scheduler_schedule_attempts_total", result="scheduled") == 10
    assert m.value("scheduler_pending_pods", queue="backoff") == 0
    assert m.select("odd")[0].labels == {"label": 'with "quote"'}
    assert m.value("odd") == 1500
    # An escaped backslash before an n is a backslash and an n, not a newline.
    assert parse_metrics('x{path="C:\\\\new"} 1\n').select("x")[0].labels == {"path": "C:\\new"}
    # A histogram is its bucket, sum and count samples.
    h = parse_metrics("# TYPE d histogram\nd_bucket{le=\"0.1\"} 1\nd_bucket{le=\"+Inf\"} 2\nd_sum 0.3\nd_count 2\n")
    assert h.histogram_count("d") == 2 and h.histogram_sum("d") == pytest.approx(0.3)


def test_only_transient_api_errors_are_retried():
    from kubernetes.client.exceptions import ApiException

    from schedgate.kube.api import is_transient, read

    assert is_transient(ApiException(status=503)) and is_transient(ApiException(status=429))
    assert not is_transient(ApiException(status=404)) and not is_transient(ApiException(status=409))
    calls = []

    def flaky(**kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise ApiException(status=503)
        return "ok"

    assert read(flaky) == "ok" and len(calls) == 3
    assert calls[0] == {"_request_timeout": 10.0}, "every read has an answer deadline unless it sets one"

    def missing(**kwargs):
        calls.append(kwargs)
        raise ApiException(status=404)

    calls.clear()
    with pytest.raises(ApiException):
        read(missing)
    assert len(calls) == 1

    # A dead component is why the API does not answer: the first retry asks, and gives up with its death.
    class Died(AssertionError):
        pass

    def dead() -> None:
        raise Died("etcd exited with code -9")

    calls.clear()
    with pytest.raises(Died):
        read(flaky, alive=dead)
    assert len(calls) == 1
