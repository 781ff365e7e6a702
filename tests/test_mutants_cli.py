"""``schedgate mutants``: the baseline taken from a passing JUnit report, and which mutants run alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.cli.mutants import junit_passed, main, runs_alone

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "clusters" / "mutants"

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="e2e.test_capacity" name="test_a[x]"/>
  <testcase classname="e2e.test_capacity" name="test_a[y]"/>
  <testcase classname="e2e.test_gangs" name="test_b"><failure message="no"/></testcase>
  <testcase classname="e2e.test_gangs" name="test_c"/>
  <testcase classname="e2e.test_rollback" name="test_d"><skipped message="no kind"/></testcase>
  <testcase classname="e2e.test_rollback_causes.TestThem" name="test_e"/>
  <testcase classname="e2e.scenarios.hard-constraint.scenario.yaml" name="gpu-pod-needs-network"/>
  <testcase classname="e2e.scenarios.cache-changes.scenario.yaml" name="x"><error message="setup"/></testcase>
</testsuite></testsuites>
"""


def test_a_file_counts_as_passed_only_if_the_report_ran_it_and_none_of_its_tests_failed(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    files = ["e2e/test_capacity.py", "e2e/test_gangs.py", "e2e/test_rollback.py", "e2e/test_rollback_causes.py",
             "e2e/scenarios/hard-constraint.scenario.yaml", "e2e/scenarios/cache-changes.scenario.yaml",
             "e2e/test_shared_slots.py", "e2e/test_cap.py"]
    passed, rest = junit_passed(report, files)
    assert passed == ["e2e/test_capacity.py", "e2e/test_rollback_causes.py",
                      "e2e/scenarios/hard-constraint.scenario.yaml"]
    # failed, only skipped, errored, never ran, and a name that is only a prefix of one that ran
    assert rest == ["e2e/test_gangs.py", "e2e/test_rollback.py", "e2e/scenarios/cache-changes.scenario.yaml",
                    "e2e/test_shared_slots.py", "e2e/test_cap.py"]


def test_performance_mutants_and_controls_run_alone_the_others_may_share_the_machine():
    assert runs_alone(MUTANTS / "slow-filter.yaml")  # caught by a measurePerformance file
    assert runs_alone(MUTANTS / "prefilter-preload.yaml")  # a control
    assert runs_alone(MUTANTS / "sampled-scoring.yaml")  # '# runs-alone:' says why
    assert not runs_alone(MUTANTS / "no-node-affinity.yaml")


@pytest.mark.parametrize("argv, message", [
    (["--baseline-junit", "x.xml"], "--baseline-junit goes with --focused"),
    (["--focused", "--baseline-junit", "/nonexistent/junit.xml"],
     "--baseline-junit /nonexistent/junit.xml: no such file"),
    (["--jobs", "0"], "--jobs takes a whole number of at least 1"),
])
def test_bad_options_are_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_each_mutant_names_the_broken_builds_it_runs_and_only_those_are_linked():
    from schedgate.cli.mutants import builds
    from schedgate.runtime.toolchain import MUTANT_BUILDS

    mutants = sorted((ROOT / "clusters/mutants").glob("*.yaml"))
    named = {b for m in mutants for b in builds(m)}
    assert named == set(MUTANT_BUILDS), "every broken build is run by some mutant, and no mutant names an unknown one"
    assert builds(ROOT / "clusters/mutants/slow-filter.yaml") == ["kube-scheduler-slow-filter"]
    assert builds(ROOT / "clusters/mutants/pool-no-requeue.yaml") == ["schedgate-pool-scheduler-no-requeue"]
    assert builds(ROOT / "clusters/mutants/least-allocated.yaml") == []
