"""Per-pod timings read back from the API: scheduled->Ready at the resolution its clock has."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from schedgate.report.timing import pod_timings, summary_row


def test_a_kubelets_whole_second_ready_gives_scheduled_to_ready_as_at_most_never_a_truncated_zero():
    """On kind a Ready condition says only its second: a pod bound at .600 and Ready in that second was
    reported 0.000 (clamped); it is now at most the second's end less the bind, marked <=."""
    def pod(name: str, message: str) -> dict[str, object]:
        return {"metadata": {"name": name, "creationTimestamp": "2026-12-04T18:50:00Z"},
                "spec": {"nodeName": "n", "schedulerName": "s"},
                "status": {"conditions": [{"type": "PodScheduled", "status": "True"},
                                          {"type": "Ready", "status": "True", "message": message,
                                           "lastTransitionTime": "2026-12-04T18:50:01Z"}]}}

    def listing(items: list[object]) -> object:
        return lambda *a, **k: SimpleNamespace(data=json.dumps({"items": items}).encode())

    scheduled = [{"reason": "Scheduled", "regarding": {"kind": "Pod", "name": n},
                  "eventTime": "2026-12-04T18:50:01.600000Z"} for n in ("kubelet", "agent")]
    core = SimpleNamespace(list_namespaced_pod=listing([
        pod("kubelet", ""), pod("agent", "schedgate node agent: ready at 2026-12-04T18:50:01.650000000Z")]))
    events = SimpleNamespace(list_namespaced_event=listing(scheduled))
    kubelet, agent = pod_timings(core, events, "ns")
    assert kubelet.ready_at_most and kubelet.scheduled_to_ready == pytest.approx(0.4)
    assert kubelet.row()[4] == "<=0.400"
    assert not agent.ready_at_most and agent.row()[4] == "0.050"
    assert summary_row([kubelet])[5] == "<=0.400" and summary_row([agent])[5] == "0.050"
