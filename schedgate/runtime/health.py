"""Readiness checks against components on loopback, and the bounded wait on them."""

from __future__ import annotations

import contextlib
import http.client
import random
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from schedgate.errors import ComponentError
from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.runtime.procs import Proc

_PORTS = random.SystemRandom()  # not the module's generator, which Hypothesis seeds alike in every process


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now, drawn below the kernel's ephemeral range: a port
    from ``bind(0)`` is an ephemeral one, which any process's outgoing connection may take between this check and
    the component's own bind (kube-controller-manager once failed so: ``bind: address already in use``)."""
    low = _ephemeral_low()
    if low > 11_000:
        for _ in range(50):
            port = _PORTS.randrange(10_000, low)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tls_context(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert and key:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def get(url_host: str, port: int, path: str, ctx: ssl.SSLContext | None, timeout: float = 2.0) -> tuple[int, str]:
    """GET over HTTPS (with ``ctx``) or HTTP; returns status and body."""
    conn: http.client.HTTPConnection
    if ctx is not None:
        conn = http.client.HTTPSConnection(url_host, port, context=ctx, timeout=timeout)
    else:
        conn = http.client.HTTPConnection(url_host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


def probe(host: str, port: int, path: str, ctx: ssl.SSLContext | None) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            status, _ = get(host, port, path, ctx, timeout=1.0)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200
    return ready


def wait_ready(proc: Proc, ready: Callable[[], bool], timeout: float, what: str) -> float:
    """Wait until ``ready()`` holds, failing at once if ``proc`` exits.

    The pause between probes is a wait on the process itself, so an exit is
    seen the moment it happens. Returns the seconds it took.
    """
    started = time.monotonic()

    def exited() -> None:
        code = proc.popen.poll()
        if code is not None:
            raise ComponentError(f"{proc.name} exited with code {code} before it was ready: "
                                 f"{summarize_failure(proc.log_tail(400))} (log: {proc.log})")

    def pause(seconds: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=seconds)

    try:
        poll_until(ready, what, timeout, interval=0.05, pause=pause, alive=exited)
    except PollTimeout:
        raise ComponentError(f"{proc.name} not ready after {timeout:.0f}s ({what}); "
                             f"last log line: {(proc.log_tail(1) or ['<empty>'])[0]} (log: {proc.log})") from None
    return time.monotonic() - started


PANIC = ("panic:", "fatal error:")  # a Go program's crash: its goroutines' stacks follow the line


def crash_tail(lines: list[str], keep: int = 25) -> list[str]:
    """The last ``keep`` lines of a log, or, where it ends in a Go crash, ``keep`` lines from the crash's
    first line (``panic: ...``), whose stack trace would push it out of a plain tail."""
    at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(PANIC)), None)
    if at is None:
        return lines[-keep:]
    while at > 0 and lines[at - 1].startswith(PANIC):  # a panic while panicking: the first one
        at -= 1
    return lines[at:at + keep]


def summarize_failure(lines: list[str]) -> str:
    """The line of a component's log that says why it stopped (a Go crash's own first line first)."""
    crashed = [line for line in lines if line.startswith(PANIC)]
    if crashed:
        return crashed[-1].strip()[:500]
    keys = ("Error:", "error:", "E1", "E0", "F1", "F0", "invalid", "failed", "fatal")
    for line in reversed(lines):
        if line.startswith(keys) or any(k in line for k in ("Error:", "error:", "couldn't", "invalid")):
            return line.strip()[:500]
    return (lines[-1].strip()[:500] if lines else "<empty log>")
