"""``scripts/node-rootfs`` installs debootstrap only while it holds the rootfs lock: two pytest workers on a cold
cache once ran ``apt-get install`` at once, and one failed on dpkg's lock ("apt-get install debootstrap failed").
The fakes stand in for apt-get and debootstrap; the script, its lock and its tarball are real."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

APT_GET = """#!/bin/bash
# a fake apt-get: refuses to run unless its caller holds the rootfs lock, then "installs" debootstrap
echo "$*" >> "$STATE/apt-get.calls"
if [ ! -e "$LOCK" ] || flock -n "$LOCK" true; then echo "apt-get ran outside the rootfs lock" >&2; exit 100; fi
[ "${*: -1}" = debootstrap ] || exit 0
cat > "$FAKEBIN/debootstrap" <<'EOF'
#!/bin/bash
mkdir -p "$5/etc" && echo fake > "$5/etc/fake-root"
EOF
chmod +x "$FAKEBIN/debootstrap"
"""


@pytest.mark.skipif(os.getuid() != 0 or not Path("/etc/os-release").is_file(), reason="node-rootfs runs as root")
def test_debootstrap_is_installed_inside_the_lock_once_and_the_tarball_is_reused(tmp_path):
    fakebin, cache = tmp_path / "bin", tmp_path / "cache"
    fakebin.mkdir()
    (fakebin / "apt-get").write_text(APT_GET)
    (fakebin / "apt-get").chmod(0o755)
    env = dict(os.environ, PATH=f"{fakebin}:/usr/bin:/bin", SCHEDGATE_CACHE=str(cache), STATE=str(tmp_path),
               FAKEBIN=str(fakebin), LOCK=str(cache / "kind" / "rootfs" / ".lock"))
    env.pop("SCHEDGATE_KIND_NO_BUILD", None)
    if any(Path(d, "debootstrap").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("a debootstrap on /usr/bin would be found instead of installed")
    first = subprocess.run([str(ROOT / "scripts" / "node-rootfs")], env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0, first.stderr
    tarball = Path(first.stdout.strip())
    assert tarball.is_file() and tarball.parent == cache / "kind" / "rootfs", first.stdout
    calls = (tmp_path / "apt-get.calls").read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith("install -y -qq debootstrap"), calls
    assert "DPkg::Lock::Timeout" in calls[0], calls  # and it waits for dpkg's own lock rather than failing
    again = subprocess.run([str(ROOT / "scripts" / "node-rootfs")], env=env, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == str(tarball), again.stderr
    assert len((tmp_path / "apt-get.calls").read_text().splitlines()) == 1
