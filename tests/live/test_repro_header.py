"""``schedgate repro`` says what it runs: its header names the file's own cluster and scheduler (an inline
2-node definition, the conformance role's configuration), a given --scheduler-binary goes with that
configuration, the file runs on the session's cluster, and the last line names the test's own folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "e2e/conformance/fit-cpu-equal-edge-fits.scenario.yaml"


@pytest.mark.live
def test_the_header_names_the_files_own_cluster_profile_and_binary(tmp_path):
    binary = subprocess.run([sys.executable, "-m", "schedgate", "tools", "path"], capture_output=True, text=True,
                            timeout=900, check=True).stdout.strip() + "/kube-scheduler"
    r = subprocess.run([sys.executable, "-m", "schedgate", "repro", str(FILE), "--artifacts", str(tmp_path / "a"),
                        "--scheduler-binary", binary], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    header = [line for line in r.stdout.splitlines() if line.startswith("schedgate: ")]
    assert f"cluster={FILE} (2 nodes)" in header[0], header  # its inline definition: node-a and node-b
    assert "scheduler config=" in header[1] and "clusters/profiles/conformance.yaml" in header[1], header
    assert f"profiles=conformance-scheduler binary={binary}" in header[1], header
    assert "1 passed" in r.stdout
    assert "schedgate: cluster for" not in r.stdout  # no extra cluster: the session's is the file's
    (folder,) = list((tmp_path / "a").iterdir())
    assert f"schedgate: artifacts in {folder} (placement.html there)" in r.stdout, r.stdout[-1500:]
