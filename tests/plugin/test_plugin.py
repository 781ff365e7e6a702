"""The pytest plugin in someone else's session: inert until asked, a marker on its cluster tests, figures
as JUnit suite properties (valid xunit2)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDGATE_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_session_that_does_not_use_schedgate_loads_nothing_of_it(tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_arithmetic():\n    assert 1 + 1 == 2\n")
    # A file where the default definitions would be looked for: never read, so it cannot fail the run.
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "inference.yaml").write_text("not: [a, valid")
    out = pytest_in(tmp_path, "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout and "schedgate" not in out.stdout + out.stderr


def test_every_cluster_test_carries_the_schedgate_marker():
    out = pytest_in(ROOT, "e2e/test_hard_constraint.py", "e2e/scenarios/hard-constraint.scenario.yaml",
                    "tests/unit/spec/test_quantity.py", "-m", "not schedgate", "--collect-only", "-q")
    listed = [x for x in out.stdout.splitlines() if "::" in x]
    assert listed and all(x.startswith("tests/unit/spec/test_quantity.py::") for x in listed), out.stdout
    assert "deselected" in out.stdout


def test_figures_are_suite_properties_of_a_valid_xunit2_report(tmp_path):
    (tmp_path / "test_measures.py").write_text(
        "def test_measures(report):\n    report.figure('seconds to bind', 0.25, 's')\n    report.figure('nodes', 3)\n")
    junit = tmp_path / "junit.xml"
    out = pytest_in(tmp_path, "-q", f"--junitxml={junit}", "-o", "junit_family=xunit2", "-W", "error")
    assert out.returncode == 0, out.stdout + out.stderr
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props == {"schedgate: test_measures.py::test_measures :: seconds to bind": "0.250 s",
                     "schedgate: test_measures.py::test_measures :: nodes": "3"}, props
    assert suite.find("testcase/properties") is None, "xunit2 has no properties on a test case"
    assert "test_measures.py::test_measures :: seconds to bind  0.250 s" in out.stdout
