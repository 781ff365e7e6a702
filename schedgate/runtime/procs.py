"""Processes and temp folders a run owns, and nothing left behind.

Every run gets a private folder ``$TMPDIR/schedgate-run-*`` holding its
kubeconfigs, certificates, etcd data and component logs, plus two bookkeeping
files: ``owner`` (the pid and start time of the Python process that made it)
and ``pids`` (every child started). Children:

* die with their owner (``PR_SET_PDEATHSIG``), so even a SIGKILLed pytest
  leaves no component running;
* are stopped in reverse start order on a normal exit, on Ctrl-C, on SIGTERM
  (which unwinds like Ctrl-C) and at interpreter exit;
* are reaped, with their folder, by the next run if both of the above were
  somehow skipped (:func:`schedgate.runtime.reap.reap_orphans`; by hand: ``schedgate reap``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from schedgate.errors import ComponentError
from schedgate.runtime.introspect import task_cpu_seconds

RUN_PREFIX = "schedgate-run-"
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_SETPRIV = shutil.which("setpriv")


def _tied_to_parent(argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
    """``argv`` made to die with this process.

    util-linux's ``setpriv --pdeathsig KILL`` sets the signal and execs the
    component (same pid, same command line). Only without it does Python's
    ``preexec_fn`` do the job, which is unsafe while other threads run.
    """
    if _SETPRIV:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv], None
    return argv, _die_with_parent


def start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: starttime


def cmdline_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Component(Protocol):
    """A part of the system under test whose death fails the running test."""

    name: str
    expected_exit: bool

    def alive(self) -> bool: ...

    def died(self) -> bool:
        """It stopped (or was restarted by its own supervisor) without the harness asking it to."""

    @property
    def returncode(self) -> int | None: ...

    @property
    def log(self) -> Path: ...

    def log_tail(self, lines: int = ...) -> list[str]: ...


@dataclass
class Proc:
    """A component process with its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    argv: Sequence[str]
    expected_exit: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def died(self) -> bool:
        return not self.alive() and not self.expected_exit

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def log_tail(self, lines: int = 20) -> list[str]:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except OSError:
            return []
        return text.splitlines()[-lines:]

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; waits for the exit."""
        self.expected_exit = True
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL, as a crash would; waits for the exit."""
        self.expected_exit = True
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)


class ProcessHandle:
    """What a component the harness runs (a scheduler) offers of its current process, ``proc``: whether it
    runs, died or was stopped, stop and kill, its log. A subclass sets ``proc`` when it starts one."""

    proc: Proc | None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def is_down(self) -> bool:
        """Started once and not running now (stopped or dead): what ``Cluster.revive`` restarts."""
        return self.proc is not None and not self.proc.alive()

    def died(self) -> bool:
        """True when the process exited without the harness asking it to."""
        return self.proc is not None and not self.proc.alive() and not self.proc.expected_exit

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()

    def kill(self) -> None:
        """SIGKILL the process, as a crash would."""
        if self.proc:
            self.proc.kill()

    def log_tail(self, lines: int = 30) -> list[str]:
        return self.proc.log_tail(lines) if self.proc else []

    @property
    def log_path(self) -> Path | None:
        return self.proc.log if self.proc else None

    def cpu_seconds(self) -> float | None:
        """The running process's CPU time so far, to the nanosecond: the sum of its threads' run time
        (``/proc/<pid>/task/*/schedstat``); ``None`` when it does not run. ``process_cpu_seconds_total`` in
        its /metrics counts clock ticks (10 ms), a few per cent of a short measurement."""
        if self.proc is None or not self.proc.alive():
            return None
        return task_cpu_seconds(self.proc.pid)


@dataclass
class RunDir:
    """A run's private folder and the processes started in it."""

    path: Path
    keep: bool = False
    procs: list[Proc] = field(default_factory=list)
    closed: bool = False

    @classmethod
    def create(cls, keep: bool = False) -> RunDir:
        path = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        (path / "logs").mkdir()
        (path / "owner").write_text(f"{os.getpid()} {start_time(os.getpid())}\n")
        run = cls(path=path, keep=keep)
        if keep:
            (path / "keep").write_text("left running on request (--keep-cluster)\n")
        atexit.register(run.close)
        stop_cleanly_on_sigterm()
        return run

    def start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None, start: int = 1) -> Proc:
        """Start ``name``; its ``start``-th process in this run logs to ``NAME.START.log`` (the first to
        ``NAME.log``), while messages keep naming the component as the user knows it."""
        log = self.path / "logs" / (f"{name}.log" if start == 1 else f"{name}.{start}.log")
        cmd = [str(a) for a in argv]
        preexec = None
        if not self.keep:
            cmd, preexec = _tied_to_parent(cmd)
        with open(log, "ab") as out:
            try:
                popen = subprocess.Popen(
                    cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, cwd=self.path, start_new_session=True, preexec_fn=preexec,
                )
            except OSError as e:  # not a program, not there, not allowed: one line naming the component
                raise ComponentError(f"{name}: cannot start {argv[0]}: {e.strerror}") from None
        with open(self.path / "pids", "a") as f:
            f.write(f"{popen.pid} {log.stem}\n")
        proc = Proc(name=name, popen=popen, log=log, argv=list(argv))
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        """Stop every process (newest first) and remove the folder; a kept run is left as it is."""
        if self.closed or self.keep:
            return
        self.closed = True
        for proc in reversed(self.procs):
            proc.stop()
        shutil.rmtree(self.path, ignore_errors=True)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def stop_cleanly_on_sigterm() -> None:
    """SIGTERM (what a CI system sends a cancelled job) unwinds like Ctrl-C: the run's fixtures and
    ``atexit`` stop every component and remove the run folder, instead of the process dying with its
    folder left for the next run to reap. Only where nothing else handles SIGTERM, and only in the
    main thread (where Python delivers signals)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _terminated)
