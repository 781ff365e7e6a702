"""What schedgate reads of the processes and binaries it runs from outside them: a process's CPU time
(``/proc``) and the feature gates a component lets one set (its ``--help``)."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from schedgate.errors import ToolchainError
from schedgate.spec.gates import Gate, settable_gates


def task_cpu_seconds(pid: int) -> float | None:
    """CPU seconds the threads of process ``pid`` have run, or ``None`` if it is gone. A thread that
    exited is no longer counted: Go processes keep theirs."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            total += int(Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread exited between the listing and the read
    return total / 1e9


@functools.lru_cache(maxsize=8)
def settable_gates_of(binary: str) -> Mapping[str, Gate]:
    """The feature gates ``binary`` (a Kubernetes component) lists as settable in its ``--help``."""
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise ToolchainError(f"{binary} --help: {e}") from None
    gates = settable_gates(out.stdout + out.stderr)
    if not gates:
        raise ToolchainError(f"{binary} --help lists no feature gates (exit {out.returncode}); cannot check the "
                             "definition's featureGates")
    return gates
