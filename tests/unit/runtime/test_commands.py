"""A command run by :func:`schedgate.runtime.commands.run_group` never outlives the call: on a timeout or
an interruption its whole process group gets SIGTERM (a script's trap runs), then SIGKILL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from schedgate.runtime import commands
from schedgate.runtime.commands import run_group


def gone(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` ends within ``within`` seconds: a SIGKILL to a group is delivered at once, but a
    grandchild's exit may not show yet when the call returns (a CI rehearsal under load saw it running)."""
    ended = threading.Event()
    deadline = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie of an exited child is gone as far as running goes
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        if time.monotonic() >= deadline:
            return False
        ended.wait(0.05)


def test_a_command_that_times_out_ends_with_its_whole_group_and_its_trap_runs(tmp_path):
    script = (f"trap 'echo trapped > {tmp_path}/trap; exit 1' TERM; "
              f"sleep 300 & echo $! > {tmp_path}/child; wait")
    with pytest.raises(subprocess.TimeoutExpired):
        run_group(["bash", "-c", script], dict(os.environ), timeout=5)
    assert (tmp_path / "trap").read_text() == "trapped\n"
    assert gone(int((tmp_path / "child").read_text()))


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, monkeypatch):
    monkeypatch.setattr(commands, "GRACE", 1.0)
    script = f"trap '' TERM; sleep 300 & echo $! > {tmp_path}/child; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        run_group(["bash", "-c", script], dict(os.environ), timeout=5)
    assert gone(int((tmp_path / "child").read_text()))


def test_a_command_hears_no_signal_sent_to_the_callers_group(tmp_path):
    """Started in a session of its own: a terminal's Ctrl-C to schedgate's group does not reach it."""
    done = run_group([sys.executable, "-c", "import os; print(os.getsid(0), os.getpgid(0))"], dict(os.environ), 30)
    sid, pgid = map(int, done.stdout.split())
    assert sid == pgid != os.getpgid(0)
    assert done.returncode == 0
