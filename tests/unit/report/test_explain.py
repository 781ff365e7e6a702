"""Why, per node: the scheduler's own log read back — attempts, scores per plugin and node, the filters
that rejected nodes where the log names them — in explain.txt, ``--explain`` and placement.html."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from browser import pixels, screenshot
from support import DATA

from schedgate.objects.schedlog import LOG_FLAGS, SCORED_UP_TO, log_flags, parse
from schedgate.report.explain import CHOSEN, REJECTED, explain, explain_text

ROOT = Path(__file__).resolve().parents[3]
# Lines as the pinned kube-scheduler writes them with LOG_FLAGS (from a local run, shortened).
LOG = (DATA / "kube-scheduler-explain.log").read_text()


def nodes(*names: str, cordoned: tuple[str, ...] = ()) -> list[dict[str, object]]:
    return [{"metadata": {"name": n}, "spec": {"unschedulable": n in cordoned}} for n in names]


def test_the_log_gives_attempts_scores_and_the_filters_it_names():
    logs = parse(LOG.splitlines())
    later = logs["t/later"]
    assert later.cycles == 2 and len(later.attempts) == 2
    first, second = later.attempts
    assert first.bound_to is None and "2 Insufficient cpu" in (first.failure or "")
    assert first.rejecting == ("NodeResourcesFit", "NodeUnschedulable", "TaintToleration")
    assert first.node_reasons == {"train-1": "TaintToleration: untolerated taint dedicated=training:NoSchedule"}
    assert second.bound_to == "a" and second.totals == {"a": 398, "b": 341}
    assert second.scores["b"] == {"TaintToleration": 300, "NodeResourcesFit": 41}
    assert logs["t/broken"].attempts[0].error and "NetworkSlots" in (logs["t/broken"].attempts[0].failure or "")


def test_each_node_gets_the_verdict_the_log_supports_and_no_more():
    logs = parse(LOG.splitlines()[:4])  # the failed attempt only
    pod = {"metadata": {"namespace": "t", "name": "later"}, "spec": {"schedulerName": "s"}}
    (e,) = explain([pod], logs, nodes("a", "b", "train-1", "cordoned", cordoned=("cordoned",)))
    verdict = {r.node: r.verdict for r in e.rows}
    # The node the taint line names; NodeUnschedulable only for the cordoned node; the one plugin left.
    assert verdict["train-1"].startswith("TaintToleration: untolerated taint")
    assert verdict["a"] == verdict["b"] == "NodeResourcesFit"
    assert verdict["cordoned"] == "one of NodeResourcesFit, NodeUnschedulable"
    assert e.outcome.startswith("unschedulable: 0/4 nodes are available")
    (e,) = explain([pod], parse(LOG.splitlines()), nodes("a", "b", "train-1"))
    assert [(r.node, r.verdict, r.total) for r in e.rows][:2] == [("a", "chosen", 398), ("b", "feasible", 341)]
    text = explain_text([e])
    assert "2 attempt(s); last: bound to a" in text and "TaintToleration  NodeResourcesFit" in text


def test_score_lines_are_left_off_above_the_size_where_they_slow_the_scheduler():
    assert log_flags(SCORED_UP_TO) == LOG_FLAGS
    big = " ".join(log_flags(SCORED_UP_TO + 1))
    assert "schedule_one=3," in big and "schedule_one=10" not in big
    assert "dynamicresources=5" in big and "--v=2" in big  # attempts, binds and claims are still logged


def test_a_bind_among_several_feasible_nodes_without_score_lines_claims_no_verdict():
    lines = ['I1202 01:00:00.000001   1 schedule_one.go:117] "Attempting to schedule pod" pod="t/big"',
             'I1202 01:00:00.020000   1 schedule_one.go:483] "Successfully bound pod to node" pod="t/big" '
             'node="a" evaluatedNodes=300 feasibleNodes=250']
    pod = {"metadata": {"namespace": "t", "name": "big"}, "spec": {"schedulerName": "s"}}
    (e,) = explain([pod], parse(lines), nodes("a", "b"))
    assert [(r.node, r.verdict) for r in e.rows] == [("a", "chosen"), ("b", "no verdict: scores not logged")]
    assert "250 feasible nodes; no score lines" in e.note


@pytest.mark.live
def test_repro_explain_shows_filter_reasons_and_scores_for_the_capacity_scenario(tmp_path):
    scenario = ROOT / "e2e" / "scenarios" / "capacity-fragmentation.scenario.yaml"
    r = subprocess.run([sys.executable, "-m", "schedgate", "repro", str(scenario), "--explain",
                        "--artifacts", str(tmp_path / "artifacts")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:]
    shown = r.stdout.split("schedgate explain", 1)[1]
    # A pod of the scenario: the tainted training node rejected by name, each network node's scores.
    assert "infer-1 (scheduler gpu-packing-scheduler)" in shown, shown[:2000]
    assert "train-1" in shown and "TaintToleration: untolerated taint schedgate.io/dedicated=training:NoSchedule" \
        in shown
    assert "NodeResourcesFit" in shown and "chosen" in shown
    (folder,) = list((tmp_path / "artifacts").iterdir())
    assert (folder / "explain.txt").read_text() in shown
    page = folder / "placement.html"
    assert "why, per node" in page.read_text()
    seen = pixels(screenshot(page, tmp_path / "shot.png", size=(1600, 9000)))
    assert seen[CHOSEN] > 1000, f"no chosen row rendered: {seen.most_common(8)}"
    assert seen[REJECTED] > seen[CHOSEN], "rejected rows (four kinds of node) outnumber the chosen one"
