"""External commands that must not outlive an interruption: each runs in a process group of its own.

A terminal's Ctrl-C goes to its whole foreground process group. A command started in that group (kind,
docker, a build script) dies of it half-way while Python is still unwinding, and whatever it had under
way goes on without it. Run in a group of its own, it hears nothing; schedgate, interrupted, ends the
group itself (SIGTERM, so a script's EXIT trap cleans up; SIGKILL after a grace period) and only then
lets the interruption go on, to the rollback that deletes what the command made.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from schedgate.runtime.interrupts import interrupts_deferred

# Seconds a command's process group has to end after SIGTERM (a script's EXIT trap removing its build
# container, docker and kind calls) before it is killed.
GRACE = 30.0


def run_group(argv: list[str], env: dict[str, str], timeout: float | None,
              stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` in a process group of its own, output captured. A Ctrl-C at the terminal reaches only
    schedgate, which then ends the whole group (SIGTERM, SIGKILL after :data:`GRACE` seconds) before the
    interruption goes on: no kind, docker or build process outlives the call, and none is half-killed while
    the rollback deletes what it made. A timeout ends the group the same way."""
    with subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True) as p:
        try:
            out, err = p.communicate(stdin, timeout=timeout)
        except BaseException:
            with interrupts_deferred():
                end_group(p)
            raise
        return subprocess.CompletedProcess(argv, p.returncode, out, err)


def end_group(p: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``p``'s process group, SIGKILL to what is left of it after :data:`GRACE` seconds."""
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        try:
            p.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:  # the leader is gone; its children may not be
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        break


