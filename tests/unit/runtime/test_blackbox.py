"""A black-box scheduler under test: its file, what scenarios need of it, and how it fails to start."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from support import our_processes, pytest_child, run_dirs  # noqa: E402

from schedgate import ComponentDied, make_pod, scheduled_on, unschedulable, wait_for
from schedgate.errors import DefinitionError
from schedgate.pytest_plugin.blackbox import skip_unmet
from schedgate.scenarios.load import load_scenario
from schedgate.scenarios.needs import found
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[3]
HEAD = "apiVersion: schedgate.io/v1alpha1\nkind: BlackBoxScheduler\n"


def box(tmp: Path, body: str) -> Path:
    f = tmp / "box.yaml"
    f.write_text(HEAD + body)
    return f


@pytest.mark.parametrize("body, field, problem", [
    ("command: []\n", "command", "required: the program and its arguments"),
    ("command: [x, '--a={kubecfg}']\n", "command[1]", "unknown placeholder {kubecfg}"),
    ("command: [x]\nreadyURL: localhost:1\n", "readyURL", "must be an http:// or https:// URL"),
    ("command: [x]\nprovides: [metricz]\n", "provides[0]", "unknown capability 'metricz'"),
    ("command: [x]\nprovides: [kube-scheduler]\n", "provides[0]", "unknown capability 'kube-scheduler'"),
    ("command: [x]\nstartTimeout: 0\n", "startTimeout", "must be seconds from 1 to 600"),
    ("command: [x]\nimage: y\n", "image", "unknown field"),
    ("command: [x]\nschedulerName: Not_A_Name\n", "schedulerName", "must be a DNS name"),
])
def test_a_bad_black_box_file_is_one_error_naming_its_field(tmp_path, body, field, problem):
    f = box(tmp_path, body)
    with pytest.raises(DefinitionError) as e:
        load_scheduler_config(f)
    assert e.value.field == field and problem in str(e.value), str(e.value)
    assert str(e.value).startswith(str(f)), str(e.value)


def test_a_black_box_fills_its_placeholders_and_stands_in_for_a_profile(tmp_path):
    cfg = load_scheduler_config(box(tmp_path, "command: [./s, '--kubeconfig={kubeconfig}', '-n={name}']\n"))
    assert cfg.black_box is not None and not cfg.black_box.named
    assert cfg.standing_in_for("gpu-packing-scheduler").profile_names == ["gpu-packing-scheduler"]
    assert cfg.black_box.argv({"kubeconfig": "/k", "name": "n"}) == ["./s", "--kubeconfig=/k", "-n=n"]
    assert cfg.unthrottled() is cfg  # its client is its own


def test_shipped_scenarios_say_what_they_need_of_a_scheduler():
    hard = load_scenario(ROOT / "e2e/scenarios/hard-constraint.scenario.yaml")
    assert set(hard.needs) == {"messages", "metrics"}
    assert hard.needs["metrics"].startswith("steps[") and hard.needs["metrics"].endswith(".expect.metric")
    pool = load_scenario(ROOT / "e2e/scenarios/pool-gpu-capacity.scenario.yaml")
    assert set(pool.needs) == {"messages"}
    assert found({"steps": [{"createPods": {"pod": {"spec": {"topologySpreadConstraints": []}}}}]}) == {
        "topology-spread": "steps[0].createPods.pod.spec.topologySpreadConstraints"}


def test_a_scenario_needing_what_a_black_box_lacks_is_skipped_saying_why(tmp_path):
    cfg = load_scheduler_config(box(tmp_path, "command: [x]\nprovides: [messages]\n")).standing_in_for("p")
    skip_unmet(cfg, {"messages": "steps[1].expect.unschedulable.message"}, "f.yaml")  # provided: runs
    with pytest.raises(pytest.skip.Exception) as e:
        skip_unmet(cfg, {"metrics": "steps[3].expect.metric", "messages": "x"}, "f.yaml")
    assert str(e.value) == (f"schedgate: f.yaml needs metrics: it reads kube-scheduler's /metrics "
                            f"(steps[3].expect.metric); the scheduler under test, p, is a black box "
                            f"({tmp_path / 'box.yaml'}) that does not provide it")


def test_an_unknown_required_capability_is_refused_with_its_line(tmp_path):
    f = tmp_path / "x.scenario.yaml"
    f.write_text((ROOT / "e2e/scenarios/pool-gpu-capacity.scenario.yaml").read_text()
                 .replace("scheduler: pool\n", "scheduler: pool\nrequires: [telepathy]\n")
                 .replace("../../clusters/", f"{ROOT}/clusters/"))
    with pytest.raises(DefinitionError, match=r"requires\[0\]: unknown capability or feature 'telepathy'"):
        load_scenario(f)


@pytest.mark.parametrize("command, timeout, expect", [
    ('[sh, -c, "echo my-scheduler: cannot load plugins >&2; exit 3"]', 60,
     "exited with code 3: my-scheduler: cannot load plugins"),
    ("[sleep, '600']", 3, "never bound its probe pod"),
], ids=["dies", "never-binds"])
@pytest.mark.live
def test_a_black_box_that_dies_or_never_binds_its_probe_fails_in_one_line_naming_it(tmp_path, command, timeout,
                                                                                     expect):
    f = box(tmp_path, f"command: {command}\nstartTimeout: {timeout}\nprovides: [messages]\n")
    r = pytest_child(tmp_path, "e2e/scenarios/pool-gpu-capacity.scenario.yaml", "--pool-scheduler-config", str(f))
    out = r.stdout + r.stderr
    assert r.returncode in (1, 4), out
    # The error's one line (pytest's short summary repeats it where CI is set: it does not truncate there).
    lines = [x for x in out.splitlines() if expect in x and not x.startswith("ERROR ")]
    assert len(lines) == 1 and "pool-scheduler" in lines[0], out
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


@pytest.mark.live
def test_overcommitted_fails_when_the_node_holds_no_more_than_it_has(tmp_path):
    text = (ROOT / "e2e/scenarios/two-schedulers-one-node.scenario.yaml").read_text()
    f = tmp_path / "fits.scenario.yaml"
    f.write_text(text.replace("{template: whole-node, name: rival,", "{template: whole-node, gpus: 0, name: rival,"))
    r = pytest_child(tmp_path, str(f), "--artifacts-on", "never")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "steps[5] expect" in out and "gpu-1: its bound pods ask for 8 nvidia.com/gpu of 8 allocatable, not more" \
        in out, out


@pytest.mark.live
def test_a_black_box_that_crashes_fails_the_wait_at_once(cluster, ns):
    pool = cluster.start_scheduler(load_scheduler_config(ROOT / "clusters/profiles/pool-scheduler.yaml")
                                   .standing_in_for("crash-probe"))
    try:
        first = make_pod("first").scheduler("crash-probe").label("tenant-id", "nobody").create(ns)
        wait_for(first, unschedulable("were not in the pod's tenant pool"))  # it runs and answers
        assert pool.proc is not None
        os.kill(pool.proc.pid, signal.SIGKILL)  # a crash, not a harness stop
        pool.proc.popen.wait(timeout=10)
        late = make_pod("late").scheduler("crash-probe").create(ns)
        started = time.monotonic()
        with pytest.raises(ComponentDied, match=r"crash-probe exited with code -9"):
            wait_for(late, scheduled_on(cluster.nodes_except("train")), timeout=60)
        assert time.monotonic() - started < 5
    finally:
        cluster.stop_scheduler(pool)
