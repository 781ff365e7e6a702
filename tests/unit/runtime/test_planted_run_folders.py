"""Run folders planted in a shared temporary folder: another user's, a link, one open to others, one of ours
whose files point elsewhere. The reaper reads only this user's 0700 folders, runs nothing a folder names, and
writes to no cluster a folder chooses."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from schedgate.kube.journal import JOURNAL
from schedgate.runtime.procs import RUN_PREFIX
from schedgate.runtime.reap import foreign, reap_orphans, remove_run, run_dirs, run_pids

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[3]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a folder another user owns")


@pytest.fixture
def listener():
    """A TCP port on loopback that records whether anything connected: the API server a journal names."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)

    def connected() -> bool:
        try:
            s.accept()[0].close()
            return True
        except BlockingIOError:
            return False

    yield s.getsockname()[1], connected
    s.close()


@pytest.fixture
def our_docker(tmp_path, monkeypatch):
    """This process's own ``docker`` (first on its PATH): records its calls, lists one container of any cluster."""
    bin_dir = tmp_path / "own-bin"
    bin_dir.mkdir()
    calls = tmp_path / "own-docker-calls"
    (bin_dir / "docker").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n'
                                    '[ "$1" = ps ] && echo c0ffee\nexit 0\n')
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls


def _plant(tmp: Path, name: str, port: int, marker: Path) -> Path:
    """A run folder whose owner is dead, whose kind-cluster line names a PATH of planted programs and a
    kubeconfig, and whose journal names a kubeconfig of a server on ``port``."""
    run = tmp / f"{RUN_PREFIX}{name}"
    run.mkdir(mode=0o700)
    evil = run / "bin"
    evil.mkdir()
    for tool in ("kind", "docker", "kubectl"):
        (evil / tool).write_text(f"#!/bin/sh\nid -u > {marker}\n")
        (evil / tool).chmod(0o755)
    kubeconfig = run / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    (run / "owner").write_text("0 0\n")
    (run / "kind-cluster").write_text(f"schedgate-inference-{name}\n{evil}\n{kubeconfig}\n")
    (run / JOURNAL).write_text(json.dumps({
        "kubeconfig": str(kubeconfig), "context": None, "nodes": {"gpu-net-1": {}}, "status_owned": [],
        "created": [{"kind": "Namespace", "namespace": "", "name": "production"},
                    {"kind": "ClusterRoleBinding", "namespace": "", "name": "cluster-admin"}],
        "sweep_namespaces": True, "namespaces_before": [], "leases_before": {}}))
    old = time.time() - 3600
    os.utime(run, (old, old))
    return run


def _tree(run: Path) -> list[str]:
    return sorted(str(p.relative_to(run)) for p in run.rglob("*"))


@as_root
def test_a_folder_of_another_user_is_named_once_and_nothing_of_it_is_read_run_or_deleted(
        tmp_path, listener, our_docker, caplog):
    port, connected = listener
    marker = tmp_path / "planted-program-ran"
    run = _plant(tmp_path, "nobody1", port, marker)
    for p in [run, *run.rglob("*")]:
        os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
    before = _tree(run)
    caplog.set_level(logging.WARNING, "schedgate")

    assert foreign(run) == f"owned by uid {NOBODY}, not by this user (uid 0)"
    assert reap_orphans(tmp_path) == [] and reap_orphans(tmp_path, kubeconfig=run / "kubeconfig") == []
    assert run_dirs(tmp_path) == []
    assert _tree(run) == before, "a folder of another user must stay as it is"
    assert not marker.exists() and not our_docker.exists() and not connected()
    named = [r.getMessage() for r in caplog.records if str(run) in r.getMessage()]
    assert named == [f"{run}: owned by uid {NOBODY}, not by this user (uid 0); left alone"]
    with pytest.raises(Exception, match="schedgate reads and removes only its own run folders"):
        remove_run(run)
    assert _tree(run) == before


def test_a_link_or_a_folder_open_to_others_is_left_alone(tmp_path, listener, our_docker, caplog):
    port, connected = listener
    marker = tmp_path / "planted-program-ran"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = _plant(elsewhere, "target", port, marker)
    link = tmp_path / f"{RUN_PREFIX}link"
    link.symlink_to(target)
    open_run = _plant(tmp_path, "open", port, marker)
    open_run.chmod(0o755)
    os.utime(open_run, (time.time() - 3600,) * 2)
    caplog.set_level(logging.WARNING, "schedgate")

    assert reap_orphans(tmp_path) == [] and run_dirs(tmp_path) == []
    assert target.is_dir() and (target / JOURNAL).exists() and (open_run / JOURNAL).exists()
    assert not marker.exists() and not our_docker.exists() and not connected()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert f"{link}: a symbolic link; left alone" in said
    assert f"{open_run}: mode 0755, open to other users (a run folder is 0700); left alone" in said


def test_our_own_folder_runs_nothing_it_names_and_writes_to_no_cluster_it_names(
        tmp_path, listener, our_docker, caplog):
    """The kind cluster goes with this process's docker; the journal's cluster is not written to (the folder
    is kept and named with the command that undoes it)."""
    port, connected = listener
    marker = tmp_path / "planted-program-ran"
    run = _plant(tmp_path, "ours1", port, marker)
    caplog.set_level(logging.WARNING, "schedgate")

    reaped = reap_orphans(tmp_path)
    assert reaped == ["kind cluster schedgate-inference-ours1"]
    assert not marker.exists(), "a program the folder named ran"
    assert our_docker.read_text().splitlines() == [
        "ps -aq --filter label=io.x-k8s.kind.cluster=schedgate-inference-ours1", "rm -f -v c0ffee"]
    assert not connected(), "the reaper wrote to a cluster the folder named"
    assert run.is_dir() and (run / JOURNAL).exists()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert f"`schedgate reap --kubeconfig {run / 'kubeconfig'}` puts that cluster back" in said


def test_a_kind_cluster_name_schedgate_never_gives_is_not_acted_on(tmp_path, our_docker):
    run = tmp_path / f"{RUN_PREFIX}other"
    run.mkdir(mode=0o700)
    (run / "owner").write_text("0 0\n")
    (run / "kind-cluster").write_text("kind\n")  # somebody's own kind cluster, not one of schedgate's
    assert remove_run(run) == [f"folder {run}"]
    assert not our_docker.exists() and not run.exists()


def test_bookkeeping_files_that_block_or_never_end_are_not_read(tmp_path, our_docker):
    run = tmp_path / f"{RUN_PREFIX}fifos"
    run.mkdir(mode=0o700)
    os.mkfifo(run / "owner")
    os.mkfifo(run / "kind-cluster")
    (run / "pids").symlink_to("/dev/zero")
    (run / JOURNAL).symlink_to("/dev/zero")
    os.utime(run, (time.time() - 3600,) * 2)
    started = time.monotonic()
    assert run_pids(run) == []
    assert reap_orphans(tmp_path) == [f"folder {run}"]
    assert time.monotonic() - started < 5
    assert not run.exists() and not our_docker.exists()


def test_a_listed_pid_that_is_not_the_runs_own_child_is_not_killed(tmp_path, our_docker):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        run = tmp_path / f"{RUN_PREFIX}pids"
        run.mkdir(mode=0o700)
        (run / "owner").write_text("0 0\n")
        (run / "pids").write_text(f"{bystander.pid} kube-scheduler\n{os.getpid()} etcd\n")
        assert remove_run(run) == [f"folder {run}"]
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@as_root
def test_schedgate_reap_and_down_leave_another_users_folder_alone_in_one_line(tmp_path, listener):
    port, connected = listener
    marker = tmp_path / "planted-program-ran"
    run = _plant(tmp_path, "nobody2", port, marker)
    for p in [run, *run.rglob("*")]:
        os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    reap = subprocess.run([sys.executable, "-m", "schedgate", "reap"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert reap.returncode == 0 and reap.stdout == "", reap.stdout + reap.stderr
    assert reap.stderr.count(str(run)) == 1 and "left alone" in reap.stderr, reap.stderr
    down = subprocess.run([sys.executable, "-m", "schedgate", "down", str(run)], env=env, capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert down.returncode == 2 and down.stderr.count("\n") == 1, down.stderr
    assert "not by this user" in down.stderr, down.stderr
    assert run.is_dir() and not marker.exists() and not connected()
    assert stat.S_IMODE(run.stat().st_mode) == 0o700 and run.stat().st_uid == NOBODY
