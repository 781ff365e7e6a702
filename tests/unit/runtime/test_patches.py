"""Patch releases built on demand, and ``schedgate bisect``: the modfile a patch gets, and the one line each
bad request gets before anything is built."""

from __future__ import annotations

import subprocess
import sys

import pytest

from schedgate.runtime.patches import _modfile

RELEASE_GO_MOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tgo.etcd.io/etcd/server/v3 v3.6.7
\tk8s.io/api v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/kube-scheduler => ./staging/src/k8s.io/kube-scheduler
)
"""


def test_a_patch_pin_is_the_release_its_staging_modules_and_its_etcd() -> None:
    text = _modfile("1.36.1", RELEASE_GO_MOD)
    assert "\tk8s.io/kubernetes v1.36.1\n\tgo.etcd.io/etcd/server/v3 v3.6.7\n" in text
    assert "\tk8s.io/api => k8s.io/api v0.36.1\n\tk8s.io/kube-scheduler => k8s.io/kube-scheduler v0.36.1\n" in text
    assert "\ngo 1.26.0\n" in text and text.startswith("// Made on demand by schedgate")


@pytest.mark.parametrize("args, problem", [
    (["--good", "1.36.3", "--bad", "1.36.3"], "--good and --bad are both 1.36.3: nothing lies between them"),
    (["--good", "1.36.3", "--bad", "1.36"], "--bad 1.36: not a release version like 1.36.2"),
    (["--good", "1.34.2", "--bad", "1.36.0"], "--kubernetes-version 1.34.2: schedgate builds the minors it pins"),
])
def test_a_bad_bisect_is_one_line_and_exit_2(args: list[str], problem: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "schedgate", "bisect",
                           "e2e/bugs/k8s-138882-all-mode-counters.scenario.yaml", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"schedgate: {problem}") and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_make_bugs_runs_each_bug_where_it_is_and_where_it_is_fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    """--versions bugs: every pin, and per known bug the newest release of each pinned minor it affects."""
    from schedgate.cli import matrix
    from schedgate.runtime.toolchain import go_module_dir

    asked: list[tuple[str, str]] = []

    def served_between(go: str, module: object, low: str, high: str) -> list[str]:
        asked.append((low, high))
        minor = low.rsplit(".", 1)[0]
        return [f"{minor}.{p}" for p in range(int(high.rsplit(".", 1)[1]) + 1)]

    monkeypatch.setattr(matrix, "released", served_between)
    chosen = [p.version for p in matrix.affected(go_module_dir(), ["e2e/bugs"])]
    pinned = [p.version for p in matrix.pins(go_module_dir()).values()]
    assert set(pinned) <= set(chosen) and chosen == sorted(chosen, key=lambda v: tuple(map(int, v[1:].split("."))))
    assert {"v1.36.1", "v1.36.2"} <= set(chosen)  # #138882 (fixed in 1.36.2) and #140436 (fixed in 1.36.3)
    assert [p for p in matrix.affected(go_module_dir(), ["e2e/bugs"]) if p.on_demand] != []
