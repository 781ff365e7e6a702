"""A kind node's container process, seen from this machine: whether a static pod's container still runs,
without a ``docker exec``.

A kind node is a Docker container on this machine's kernel, so the processes its containerd starts are this
machine's processes too, each in a cgroup named after its CRI container (``…/cri-containerd-<id>.scope``).
Reading ``/proc`` answers "is that container's process alive" in microseconds; a ``docker exec … crictl ps``
costs dockerd, containerd, a runc exec and crictl about a tenth of a second of CPU each time, which on two
cores is noise in the very CPU a performance file measures. Where the engine runs elsewhere (a remote
``DOCKER_HOST``) no process matches, and the caller lists containers through crictl as before.
"""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def _cgroups(pid: str, proc: Path) -> str:
    try:
        return (proc / pid / "cgroup").read_text()
    except OSError:  # gone meanwhile, or not ours to read
        return ""


def container_pid(container_id: str, proc: Path = PROC) -> int | None:
    """The process of CRI container ``container_id`` (its first, the container's main process), if this
    machine's ``/proc`` shows it."""
    scope = f"cri-containerd-{container_id}.scope"
    pids = sorted((p.name for p in proc.iterdir() if p.name.isdigit()), key=int)
    return next((int(pid) for pid in pids if scope in _cgroups(pid, proc)), None)


def runs(pid: int, container_id: str, proc: Path = PROC) -> bool:
    """Whether ``pid`` is still that container's process and has not exited (a zombie has)."""
    if f"cri-containerd-{container_id}.scope" not in _cgroups(str(pid), proc):
        return False  # gone, or the number taken by another process since
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
