"""scripts/docker-engine on a machine where iptables was unpacked and never configured (no iptables command:
Debian makes it, an alternative, when the package is configured), which made dockerd fail with "Iptables not
found". Run in a mount namespace of its own, with iptables hidden there and a stand-in engine first on PATH:
nothing of this machine's engine or packages is touched."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
IPTABLES = shutil.which("iptables", path="/usr/sbin:/sbin:/usr/bin:/bin")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or IPTABLES is None,
    reason="needs root, unshare and an iptables command to hide in a mount namespace")


def _tool(folder: Path, name: str, body: str) -> None:
    (folder / name).write_text("#!/bin/sh\n" + body)
    (folder / name).chmod(0o755)


def _engine(tmp: Path, dpkg_configures: bool) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The script with iptables hidden, a stand-in docker and dockerd (the engine answers once dockerd ran),
    and a dpkg whose ``--configure -a`` makes the iptables command appear (or not); apt-get fails."""
    fake = tmp / "bin"
    fake.mkdir()
    calls = tmp / "calls"
    started = tmp / "dockerd-started"
    _tool(fake, "docker", f'echo "docker $*" >> {calls}\n[ -e {started} ] || exit 1\n'
                          '[ "$1" = version ] && echo 20.10.24\n[ "$1" = info ] && echo "1 cgroupfs"\nexit 0\n')
    _tool(fake, "dockerd", f'echo "dockerd $*" >> {calls}\ntouch {started}\n')
    _tool(tmp, "iptables", "exit 0\n")
    configure = f"mount --bind {tmp / 'iptables'} {IPTABLES}\n" if dpkg_configures else ""
    _tool(fake, "dpkg", f'echo "dpkg $*" >> {calls}\n' + configure)
    _tool(fake, "apt-get", f'echo "apt-get $*" >> {calls}\necho "E: Unable to locate package iptables"\nexit 100\n')
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", SCHEDGATE_CACHE=str(tmp / "cache"),
               SCHEDGATE_DOCKER_PIDFILE=str(tmp / "docker.pid"), SCHEDGATE_DOCKER_WAIT="10")
    hidden = f"mount --bind /dev/null {IPTABLES} && exec {ROOT / 'scripts' / 'docker-engine'}"
    out = subprocess.run(["unshare", "--mount", "sh", "-c", hidden], env=env, capture_output=True, text=True,
                         timeout=60)
    return out, calls


def test_an_unconfigured_iptables_is_configured_before_dockerd_starts(tmp_path):
    out, calls = _engine(tmp_path, dpkg_configures=True)
    assert out.returncode == 0, out.stderr
    said = calls.read_text().splitlines()
    assert said.index("dpkg --configure -a") < next(i for i, x in enumerate(said) if x.startswith("dockerd")), said
    assert "iptables is not configured: dpkg --configure -a" in out.stderr and "engine ready" in out.stderr


def test_an_iptables_that_cannot_be_had_is_one_line_and_no_dockerd(tmp_path):
    out, calls = _engine(tmp_path, dpkg_configures=False)
    assert out.returncode == 1, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("docker-engine: dockerd needs iptables: dpkg --configure -a and apt-get install "
                           "iptables failed"), out.stderr
    assert not any(x.startswith("dockerd") for x in calls.read_text().splitlines())
