"""The scheduler's CPU seconds read from a scrape's text by its one line say what the whole parse says."""

from __future__ import annotations

from schedgate.objects.metrics import parse_metrics
from schedgate.perf.waits import cpu_seconds, cpu_seconds_in

SCRAPE = """\
# HELP process_cpu_seconds_total_other [ALPHA] not the one
# TYPE process_cpu_seconds_total_other counter
process_cpu_seconds_total_other 99
# HELP process_cpu_seconds_total [STABLE] Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.37
# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts to schedule pods.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="p",result="scheduled"} 4
"""


def test_the_cpu_line_is_read_as_the_whole_scrape_parsed_reads_it():
    assert cpu_seconds_in(SCRAPE) == cpu_seconds(parse_metrics(SCRAPE)) == 12.37


def test_a_scrape_without_the_line_says_zero_as_the_parse_does():
    rest = "\n".join(line for line in SCRAPE.splitlines() if not line.startswith("process_cpu_seconds_total "))
    assert cpu_seconds_in(rest) == cpu_seconds(parse_metrics(rest)) == 0.0
