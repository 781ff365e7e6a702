"""A component's restarts log to files of their own, while every message still names the component."""

from __future__ import annotations

from schedgate.runtime.procs import RunDir
from schedgate.runtime.reap import run_pids


def test_a_restart_logs_apart_and_keeps_the_components_name() -> None:
    run = RunDir.create()
    try:
        first = run.start("gpu-packing-scheduler", ["true"])
        third = run.start("gpu-packing-scheduler", ["sh", "-c", "exit 3"], start=3)
        first.popen.wait(timeout=10)
        third.popen.wait(timeout=10)
        assert (first.name, first.log.name) == ("gpu-packing-scheduler", "gpu-packing-scheduler.log")
        assert (third.name, third.log.name) == ("gpu-packing-scheduler", "gpu-packing-scheduler.3.log")
        assert third.died() and third.returncode == 3
        assert [name for _, name in run_pids(run.path)] == ["gpu-packing-scheduler", "gpu-packing-scheduler.3"]
    finally:
        run.close()
    assert not run.path.exists()


def test_a_free_port_is_drawn_below_the_ephemeral_range_and_is_free():
    import socket

    from schedgate.runtime.health import _ephemeral_low, free_port

    ports = {free_port() for _ in range(20)}
    assert all(10_000 <= p < _ephemeral_low() for p in ports), ports
    assert len(ports) > 1  # drawn, not the same each time
    for p in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", p))
