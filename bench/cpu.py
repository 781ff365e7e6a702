"""Where a run's CPU goes, per process: every process under one root pid, read from /proc while it runs.

A process's CPU (user + system, from /proc/PID/stat) is read every ``interval`` seconds; its last reading
counts when it exits, so a process that lives less than one interval can be missed, and each one's last
interval is lost (the table says how many processes it saw). Processes are grouped by what they are:
etcd, kube-apiserver, kube-controller-manager, kube-scheduler (the default scheduler and each scheduler
under test or baseline alike), the Python side (pytest and its workers), and everything else by name.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
KNOWN = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of ``pid``, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid ... utime(14) stime(15)
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK


def _group(pid: int) -> str:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return "?"
    name = Path(argv0).name
    if name.startswith("kube-scheduler"):
        return "kube-scheduler"
    if name in KNOWN:
        return name
    if name.startswith("python"):
        return "python (pytest, workers)"
    return name or "?"


def _pids() -> Iterator[int]:
    for d in os.listdir("/proc"):
        if d.isdigit():
            yield int(d)


@dataclass
class CpuSplit:
    """Polls the processes under ``root`` (itself included) until :meth:`stop`."""

    root: int
    interval: float = 0.5
    seen: dict[int, tuple[str, float]] = field(default_factory=dict)  # pid -> (group, last CPU seconds)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> CpuSplit:
        self._thread = threading.Thread(target=self._run, name="bench-cpu", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval)

    def poll(self) -> None:
        stats = {pid: s for pid in _pids() if (s := _stat(pid)) is not None}
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        todo = [self.root]
        while todo:
            pid = todo.pop()
            if pid in stats:
                group = _group(pid)  # read each time: an exec changes what the process is
                if group == "?" and pid in self.seen:
                    group = self.seen[pid][0]
                self.seen[pid] = (group, stats[pid][1])
            todo.extend(children.get(pid, ()))

    def stop(self) -> dict[str, float]:
        """CPU seconds by group, largest first."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        out: dict[str, float] = {}
        for group, cpu in self.seen.values():
            out[group] = out.get(group, 0.0) + cpu
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def print_split(split: dict[str, float], wall: float, processes: int, width: int) -> None:
    total = sum(split.values())
    for group, cpu in split.items():
        print(f"   {group:<{width}} {cpu:8.1f} s  {100 * cpu / total if total else 0:5.1f} %")
    print(f"   {'total':<{width}} {total:8.1f} s  in {wall:.1f} s of wall time ({total / wall if wall else 0:.2f} "
          f"cores busy; {processes} processes seen)")
