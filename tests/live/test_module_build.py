"""``--scheduler-module``: the out-of-tree example built from its folder and, as a module the Go module proxy
serves, from ``MODULE@VERSION`` (a file-system proxy in front of the real one); the build is cached, the
scheduler it makes judges configurations in ``schedgate check``, and bad input is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from support import ROOT

from schedgate.runtime.modbuild import ensure_scheduler_module, source_key

EXAMPLE = ROOT / "examples" / "out-of-tree-scheduler"
MODULE = "example.com/maintenance-scheduler"


def schedgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedgate", *args], capture_output=True, text=True, timeout=1200,
                          cwd=ROOT, env=dict(os.environ, **(env or {})))


def test_the_example_builds_once_reports_the_pin_and_its_plugin_judges_its_profile(tmp_path):
    binary = ensure_scheduler_module(str(EXAMPLE))
    built = binary.stat().st_mtime_ns
    assert ensure_scheduler_module(str(EXAMPLE)) == binary and binary.stat().st_mtime_ns == built, "built again"
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("Kubernetes v1.37."), version

    ok = schedgate("check", str(EXAMPLE / "profile.yaml"), "--scheduler-module", str(EXAMPLE))
    assert ok.returncode == 0, ok.stderr
    assert f"kube-scheduler v1.37.2 ({EXAMPLE})" in ok.stdout and "accepts" in ok.stdout, ok.stdout
    # the pinned build has no Maintenance plugin: the same profile is refused by it, so the module's build judged
    pinned = schedgate("check", str(EXAMPLE / "profile.yaml"))
    assert pinned.returncode == 2 and "Maintenance" in pinned.stderr, pinned.stderr


def _proxy_of(example: Path, proxy: Path, version: str) -> None:
    """``example`` as ``MODULE@version`` in a file-system module proxy (the layout ``GOPROXY=file://`` reads)."""
    at = proxy / MODULE / "@v"
    at.mkdir(parents=True)
    (at / "list").write_text(f"{version}\n")
    (at / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-12-07T00:00:00Z"}))
    (at / f"{version}.mod").write_bytes((example / "go.mod").read_bytes())
    with zipfile.ZipFile(at / f"{version}.zip", "w") as z:
        for f in sorted(example.rglob("*")):
            if f.is_file():
                z.write(f, f"{MODULE}@{version}/{f.relative_to(example).as_posix()}")


def test_a_module_version_from_the_module_proxy_builds_and_judges(tmp_path):
    # a pseudo-version of the example's sources, so a changed example is a new version, never a stale copy
    version = f"v0.0.0-20261207000000-{source_key(EXAMPLE, '.', 'example')}"
    _proxy_of(EXAMPLE, tmp_path / "proxy", version)
    real = subprocess.run(["go", "env", "GOPROXY"], capture_output=True, text=True, check=True).stdout.strip()
    env = {"GOPROXY": f"file://{tmp_path / 'proxy'},{real}", "GONOSUMDB": MODULE, "GONOSUMCHECK": "1",
           "GOFLAGS": "-mod=mod"}
    got = schedgate("check", str(EXAMPLE / "profile.yaml"), "--scheduler-module", f"{MODULE}@{version}", env=env)
    assert got.returncode == 0, got.stderr
    assert f"({MODULE}@{version})" in got.stdout and "accepts" in got.stdout, got.stdout


def _one_line_exit_2(got: subprocess.CompletedProcess[str], says: str) -> None:
    assert got.returncode == 2, got.stderr
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("schedgate: --scheduler-module "), lines


def test_what_is_not_a_module_is_one_line_and_exit_2():
    got = schedgate("check", str(EXAMPLE / "profile.yaml"), "--scheduler-module", "examples/nowhere")
    _one_line_exit_2(got, "neither a folder nor MODULE@VERSION")


def test_a_module_of_another_minor_is_refused_before_it_builds(tmp_path):
    (tmp_path / "go.mod").write_text((EXAMPLE / "go.mod").read_text().replace("v1.37.2", "v1.36.5"))
    (tmp_path / "main.go").write_text("package main\n\nfunc main() {}\n")
    got = schedgate("check", str(EXAMPLE / "profile.yaml"), "--scheduler-module", str(tmp_path))
    _one_line_exit_2(got, "builds against Kubernetes v1.36.5, and this run's pin is v1.37.2")


def test_a_module_that_does_not_build_says_why_in_one_line(tmp_path):
    (tmp_path / "go.mod").write_text((EXAMPLE / "go.mod").read_text())
    (tmp_path / "go.sum").write_text((EXAMPLE / "go.sum").read_text())
    (tmp_path / "main.go").write_text("package main\n\nfunc main() { undefinedThing() }\n")
    got = schedgate("check", str(EXAMPLE / "profile.yaml"), "--scheduler-module", str(tmp_path))
    _one_line_exit_2(got, "go build . failed: ./main.go:3:15: undefined: undefinedThing")
