"""``schedgate mutants``: the baseline taken from a passing JUnit report, and which mutants run alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedgate.cli.mutants import junit_passed, main, runs_alone
from schedgate.pytest_plugin.mutant_report import FIRST_CATCH_ENV, REPORT_ENV

ROOT = Path(__file__).resolve().parents[3]
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
  <testcase classname="e2e.bugs.k8s-1.scenario.yaml" name="b"><skipped type="pytest.xfail" message="known"/></testcase>
</testsuite></testsuites>
"""


def test_a_file_counts_as_passed_only_if_the_report_ran_it_and_none_of_its_tests_failed(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    files = ["e2e/test_capacity.py", "e2e/test_gangs.py", "e2e/test_rollback.py", "e2e/test_rollback_causes.py",
             "e2e/scenarios/hard-constraint.scenario.yaml", "e2e/scenarios/cache-changes.scenario.yaml",
             "e2e/test_shared_slots.py", "e2e/test_cap.py", "e2e/bugs/k8s-1.scenario.yaml"]
    passed, rest = junit_passed(report, files)
    assert passed == ["e2e/test_capacity.py", "e2e/test_rollback_causes.py",
                      "e2e/scenarios/hard-constraint.scenario.yaml", "e2e/bugs/k8s-1.scenario.yaml"]
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
    (["--first-catch", "-v"], "--first-catch and -v disagree"),
])
def test_bad_options_are_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_each_mutant_names_the_broken_builds_it_runs_and_only_those_are_linked():
    from schedgate.cli.mutants import builds
    from schedgate.runtime.builds import MUTANT_BUILDS

    mutants = sorted((ROOT / "clusters/mutants").glob("*.yaml"))
    named = {b for m in mutants for b in builds(m)}
    assert named == set(MUTANT_BUILDS), "every broken build is run by some mutant, and no mutant names an unknown one"
    assert builds(ROOT / "clusters/mutants/slow-filter.yaml") == ["kube-scheduler-slow-filter"]
    assert builds(ROOT / "clusters/mutants/pool-no-requeue.yaml") == ["schedgate-pool-scheduler-no-requeue"]
    assert builds(ROOT / "clusters/mutants/least-allocated.yaml") == []


CATCHING = """
def test_passes():
    assert True

def test_catches():
    assert 1 == 2, "caught"

def test_after():
    assert 1 == 3, "would catch again"
"""


@pytest.mark.live
@pytest.mark.parametrize("first_catch", [False, True])
def test_first_catch_ends_a_mutants_run_at_the_first_assertion_that_catches_it(tmp_path, first_catch):
    (tmp_path / "test_m.py").write_text(CATCHING)
    report = tmp_path / "failures.jsonl"
    env = dict(os.environ, **{REPORT_ENV: str(report)})
    env.pop(FIRST_CATCH_ENV, None)
    if first_catch:
        env[FIRST_CATCH_ENV] = "1"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:schedgate", "-p", "no:cacheprovider",
                           "-p", "schedgate.pytest_plugin.mutant_report", "-q", "test_m.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    caught = [json.loads(x)["test"] for x in report.read_text().splitlines()]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    if first_catch:
        assert caught == ["test_m.py::test_catches"]
        assert "1 failed, 1 passed" in proc.stdout  # test_after never ran
    else:
        assert caught == ["test_m.py::test_catches", "test_m.py::test_after"]
        assert "2 failed, 1 passed" in proc.stdout


def test_a_modules_mutant_and_its_baseline_run_that_module_the_baseline_with_the_files_own_profile(
        tmp_path, monkeypatch, capsys):
    import schedgate.cli.mutants as mutants
    from schedgate.cli.mutants import Result

    calls = []

    def fake(config, suite, extra, first_catch=False, module="", own_config=False):
        calls.append((Path(config).name, tuple(suite), module, own_config))
        failures = [] if config.parent.name != "mutants" else [
            {"test": "caught", "when": "call", "assertion": True, "line": "x"}]
        return Result(config.stem, "", 1 if failures else 0, 1.0, failures)

    monkeypatch.setattr(mutants, "run_suite", fake)
    (junit := tmp_path / "junit.xml").write_text(REPORT)
    assert main(["--focused", "--baseline-junit", str(junit), "--only", "maintenance-off"]) == 0
    files = tuple(mutants.caught_by(MUTANTS / "maintenance-off.yaml"))
    module = "examples/out-of-tree-scheduler"
    assert calls == [("gpu-packing-scheduler.yaml", files, module, True),  # the baseline: the files' own profile
                     ("maintenance-off.yaml", files, module, False)], calls
    assert "mutants caught 1/1" in capsys.readouterr().out
