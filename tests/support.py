"""What the tests share: the checkout's folders, a pytest run as a child process, and the processes
and run folders a run may leave behind."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from schedgate.runtime.procs import RUN_PREFIX
from schedgate.scenarios.load import Scenario, load_scenario

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def shipped_scenario(name: str) -> str:
    """The text of ``e2e/scenarios/NAME.scenario.yaml``, its ``../../clusters/`` paths made absolute."""
    return (ROOT / "e2e" / "scenarios" / f"{name}.scenario.yaml").read_text().replace(
        "../../clusters/", f"{ROOT}/clusters/")


def load_text(tmp: Path, text: str) -> Scenario:
    """``text`` loaded as the scenario file ``tmp/s.scenario.yaml``."""
    (path := tmp / "s.scenario.yaml").write_text(text)
    return load_scenario(path)


def our_processes(tmp: Path) -> list[str]:
    """Live processes whose command line points into a run folder under ``tmp``."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{tmp}/{RUN_PREFIX}" in cmd:
            out.append(f"{proc.name}: {cmd[:120]}")
    return out


def run_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob(f"{RUN_PREFIX}*"))


def pytest_child(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, TMPDIR=str(tmp), **(env or {}))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          cwd=ROOT, env=e, capture_output=True, text=True, timeout=300)



def wait_for_exit(pids: list[int], what: str, timeout: float = 10.0) -> None:
    """Wait until every pid has exited: a pidfd becomes readable when its process ends."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue  # already gone
    deadline = time.monotonic() + timeout
    try:
        pending = list(fds)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            ready, _, _ = select.select(pending, [], [], remaining)
            pending = [fd for fd in pending if fd not in ready]
    finally:
        for fd in fds:
            os.close(fd)
