"""kind/bin/docker rewrites --privileged exactly where the engine refuses it, and nothing else.

A fake `docker` later on PATH records the arguments the wrapper hands on, so
no Docker engine is needed.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

WRAPPER_DIR = Path(__file__).resolve().parents[3] / "kind" / "bin"
CAPS = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
        "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
        "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
        "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
        "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
        "CHECKPOINT_RESTORE"]


@pytest.fixture
def docker(tmp_path):
    """Run the wrapper with a recording fake docker behind it; returns the args the fake received."""
    real = tmp_path / "real"
    real.mkdir()
    record = tmp_path / "args"
    fake = real / "docker"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)

    def run(*args: str, privileged: str = "no") -> list[str]:
        env = dict(os.environ, PATH=f"{WRAPPER_DIR}:{real}:/usr/bin:/bin", SCHEDGATE_DOCKER_PRIVILEGED=privileged,
                   SCHEDGATE_CACHE=str(tmp_path / "cache"))
        subprocess.run([str(WRAPPER_DIR / "docker"), *args], env=env, check=True, timeout=30)
        return record.read_text().splitlines()

    return run


def host_lacks() -> list[str]:
    bnd = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                   if line.startswith("CapBnd:")), 16)
    return [name for n, name in enumerate(CAPS) if not (bnd >> n) & 1]


def test_privileged_run_is_rewritten_when_the_engine_refuses_it(docker):
    got = docker("run", "--name", "n1", "--privileged", "--cgroupns=private", "node:img", "/sbin/init")
    assert "--privileged" not in got
    assert got[:3] == ["run", "--name", "n1"]
    assert got[-3:] == ["--cgroupns=private", "node:img", "/sbin/init"]   # order and the rest untouched
    assert "--cap-add=ALL" in got
    assert "--security-opt=systempaths=unconfined" in got
    assert "--device-cgroup-rule=a *:* rwm" in got
    dropped = [a.removeprefix("--cap-drop=") for a in got if a.startswith("--cap-drop=")]
    assert dropped == host_lacks()   # exactly what the host's bounding set lacks, nothing more


def test_create_and_the_container_form_are_rewritten_too(docker):
    assert "--privileged" not in docker("create", "--privileged", "img")
    got = docker("container", "run", "--privileged", "img")
    assert got[:2] == ["container", "run"] and "--cap-add=ALL" in got


def test_a_global_option_before_the_command_is_skipped(docker):
    got = docker("--host", "unix:///run/docker.sock", "run", "--privileged", "img")
    assert got[:3] == ["--host", "unix:///run/docker.sock", "run"] and "--cap-add=ALL" in got


def test_privileged_exec_just_drops_the_flag(docker):
    assert docker("exec", "--privileged", "-i", "node", "ctr", "images", "ls") == \
        ["exec", "-i", "node", "ctr", "images", "ls"]


def test_other_commands_pass_through_untouched(docker):
    assert docker("ps", "-a", "--filter", "label=io.x-k8s.kind.cluster") == \
        ["ps", "-a", "--filter", "label=io.x-k8s.kind.cluster"]


def test_nothing_is_rewritten_where_the_engine_allows_privileged(docker):
    args = ["run", "--privileged", "img"]
    assert docker(*args, privileged="yes") == args
    assert docker("exec", "--privileged", "node", "true", privileged="yes") == ["exec", "--privileged", "node", "true"]
