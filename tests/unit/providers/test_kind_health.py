"""A kind scheduler's health is asked at every wait and barrier; each answer from crictl is a docker exec.
One listing answers for HEALTH_EVERY seconds, a death is still seen after it, and starting or stopping
lists afresh. No Docker needed: the control plane's listing is counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from schedgate.errors import ComponentError
from schedgate.providers.kind import scheduler as kind_scheduler
from schedgate.providers.kind.hostproc import container_pid, runs
from schedgate.providers.kind.scheduler import HEALTH_EVERY, PodScheduler
from schedgate.spec.schedconfig import default_scheduler_config


@dataclass
class Plane:
    """kind's control plane as the scheduler sees it: its containers, newest first, and how often asked."""

    listed: list[dict[str, Any]] = field(default_factory=list)
    asked: int = 0
    files: dict[str, str] = field(default_factory=dict)  # in the container
    runtime_logs: dict[str, str] = field(default_factory=dict)  # crictl logs, by container id
    container: str = "c-control-plane"
    address: str = "127.0.0.1"

    def containers(self, pod: str) -> list[dict[str, Any]]:
        self.asked += 1
        return list(self.listed)

    def read(self, path: str, start: int = 0) -> bytes:
        return self.files.get(path, "").encode()[start:]

    def log(self, container_id: str) -> str:
        return self.runtime_logs.get(container_id, "")


def running(attempt: int) -> dict[str, Any]:
    return {"state": "CONTAINER_RUNNING", "metadata": {"attempt": attempt}, "createdAt": attempt}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(kind_scheduler.time, "monotonic", lambda: now[0])
    return now


def scheduler(plane: Plane, run_dir: Path = Path("/nonexistent")) -> PodScheduler:
    return PodScheduler(name="s", config=default_scheduler_config(), effective=None, config_path=Path("x"),
                        image="i", node=plane, run_dir=run_dir)  # type: ignore[arg-type]


def test_health_asked_again_and_again_lists_the_containers_once_per_interval(clock: list[float]) -> None:
    plane = Plane(listed=[running(0)])
    s = scheduler(plane)
    for _ in range(20):
        assert s.alive() and not s.died() and not s.is_down()
    assert plane.asked == 1
    clock[0] += HEALTH_EVERY
    assert not s.died()
    assert plane.asked == 2


def test_a_crash_or_a_restart_is_seen_once_the_interval_has_passed(clock: list[float]) -> None:
    plane = Plane(listed=[running(0)])
    s = scheduler(plane)
    assert not s.died()
    plane.listed = [{"state": "CONTAINER_EXITED", "metadata": {"attempt": 0}, "createdAt": 0}]
    clock[0] += HEALTH_EVERY / 2
    assert not s.died()  # the last listing still answers
    clock[0] += HEALTH_EVERY / 2
    assert s.died() and s.is_down()
    plane.listed = [running(1)]  # the kubelet restarted it: a restart the harness did not ask for
    clock[0] += HEALTH_EVERY
    assert s.alive() and s.died()


def test_starting_and_stopping_list_afresh(clock: list[float]) -> None:
    plane = Plane(listed=[running(0)])
    s = scheduler(plane)
    assert s.alive()
    plane.listed = []
    assert s._running() is None  # what start and stop wait on: never the cached listing
    assert plane.asked == 2


def fake_proc(root: Path, processes: dict[int, tuple[str, str]]) -> Path:
    """A /proc of these processes: pid -> (the CRI container its cgroup names, its state letter)."""
    for pid, (container, state) in processes.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "cgroup").write_text(
            f"9:name=systemd:/docker/abc/kubelet.slice/pod1.slice/cri-containerd-{container}.scope\n")
        (root / str(pid) / "stat").write_text(f"{pid} (kube-scheduler) {state} 1 1\n")
    (root / "self").mkdir(exist_ok=True)
    return root


def test_a_containers_process_is_found_in_proc_and_its_exit_or_replacement_seen(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {40: ("other", "S"), 57: ("c1", "S"), 58: ("c1", "S")})
    assert container_pid("c1", proc) == 57 and container_pid("c9", proc) is None
    assert runs(57, "c1", proc) and not runs(40, "c1", proc), "a number another container's process holds"
    (proc / "57" / "stat").write_text("57 (kube-scheduler) Z 1 1\n")
    assert not runs(57, "c1", proc), "exited, not yet reaped"
    assert not runs(99, "c1", proc), "gone"


def test_once_its_process_is_known_health_is_read_from_proc_and_never_listed(
        clock: list[float], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = fake_proc(tmp_path, {57: ("c1", "S")})
    monkeypatch.setattr(kind_scheduler, "container_pid", lambda cid: container_pid(cid, proc))
    monkeypatch.setattr(kind_scheduler, "runs", lambda pid, cid: runs(pid, cid, proc))
    monkeypatch.setattr(PodScheduler, "_healthy", lambda self: True)
    plane = Plane(listed=[{**running(0), "id": "c1"}])
    s = scheduler(plane)
    s.wait_healthy(timeout=1)
    asked = plane.asked
    for _ in range(50):
        clock[0] += HEALTH_EVERY
        assert s.alive() and not s.died()
    assert plane.asked == asked, "no crictl listing once the process is known"
    (proc / "57" / "stat").write_text("57 (kube-scheduler) Z 1 1\n")
    assert s.died() and s.is_down()


def test_its_log_is_its_launchs_file_kept_once_the_file_is_gone_and_an_early_exit_says_its_last_line(
        clock: list[float], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plane = Plane()
    s = scheduler(plane, tmp_path)
    s.launch_number = 7
    assert s.log_file == "/var/log/schedgate-schedulers/schedgate-scheduler-s-7.log"
    plane.files[s.log_file] = "I1207 line one\nI1207 line two\n"
    assert s.logs() == "I1207 line one\nI1207 line two\n" and s.log_tail(1) == ["I1207 line two"]
    del plane.files[s.log_file]  # removed with the launch: what was read last stays
    assert s.log_tail(1) == ["I1207 line two"]
    # A container that exited before it was ready: its log's last line, else what the runtime kept of it (an
    # error of schedgate-logto itself, before the file was opened).
    monkeypatch.setattr(PodScheduler, "_healthy", lambda self: False)
    plane.listed = [{"state": "CONTAINER_EXITED", "id": "c1", "metadata": {"attempt": 0}, "createdAt": 1}]
    plane.files[s.log_file] = "E1207 bad flag --nope\n"
    with pytest.raises(ComponentError, match="exited before it was ready: E1207 bad flag --nope"):
        s._ready()
    fresh = scheduler(plane, tmp_path / "other")
    fresh.launch_number = 8
    plane.runtime_logs["c1"] = "schedgate-logto: open /var/log/x: permission denied\n"
    with pytest.raises(ComponentError, match="schedgate-logto: open /var/log/x: permission denied"):
        fresh._ready()
    # kubeadm's own, never launched by schedgate: the runtime keeps its log
    kubeadms = scheduler(plane, tmp_path / "kubeadm")
    assert kubeadms.logs() == "schedgate-logto: open /var/log/x: permission denied\n"
