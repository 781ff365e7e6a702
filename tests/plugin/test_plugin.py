"""The pytest plugin in someone else's session: inert until asked, a marker on its cluster tests, figures
as JUnit suite properties (valid xunit2). A session of a folder of its own runs under ``pytester``, in a
process of its own (the plugin loads from its entry point, as it does for a user)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDGATE_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_session_that_does_not_use_schedgate_loads_nothing_of_it(session: pytest.Pytester) -> None:
    session.makepyfile(test_plain="def test_arithmetic():\n    assert 1 + 1 == 2\n")
    # A file where the default definitions would be looked for: never read, so it cannot fail the run.
    session.mkdir("clusters").joinpath("inference.yaml").write_text("not: [a, valid")
    out = session.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    out.assert_outcomes(passed=1)
    assert "schedgate" not in out.stdout.str() + out.stderr.str()


def test_every_cluster_test_carries_the_schedgate_marker():
    out = pytest_in(ROOT, "e2e/test_hard_constraint.py", "e2e/scenarios/hard-constraint.scenario.yaml",
                    "tests/unit/spec/test_quantity.py", "-m", "not schedgate", "--collect-only", "-q")
    listed = [x for x in out.stdout.splitlines() if "::" in x]
    assert listed and all(x.startswith("tests/unit/spec/test_quantity.py::") for x in listed), out.stdout
    assert "deselected" in out.stdout


def test_figures_are_suite_properties_of_a_valid_xunit2_report(session: pytest.Pytester) -> None:
    session.makepyfile(test_measures="def test_measures(report):\n    report.figure('seconds to bind', 0.25, 's')\n"
                                     "    report.figure('nodes', 3)\n")
    junit = session.path / "junit.xml"
    out = session.runpytest_subprocess("-q", "-p", "no:cacheprovider", f"--junitxml={junit}", "-o",
                                       "junit_family=xunit2", "-W", "error")
    out.assert_outcomes(passed=1)
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props == {"schedgate: test_measures.py::test_measures :: seconds to bind": "0.250 s",
                     "schedgate: test_measures.py::test_measures :: nodes": "3"}, props
    assert suite.find("testcase/properties") is None, "xunit2 has no properties on a test case"
    out.stdout.fnmatch_lines(["*test_measures.py::test_measures :: seconds to bind  0.250 s*"])


def test_a_session_with_a_conftest_in_a_sub_folder_runs_on_workers(session: pytest.Pytester) -> None:
    """pluggy keeps the plugins in sets once a conftest.py applies to some paths only: each plugin the
    schedgate plugin registers must be hashable (its gatherer once was not: INTERNALERROR under -n 2)."""
    session.mkpydir("sub").joinpath("conftest.py").write_text("")
    session.path.joinpath("sub", "test_in_sub.py").write_text(
        "def test_measures(report):\n    report.figure('nodes', 3)\n")
    session.makepyfile(test_top="def test_top():\n    assert True\n")
    out = session.runpytest_subprocess("-n", "2", "-q", "-p", "no:cacheprovider")
    out.assert_outcomes(passed=2)
    out.stdout.fnmatch_lines(["*test_in_sub.py::test_measures :: nodes*3*"])
