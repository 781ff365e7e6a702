"""Ctrl-C ends a kind run while ``kind create cluster`` is under way, and leaves nothing: no node container
of that cluster, no run folder, no process of the run, and no later file run.

A terminal sends SIGINT to the whole foreground process group; schedgate runs every docker and kind
command in a group of its own, so the interruption reaches pytest alone, which ends the command's group
and then deletes what it made (:func:`schedgate.providers.kind.host.run_group`). Before, kind and the
``docker run`` calls under it died with pytest's SIGINT half-way: the run went on with the next file,
and a node container made after kind had listed the nodes to delete was left running.

Needs a Docker engine and the node image of this checkout already built (``make kind-image``): it is
skipped otherwise, saying which. (A Ctrl-C during a test is ``tests/live/test_leaks.py`` with
``SCHEDGATE_LEAK_PROVIDER=kind``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from support import ROOT, our_processes, run_dirs

FILES = ["e2e/scenarios/hard-constraint.scenario.yaml", "e2e/scenarios/spread-racks-hard.scenario.yaml"]


def docker(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, timeout=120)


@pytest.fixture
def node_image() -> str:
    """This checkout's node image, built before (nothing is built here)."""
    try:
        if docker("info").returncode != 0:
            pytest.skip("no Docker engine answers (make docker starts one)")
    except FileNotFoundError:
        pytest.skip("no docker command (make docker installs one)")
    got = subprocess.run([str(ROOT / "scripts" / "kind-image")], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, SCHEDGATE_KIND_NO_BUILD="1", PYTHON=sys.executable))
    if got.returncode == 3:
        pytest.skip(f"the kind node image of this checkout is not built (make kind-image): {got.stderr.strip()}")
    assert got.returncode == 0, got.stderr
    return got.stdout.split()[-1]


def containers_of(cluster: str) -> list[str]:
    return docker("ps", "-a", "--filter", f"label=io.x-k8s.kind.cluster={cluster}", "--format",
                  "{{.Names}}").stdout.split()


# It makes kind containers in the shared Docker engine: under -n it runs alone, since a bad-input test beside it
# counts every kind container before and after its case (CI, 2026-12-05: "a kind node container was left behind").
@pytest.mark.schedgate_exclusive
@pytest.mark.parametrize("to_group", [True, False], ids=["terminal-ctrl-c", "sigint-to-pytest-alone"])
def test_ctrl_c_while_kind_creates_the_cluster_ends_the_run_and_leaves_nothing(tmp_path, node_image, to_group):
    p = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *FILES, "--provider", "kind"],
        cwd=ROOT, env=dict(os.environ, TMPDIR=str(tmp_path), SCHEDGATE_KIND_IMAGE=node_image),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout is not None
    seen: list[str] = []
    cluster = ""
    try:
        deadline = time.monotonic() + 300
        for line in p.stdout:  # the creation's live progress line: kind has been at it for 10 s
            seen.append(line)
            if "kind: create cluster: " in line and "so far" in line:
                break
            assert time.monotonic() < deadline, "no creation under way after 300 s:\n" + "".join(seen[-30:])
        [run] = run_dirs(tmp_path)
        cluster = (run / "kind-cluster").read_text().split()[0]
        assert containers_of(cluster), "kind should be making the cluster's nodes now:\n" + "".join(seen[-30:])
        if to_group:
            os.killpg(p.pid, signal.SIGINT)  # as a terminal does: the whole foreground group
        else:
            p.send_signal(signal.SIGINT)  # as `kill -INT` does
        t0 = time.monotonic()
        rest = p.communicate(timeout=240)[0]
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    out = "".join(seen) + rest
    assert p.returncode == 2, out[-3000:]  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out, out[-3000:]
    assert " passed" not in out and " failed" not in out, "a file ran after the interruption:\n" + out[-3000:]
    assert containers_of(cluster) == [], f"node containers of {cluster} left behind"
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []
    assert took < 200, f"the run took {took:.0f}s to end after SIGINT"
