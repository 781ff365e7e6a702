"""pytest -n: the summary is written on xdist's controller from what the workers' reports and
workeroutput carried; scenario files on one extra cluster share a worker; the existing provider refuses
workers; long work says where it is, past pytest's capture."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_plugin import ROOT, pytest_in

from schedgate.pytest_plugin.distribute import cluster_scope
from schedgate.pytest_plugin.durations import FILE, longest_first, weigher
from schedgate.pytest_plugin.exclusive import MARKER
from schedgate.pytest_plugin.gather import ADMISSION, ARTIFACTS, TIMINGS, Gathered, StartFacts
from schedgate.pytest_plugin.options import asked_for
from schedgate.runtime.progress import log, ticking


def test_figures_of_tests_on_two_workers_reach_the_controllers_summary(session: pytest.Pytester) -> None:
    session.makepyfile(test_two="import pytest\n\n@pytest.mark.parametrize('n', range(4))\n"
                                "def test_measures(report, n):\n    report.figure(f'figure {n}', n, 's')\n")
    out = session.runpytest_subprocess("-n", "2", "-q", "-p", "no:cacheprovider")
    out.assert_outcomes(passed=4)
    stdout = out.stdout.str()
    summary = stdout[stdout.index("schedgate figures"):]
    for n in range(4):
        assert f"test_measures[{n}] :: figure {n}" in summary, stdout


def test_rows_and_cluster_starts_travel_on_reports_and_workeroutput() -> None:
    g = Gathered()
    report = SimpleNamespace(when="call", nodeid="e2e/test_x.py::test_y")
    setattr(report, TIMINGS, (3, 3, "0.050", "0.070", 1, "-"))
    setattr(report, ADMISSION, ("2", "0.040", "0.050", "0", "-", "-"))
    setattr(report, ARTIFACTS, ["artifacts/e2e.test_x.py--test_y"])
    g.pytest_runtest_logreport(report)  # type: ignore[arg-type]
    g.pytest_runtest_logreport(SimpleNamespace(when="setup", nodeid="e2e/test_x.py::test_z"))  # type: ignore[arg-type]
    facts = StartFacts(worker="gw1", total=5.5, reaped=[], kubeconfig="k", run_dir="r", alive=False)
    g.pytest_testnodedown(SimpleNamespace(workeroutput={"schedgate_started": facts.__dict__}), None)
    g.pytest_testnodedown(SimpleNamespace(workeroutput={}), None)  # a worker that started no cluster
    assert g.timings == [("e2e/test_x.py::test_y", (3, 3, "0.050", "0.070", 1, "-"))]
    assert g.admissions == [("e2e/test_x.py::test_y", ("2", "0.040", "0.050", "0", "-", "-"))]
    assert g.artifacts == ["artifacts/e2e.test_x.py--test_y"]
    assert g.starts == [facts]


def test_scenario_files_on_one_extra_cluster_are_one_work_unit_and_run_one_after_another(
        pytestconfig: pytest.Config) -> None:
    if not asked_for(pytestconfig):
        pytest.skip("needs a schedgate session (make test passes --provider local)")
    conformance = [cluster_scope(pytestconfig, f"e2e/conformance/{name}.scenario.yaml")
                   for name in ("fit-cpu-equal-edge-fits", "spread-no-node-satisfies",
                                "taint-effect-mismatch-unschedulable")]
    assert conformance[0] and conformance.count(conformance[0]) == 3, conformance
    # The session's plane and configuration on other nodes: the session's cluster, its nodes replaced.
    assert cluster_scope(pytestconfig, "e2e/scenarios/spread-racks-hard.scenario.yaml") is None
    assert cluster_scope(pytestconfig, "e2e/scenarios/spread-racks-soft.scenario.yaml") is None
    pool = [cluster_scope(pytestconfig, f"e2e/scenarios/{name}.scenario.yaml")  # the pool role's cluster
            for name in ("pool-tenant-pools", "pool-gpu-capacity", "pool-node-gone", "two-schedulers-one-node")]
    assert pool[0] and pool.count(pool[0]) == 4 and pool[0] != conformance[0], pool
    # A definition with feature gates or a node agent starts a control plane of its own: replacing the nodes of
    # another would keep that one's flags and processes.
    gated = cluster_scope(pytestconfig, "e2e/scenarios/native-podgroup-gang.scenario.yaml")
    live = [cluster_scope(pytestconfig, f"e2e/scenarios/live-{name}.scenario.yaml")
            for name in ("deployment-ready", "graceful-preemption", "node-unreachable")]
    assert live[0] and live.count(live[0]) == 3 and len({gated, live[0], pool[0], conformance[0]}) == 4
    # The same definitions with the gates a file's requires: turns on are clusters of their own.
    gated_racks = {cluster_scope(pytestconfig, f"e2e/scenarios/native-podgroup-{name}.scenario.yaml")
                   for name in ("one-rack", "no-rack-fits")}
    gated_live = {cluster_scope(pytestconfig, f"e2e/scenarios/native-podgroup-{name}.scenario.yaml")
                  for name in ("preempts-whole", "preempts-nothing")}
    assert len(gated_racks) == len(gated_live) == 1 and len({*gated_racks, *gated_live, gated, live[0]}) == 4
    assert cluster_scope(pytestconfig, "e2e/scenarios/cache-changes.scenario.yaml") is None  # the session's
    assert cluster_scope(pytestconfig, "e2e/test_gangs.py") is None
    # In a run without -n: the files of each extra cluster one after another, in collection order.
    serial = pytest_in(ROOT, "e2e/scenarios", "e2e/conformance", "--collect-only", "-q", "--provider", "local")
    listed = [x.split("::")[0] for x in serial.stdout.splitlines() if "::" in x]
    scopes = [cluster_scope(pytestconfig, x) for x in listed]
    runs = [s for i, s in enumerate(scopes) if s and (i == 0 or scopes[i - 1] != s)]
    assert len(runs) == len(set(runs)) == 7, list(zip(listed, scopes, strict=True))


def test_the_existing_provider_refuses_workers(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    out = pytest_in(ROOT, "e2e/scenarios", "-n", "2", "-q", "--provider", "existing", "--kubeconfig", str(kubeconfig))
    assert out.returncode == 4, out.stdout + out.stderr
    assert "--provider existing with pytest -n" in out.stderr


def test_a_long_phase_ticks_with_what_is_left_and_says_when_it_stalls(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "live", False):
                lines.append(record.getMessage())

    handler = Keep()
    monkeypatch.setattr(log, "handlers", [])  # this run's own live lines are not what is tested
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    done = [0]
    step = threading.Event()
    try:
        with ticking("building", lambda: f"{done[0]} of 3 done", every=0.2, stall=0.5):
            for _ in range(3):
                step.wait(0.25)
                done[0] += 1
            step.wait(1.0)  # no progress: the lines must say so
    finally:
        log.removeHandler(handler)
    assert lines and all(line.startswith("building: ") for line in lines), lines
    assert any("of 3 done" in line and "no progress" not in line for line in lines), lines
    assert "no progress for" in lines[-1] and "3 of 3 done" in lines[-1], lines


def test_a_phase_without_status_only_counts_time(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep()
    monkeypatch.setattr(log, "handlers", [])  # this run's own live lines are not what is tested
    log.addHandler(handler)
    try:
        with ticking("kind: cluster created", None, every=0.1, stall=0.1):
            threading.Event().wait(0.35)
    finally:
        log.removeHandler(handler)
    assert lines and all(line.startswith("kind: cluster created: ") and "so far" in line for line in lines)
    assert not any("no progress" in line for line in lines)  # without a status it cannot tell a stall


def test_an_exclusive_test_runs_with_no_other_test_beside_it(session: pytest.Pytester) -> None:
    # Each test logs its interval (one clock for all processes); the exclusive one must overlap none.
    log_file = session.path / "intervals"
    session.makepyfile(test_turns=(
        "import os, threading, time, pytest\n\n"
        "def _hold(name):\n"
        "    start = time.monotonic()\n"
        "    threading.Event().wait(0.3)  # work of its own, long enough to overlap a test beside it\n"
        f"    with open({str(log_file)!r}, 'a') as f:\n"
        "        f.write(f'{name} {start} {time.monotonic()}\\n')\n\n"
        "@pytest.mark.parametrize('n', range(3))\n"
        "def test_before(n):\n    _hold(f'before{n}')\n\n"
        "@pytest.mark.schedgate_exclusive\n"
        "def test_alone():\n    _hold('alone')\n\n"
        "@pytest.mark.parametrize('n', range(3))\n"
        "def test_after(n):\n    _hold(f'after{n}')\n"))
    out = session.runpytest_subprocess("-n", "2", "-q", "-p", "no:randomly", "-p", "no:cacheprovider")
    out.assert_outcomes(passed=7)
    spans = {name: (float(a), float(b)) for name, a, b in (x.split() for x in log_file.read_text().splitlines())}
    assert len(spans) == 7
    a0, a1 = spans.pop("alone")
    beside = [n for n, (s0, s1) in spans.items() if s0 < a1 and a0 < s1]
    assert beside == [], f"ran beside the exclusive test: {beside}"


def test_the_longest_units_go_out_first_by_the_durations_record_and_unknown_tests_count_as_the_mean() -> None:
    weigh = weigher({"a::t": 1.0, "b::t": 30.0, "c::t": 5.0})  # mean 12
    units = {"a": {"a::t": False}, "b": {"b::t": False}, "new": {"new::t": False}, "c": {"c::t": False},
             "group": {"c::t": False, "a::t": False, "new::u": False}}
    assert [u for u, _ in longest_first(units, weigh)] == ["b", "group", "new", "c", "a"]
    assert [u for u, _ in longest_first(units, weigher({}))] == ["group", "a", "b", "new", "c"]  # by count
    # Units whose tests may have the machine alone go first, longest first among them.
    alone = {"a::t", "c::t"}
    assert [u for u, _ in longest_first(units, weigh, lambda ids: bool(alone & set(ids)))] == [
        "group", "c", "a", "b", "new"]


def test_a_test_recorded_as_longest_is_the_first_its_worker_runs_and_a_run_records_its_durations(
        session: pytest.Pytester) -> None:
    order = session.path / "order"
    session.makepyfile(test_units=(
        "import os, pytest\n\n"
        "@pytest.mark.parametrize('n', range(6))\n"
        "def test_short(n):\n    _log(f'short{n}')\n\n"
        "def test_long():\n    _log('long')\n\n"
        "def _log(name):\n"
        f"    with open({str(order)!r}, 'a') as f:\n"
        "        f.write(os.environ['PYTEST_XDIST_WORKER'] + ' ' + name + '\\n')\n"))
    record = session.path / FILE
    record.write_text(json.dumps({"local": {"test_units.py::test_long": 300.0, "gone.py::test_old": 2.0},
                                  "kind": {"test_units.py::test_long": 900.0}}))
    out = session.runpytest_subprocess("-n", "2", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                                       "--record-durations")
    out.assert_outcomes(passed=7)
    first: dict[str, str] = {}
    for worker, name in (x.split() for x in order.read_text().splitlines()):
        first.setdefault(worker, name)
    assert "long" in first.values(), f"collected last and recorded longest, yet not first on its worker: {first}"
    written = json.loads(record.read_text())
    assert written["kind"] == {"test_units.py::test_long": 900.0}  # another provider's figures are kept
    local = written["local"]
    assert local.pop("gone.py::test_old") == 2.0  # a test this run did not run keeps its figure
    assert sorted(local) == ["test_units.py::test_long", *(f"test_units.py::test_short[{n}]" for n in range(6))]
    assert all(0 <= s < 60 for s in local.values()), local


def test_a_durations_record_that_is_not_one_stops_the_run_in_one_line_naming_it(session: pytest.Pytester) -> None:
    session.makepyfile(test_one="def test_one():\n    pass\n")
    (session.path / FILE).write_text('{"local": {"test_one.py::test_one": "long"}}')
    out = session.runpytest_subprocess("-n", "2", "-q", "-p", "no:cacheprovider")
    assert out.ret != 0
    assert f"{FILE}: not a durations record" in out.stderr.str(), out.stderr.str()


def test_tests_that_have_the_machine_alone_go_out_before_the_longest_shared_one(session: pytest.Pytester) -> None:
    # An exclusive test waits for the test beside it to end: at the head of the queue that is no long test.
    order = session.path / "order"
    log = ("def _log(name):\n"
           "    import os\n"
           f"    with open({str(order)!r}, 'a') as f:\n"
           "        f.write(os.environ['PYTEST_XDIST_WORKER'] + ' ' + name + '\\n')\n\n")
    session.makepyfile(test_shared=log + "def test_long():\n    _log('long')\n\n"
                                         "def test_short():\n    _log('short')\n")
    for n in (1, 2):
        session.makepyfile(**{f"test_alone{n}": log + f"import pytest\n\n@pytest.mark.{MARKER}\n"
                                                     f"def test_measures():\n    _log('alone{n}')\n"})
    (session.path / FILE).write_text(json.dumps({"local": {
        "test_shared.py::test_long": 300.0, "test_shared.py::test_short": 1.0,
        "test_alone1.py::test_measures": 1.0, "test_alone2.py::test_measures": 1.0}}))
    out = session.runpytest_subprocess("-n", "2", "-q", "-p", "no:randomly", "-p", "no:cacheprovider")
    out.assert_outcomes(passed=4)
    first: dict[str, str] = {}
    for worker, name in (x.split() for x in order.read_text().splitlines()):
        first.setdefault(worker, name)
    assert sorted(first.values()) == ["alone1", "alone2"], first
