"""``expect.metric`` against a scheduler the whole session shares: a counter counts from the scenario's
start (an earlier test's scheduling error is not this scenario's), a gauge is read as it is."""

from __future__ import annotations

from schedgate.objects.metrics import parse_metrics
from schedgate.scenarios.metric_outcomes import Metric

SCRAPE = """# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="p",result="error"} {errors}
scheduler_schedule_attempts_total{profile="p",result="scheduled"} 40
# HELP schedgate_network_slots Slots in use.
# TYPE schedgate_network_slots gauge
schedgate_network_slots{node="a"} {slots}
# HELP scheduler_pod_scheduling_sli_duration_seconds E2e latency.
# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram
scheduler_pod_scheduling_sli_duration_seconds_bucket{le="+Inf"} 41
scheduler_pod_scheduling_sli_duration_seconds_count 41
scheduler_pod_scheduling_sli_duration_seconds_sum 2.5
"""


def scrape(errors: int, slots: int):
    return parse_metrics(SCRAPE.replace("{errors}", str(errors)).replace("{slots}", str(slots)))


def metric(name: str, **bounds: float) -> Metric:
    labels = (("result", "error"),) if name.startswith("scheduler_schedule") else ()
    return Metric(scheduler="p", name=name, labels=labels, bounds=tuple(bounds.items()))


def test_the_scrape_knows_which_samples_only_grow():
    s = scrape(1, 3)
    assert {"scheduler_schedule_attempts_total", "scheduler_pod_scheduling_sli_duration_seconds_count",
            "scheduler_pod_scheduling_sli_duration_seconds_sum",
            "scheduler_pod_scheduling_sli_duration_seconds_bucket"} <= s.cumulative
    assert "schedgate_network_slots" not in s.cumulative


def test_a_counter_counts_from_the_scenarios_start_a_gauge_as_it_is():
    errors = metric("scheduler_schedule_attempts_total", equals=0)
    start = scrape(1, 3)  # an earlier test left one scheduling error on the session's scheduler
    assert errors.ok(scrape(1, 3), start)
    assert not errors.ok(scrape(2, 3), start)  # this scenario's own error is seen
    assert not errors.ok(scrape(1, 3))  # read whole, the earlier test's error was blamed on this scenario
    slots = metric("schedgate_network_slots", equals=3)
    assert slots.ok(scrape(5, 3), start)  # a gauge: the value now, whatever it was at the start
    assert not metric("schedgate_network_slots", equals=0).ok(scrape(5, 3), start)


def test_a_counter_that_went_back_counts_from_zero():
    errors = metric("scheduler_schedule_attempts_total", atLeast=2)
    assert errors.ok(scrape(2, 0), scrape(7, 0))  # the scheduler restarted: 2 of its own
    assert errors.value(scrape(2, 0), scrape(7, 0)) == 2
    assert errors.value(scrape(9, 0), scrape(7, 0)) == 2
