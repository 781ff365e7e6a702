"""Binaries the ecosystem's way: envtest's KUBEBUILDER_ASSETS for etcd and kube-apiserver, each binary's
origin and version in the header, and a binary of another version than the pin refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import our_processes, run_dirs

from schedgate.runtime.binaries import pinned_etcd_version
from schedgate.runtime.toolchain import ensure_binaries, pinned_kubernetes_version

ROOT = Path(__file__).resolve().parents[3]


def wrapper(path: Path, real: Path, marker: Path) -> None:
    """An executable that notes it ran, then is ``real``."""
    path.write_text(f"#!/bin/sh\necho \"$@\" >> '{marker}'\nexec '{real}' \"$@\"\n")
    path.chmod(0o755)


def child(tmp: Path, assets: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TMPDIR=str(tmp), KUBEBUILDER_ASSETS=str(assets))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",  # not -q: the header shows
                           "e2e/test_hard_constraint.py", "--provider", "local"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_etcd_and_the_api_server_come_from_kubebuilder_assets_and_the_header_says_so(tmp_path):
    built = ensure_binaries()
    assets = tmp_path / "assets"
    assets.mkdir()
    used = tmp_path / "used"
    for c in ("etcd", "kube-apiserver"):
        wrapper(assets / c, built.path(c), used)
    out = child(tmp_path, assets)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert (f"schedgate: binaries: etcd {pinned_etcd_version()} from KUBEBUILDER_ASSETS={assets}; kube-apiserver "
            f"{pinned_kubernetes_version()} from KUBEBUILDER_ASSETS={assets}; kube-controller-manager, "
            "kube-scheduler, schedgate-pki, schedgate-pool-scheduler built from Go modules at the pin"
            ) in out.stdout, out.stdout[:2000]
    ran = used.read_text()
    assert "--data-dir=" in ran and "--etcd-servers=" in ran, "the cluster ran the assets' etcd and kube-apiserver"


def test_a_binary_of_another_version_than_the_pin_is_refused_in_one_line(tmp_path):
    built = ensure_binaries()
    assets = tmp_path / "assets"
    assets.mkdir()
    wrapper(assets / "etcd", built.path("etcd"), tmp_path / "used")
    old = assets / "kube-apiserver"
    old.write_text("#!/bin/sh\necho 'Kubernetes v1.30.4'\n")
    old.chmod(0o755)
    out = child(tmp_path, assets)
    assert out.returncode == 4, out.stdout[-2000:]
    lines = [x for x in (out.stdout + out.stderr).splitlines() if "is kube-apiserver v1.30.4" in x]
    assert lines == [f"ERROR: {old} (KUBEBUILDER_ASSETS={assets}) is kube-apiserver v1.30.4; this checkout "
                     f"pins {pinned_kubernetes_version()} (go/go.mod): use binaries of the pin, or pin v1.30.4"], \
        out.stdout[-2000:] + out.stderr[-2000:]
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_a_mutant_is_linked_when_first_looked_up_and_a_command_never_is(tmp_path):
    from schedgate.runtime.toolchain import Binaries

    asked: list[str] = []

    def link(name: str) -> None:
        asked.append(name)
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)

    bins = Binaries(tmp_path, "v1.37.2", builder=link)
    programs = bins.programs
    assert "kube-scheduler-slow-filter" in programs and "schedgate-pool-scheduler" in programs and asked == []
    assert programs["schedgate-pool-scheduler"] == tmp_path / "schedgate-pool-scheduler" and asked == []
    assert programs["schedgate-pool-scheduler-no-requeue"] == tmp_path / "schedgate-pool-scheduler-no-requeue"
    assert bins.mutant("schedgate-pool-scheduler-no-requeue") and asked == ["schedgate-pool-scheduler-no-requeue"]
    assert "nothing" not in programs
    try:
        bins.mutant("kube-scheduler")
    except Exception as e:  # noqa: BLE001 - the message is the point
        assert "not a mutant schedgate builds" in str(e)
    else:
        raise AssertionError("a command is not a mutant")


def test_an_etcd_that_exits_at_start_is_named_and_the_api_server_started_beside_it_is_stopped(tmp_path):
    built = ensure_binaries()
    assets = tmp_path / "assets"
    assets.mkdir()
    etcd = assets / "etcd"
    etcd.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && exec '{built.path('etcd')}' --version\n"
                    "echo 'etcdmain: listen tcp: address already in use' >&2\nexit 3\n")
    etcd.chmod(0o755)
    used = tmp_path / "used"
    wrapper(assets / "kube-apiserver", built.path("kube-apiserver"), used)
    out = child(tmp_path, assets)
    text = out.stdout + out.stderr
    assert out.returncode == 4, text[-3000:]
    assert any("etcd exited with code 3 before it was ready" in x for x in text.splitlines()), text[-3000:]
    assert "--etcd-servers=" in used.read_text(), "kube-apiserver starts beside etcd, not after it"
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_two_mutants_link_at_once_and_one_asked_for_twice_links_once(tmp_path):
    """`schedgate mutants` links its broken binaries --jobs at a time: each under a lock of its own name."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from schedgate.runtime.toolchain import link_once

    both_inside = threading.Barrier(2, timeout=20)  # broken (an error) if the two links cannot overlap
    linked: list[str] = []
    in_a = threading.Event()

    def link(name: str) -> None:
        linked.append(name)
        if name == "a":
            in_a.set()
        both_inside.wait()
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)

    with ThreadPoolExecutor(max_workers=3) as pool:
        first = pool.submit(link_once, tmp_path, "a", lambda: link("a"))
        assert in_a.wait(20)
        again = pool.submit(link_once, tmp_path, "a", lambda: link("a"))  # waits on a's lock, then finds it
        other = pool.submit(link_once, tmp_path, "b", lambda: link("b"))
        for f in (first, again, other):
            f.result(timeout=30)
    assert sorted(linked) == ["a", "b"]
