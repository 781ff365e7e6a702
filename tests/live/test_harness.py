"""The harness itself: bad input, refused configs, crashes and Ctrl-C leave nothing behind.

These start real components (in subprocesses with a private TMPDIR, so what
they leave can be counted) or use the session cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import DATA, ROOT, our_processes, pytest_child, run_dirs, wait_for_exit

from schedgate import ComponentDied, make_pod, scheduled_on, wait_for
from schedgate.workloads.gpu import PACKING


def error_lines(out: str) -> list[str]:
    return [x for x in out.splitlines() if x.startswith("ERROR:") or "schedgate:" in x and "Exit" in x]


@pytest.mark.parametrize(
    "args, expect",
    [
        pytest.param(["--cluster", "tests/data/nope.yaml"], r"tests/data/nope.yaml: no such cluster definition file",
                     id="missing-cluster"),
        pytest.param(["--scheduler-config", "tests/data/nope.yaml"],
                     r"tests/data/nope.yaml: no such scheduler configuration file", id="missing-profile"),
        pytest.param(["--provider", "nowhere"], r"argument --provider: invalid choice: 'nowhere'",
                     id="unknown-provider"),
        pytest.param(["--scheduler-binary", "/nonexistent/kube-scheduler"],
                     r"--scheduler-binary /nonexistent/kube-scheduler: no such file", id="missing-binary"),
        pytest.param(["--kubernetes-version", "v1.30.0"],
                     "--kubernetes-version v1.30.0: schedgate builds the minors it pins (v1.35.",
                     id="other-kubernetes-version"),
    ],
)
def test_bad_input_is_one_line_a_usage_exit_and_nothing_started(tmp_path, args, expect):
    r = pytest_child(tmp_path, "e2e", *args)
    assert r.returncode == 4, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if expect.split(":")[0] in x]
    assert len(lines) == 1 and expect in lines[0], r.stderr
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


@pytest.mark.parametrize("mode, text, expect", [(0o644, "#!/bin/sh\n", "not executable (chmod +x it)"),
                                               (0o755, "kube-scheduler\n", "not a program (neither an ELF")])
def test_a_scheduler_binary_that_cannot_run_is_one_line_before_anything_starts(tmp_path, mode, text, expect):
    """``schedgate up`` and pytest both: before, up started a cluster, then printed a PermissionError traceback."""
    exe = tmp_path / "kube-scheduler"
    exe.write_text(text)
    exe.chmod(mode)
    up = subprocess.run([sys.executable, "-m", "schedgate", "up", "--scheduler-binary", str(exe)], cwd=ROOT,
                        env=dict(os.environ, TMPDIR=str(tmp_path)), capture_output=True, text=True, timeout=120)
    assert up.returncode == 2 and up.stderr.count("\n") == 1, up.stderr
    assert up.stderr.startswith(f"schedgate: --scheduler-binary {exe}: {expect}"), up.stderr
    r = pytest_child(tmp_path, "e2e/scenarios/hard-constraint.scenario.yaml", "--scheduler-binary", str(exe))
    assert r.returncode == 4 and f"--scheduler-binary {exe}: {expect}" in r.stderr, r.stdout + r.stderr
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_a_malformed_cluster_file_names_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    good = (ROOT / "clusters/inference.yaml").read_text()
    bad.write_text(good.replace("nvidia.com/gpu: 8}", "nvidia.com/gpu: -2}", 1))
    r = pytest_child(tmp_path, "e2e", "--cluster", str(bad))
    assert r.returncode == 4
    assert f"ERROR: {bad}: pools[0].capacity.nvidia.com/gpu: must be >= 0, got -2 (line 13)" in r.stderr.splitlines()
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_a_scheduler_that_refuses_its_config_is_reported_in_its_own_words_not_as_a_timeout(tmp_path):
    started = time.monotonic()
    r = pytest_child(tmp_path, "e2e/test_hard_constraint.py", "--scheduler-config",
                     str(DATA / "refused-queue-sort.yaml"))
    took = time.monotonic() - started
    out = r.stdout + r.stderr
    assert r.returncode == 4, out
    line = next(x for x in out.splitlines() if "scheduler gpu-packing-scheduler" in x)
    assert "exited with code" in line and "before it was ready" in line, line
    assert "queue sort" in line.lower() or "queuesort" in line.lower(), line
    assert took < 60, f"took {took:.0f}s: a refused config must not wait out the health timeout"
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_missing_go_toolchain_is_one_line(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "SCHEDGATE_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "schedgate", "tools", "build"], cwd=ROOT,
                       env=dict(os.environ, **env), capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "schedgate: go: toolchain not found on PATH; schedgate builds kube-apiserver, kube-scheduler and etcd "
        "from go/go.mod (install Go 1.26+, or pass --bin-dir with prebuilt binaries)"]


def test_a_mutant_build_is_checked_to_be_that_mutant(tmp_path):
    """The linker ignores an -X for a variable that does not exist: the build check must notice that a
    mutant binary is the correct build (no banner), another mutant, or that a correct one is a mutant."""
    from schedgate.errors import ToolchainError
    from schedgate.runtime.toolchain import _check_version

    def fake(name: str, stderr: str) -> Path:
        exe = tmp_path / name
        exe.write_text(f"#!/bin/sh\necho 'Kubernetes v1.37.2'\necho '{stderr}' >&2\n")
        exe.chmod(0o755)
        return exe

    banner = "schedgate: THIS IS A DELIBERATELY BROKEN BUILD: NetworkSlots mutant leaky-unreserve: it leaks"
    leaky, correct = fake("leaky", banner), fake("correct", "")
    _check_version(leaky, "v1.37.2", "leaky-unreserve")
    _check_version(correct, "v1.37.2", "")
    for exe, mutant, says in [(correct, "leaky-unreserve", "is not the mutant leaky-unreserve"),
                              (leaky, "blocking-permit", "is not the mutant blocking-permit"),
                              (leaky, "", "is a mutant build")]:
        with pytest.raises(ToolchainError, match=says):
            _check_version(exe, "v1.37.2", mutant)
    with pytest.raises(ToolchainError, match="expected Kubernetes v1.38.0"):
        _check_version(leaky, "v1.38.0", "leaky-unreserve")


def test_components_die_with_a_killed_run_and_the_next_run_reaps_its_folder(tmp_path):
    code = (
        "import sys, os, signal\n"
        "from schedgate.spec.cluster import load_definition\n"
        "from schedgate.spec.schedconfig import load_scheduler_config\n"
        "from schedgate.providers import ClusterRequest, start_cluster\n"
        "s = start_cluster(ClusterRequest('local', load_definition('clusters/inference.yaml'),"
        " load_scheduler_config('clusters/profiles/gpu-packing-scheduler.yaml')), out=None)\n"
        "print('up', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, TMPDIR=str(tmp_path)),
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "up" and r.returncode == -signal.SIGKILL, r.stderr
    left = run_dirs(tmp_path)
    assert len(left) == 1, "a SIGKILLed run cannot clean its folder; the next run must"
    # PR_SET_PDEATHSIG: every component got SIGKILL when its parent died.
    wait_for_exit([int(p.split(":")[0]) for p in our_processes(tmp_path)], what=f"components of {left[0]} to exit")
    assert our_processes(tmp_path) == []
    from schedgate.runtime.reap import reap_orphans

    reaped = reap_orphans(tmp_path)
    assert f"folder {left[0]}" in reaped
    assert run_dirs(tmp_path) == []


def test_ctrl_c_during_a_scenario_stops_every_component_and_removes_the_run(tmp_path):
    e = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s",
                          str(DATA / "blocking_scenario.py"), "--rootdir", str(ROOT)],
                         cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         # a shell without job control starts background jobs with SIGINT ignored, and the
                         # child would inherit that: Ctrl-C is what this test sends
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout is not None
    seen = []
    for line in p.stdout:  # the scenario prints once the cluster is up and it is waiting
        seen.append(line)
        if "schedgate-test: waiting" in line:
            break
    assert our_processes(tmp_path), "the cluster should be running now:\n" + "".join(seen)
    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=60)[0]
    assert p.returncode == 2, rest  # pytest's "interrupted"
    assert our_processes(tmp_path) == [] and run_dirs(tmp_path) == []


def test_a_scheduler_crash_fails_the_wait_at_once_instead_of_running_out_the_clock(cluster, ns):
    victim = cluster.scheduler(PACKING)
    pod = make_pod("orphaned").scheduler(PACKING).create(ns)
    wait_for(pod, scheduled_on(cluster.nodes_except("train")))
    assert victim.proc is not None
    os.kill(victim.proc.pid, signal.SIGKILL)  # a crash, not a harness stop
    victim.proc.popen.wait(timeout=10)
    late = make_pod("after-crash").scheduler(PACKING).create(ns)
    started = time.monotonic()
    try:
        with pytest.raises(ComponentDied, match=r"gpu-packing-scheduler exited with code -9"):
            wait_for(late, scheduled_on(cluster.nodes_except("train")), timeout=60)
        assert time.monotonic() - started < 5
    finally:
        cluster.revive()  # leave a working cluster for the next test
    wait_for(late, scheduled_on(cluster.nodes_except("train")), timeout=30)


def test_a_scheduler_started_beside_more_nodes_than_score_lines_suit_logs_no_score_lines(cluster, ns):
    """A performance file adds its 1,000 nodes to a cluster defined with a few, then starts each turn's scheduler:
    it is started with the log flags of the nodes it sees then (no per-node score lines above SCORED_UP_TO), not
    of the definition's size. Its attempts and binds are still logged."""
    from dataclasses import replace

    from schedgate.kube.poll import poll_until
    from schedgate.objects.schedlog import SCORED_UP_TO
    from schedgate.spec.schedconfig import parse_scheduler_config

    like = cluster.definition.nodes()[0]
    names = [f"log-flags-{i}" for i in range(SCORED_UP_TO)]
    cluster.nodes.add_many([replace(like, name=n, pool="log-flags", taints=(), labels={
        **like.labels, "kubernetes.io/hostname": n, "schedgate.io/log-flags": "yes"}) for n in names])
    config = parse_scheduler_config({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                     "kind": "KubeSchedulerConfiguration",
                                     "profiles": [{"schedulerName": "log-flags"}]})
    proc = cluster.start_scheduler(config)
    try:
        pod = make_pod("counted").scheduler("log-flags").require_label("schedgate.io/log-flags", "yes").create(ns)
        wait_for(pod, scheduled_on(names))
        # The bind is logged once the API server has answered it: after the pod is seen bound.
        poll_until(lambda: '"Successfully bound pod to node" pod="' in proc.log_path.read_text(),  # type: ignore
                   "the bind in the scheduler's log", 10)
        assert "Plugin scored node for pod" not in proc.log_path.read_text(), \
            f"score lines logged beside {cluster.node_count()} nodes"  # type: ignore[union-attr]
    finally:
        cluster.stop_scheduler(proc)
        cluster.nodes.remove_added(names)


def test_apply_keeps_api_discovery_in_memory_and_reads_no_cache_planted_in_the_temporary_folder(cluster, ns):
    """The client's default discovery cache is ``$TMPDIR/osrcp-<md5 of the server's address>.json``: left behind
    by every run, and read by the next client of that address, whoever planted it."""
    import hashlib
    import json
    import tempfile

    import kubernetes

    from schedgate.kube.objects import Objects

    host = cluster.api.configuration.host
    planted = Path(tempfile.gettempdir()) / f"osrcp-{hashlib.md5(host.encode()).hexdigest()}.json"
    text = json.dumps({"library_version": kubernetes.__version__, "resources": {"planted": "by another user"}})
    planted.write_text(text)
    try:
        objects = Objects(cluster.api, ns.name)
        ref = objects.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "discovered"}})
        assert (ref.kind, ref.namespace) == ("ConfigMap", ns.name)
        assert cluster.core.read_namespaced_config_map("discovered", ns.name).metadata.name == "discovered"
        assert planted.read_text() == text, "the planted cache was read or written"
    finally:
        planted.unlink()
