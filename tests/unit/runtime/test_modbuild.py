"""``--scheduler-module``: what it accepts, the Kubernetes it builds against, what its cache key reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.errors import SchedgateError
from schedgate.runtime.modbuild import ModuleSpec, check_kubernetes, kubernetes_of, parse_spec, source_key

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "out-of-tree-scheduler"


def test_a_folder_is_its_main_package_inside_the_module_found_above_it(tmp_path):
    (tmp_path / "go.mod").write_text("module example.com/s\n")
    (tmp_path / "cmd" / "sched").mkdir(parents=True)
    spec = parse_spec(str(tmp_path / "cmd" / "sched"))
    assert (spec.root, spec.package, spec.name) == (tmp_path, "./cmd/sched", "sched")
    top = parse_spec(str(tmp_path))
    assert (top.package, top.name) == (".", tmp_path.name)


def test_a_module_version_and_its_path_inside_it():
    spec = parse_spec("example.com/team/sched@v0.4.1/cmd/scheduler")
    assert (spec.remote, spec.package, spec.name, spec.root) == (
        "example.com/team/sched@v0.4.1", "./cmd/scheduler", "scheduler", None)
    assert parse_spec("example.com/team/sched@v0.4.1").name == "sched"


@pytest.mark.parametrize("given", ["not-a-folder", "example.com/x", "./missing@v1.0.0", "example.com/x@latest"])
def test_what_is_neither_a_folder_nor_a_module_version_is_one_line(given):
    with pytest.raises(SchedgateError, match=r"^--scheduler-module .*: neither a folder nor MODULE@VERSION"):
        parse_spec(given)


def test_a_folder_outside_any_module_is_one_line(tmp_path):
    with pytest.raises(SchedgateError, match=r"^--scheduler-module .*: no go\.mod in this folder or above it"):
        parse_spec(str(tmp_path))


@pytest.mark.parametrize("gomod, want", [
    ("require k8s.io/kubernetes v1.37.2\n", "v1.37.2"),
    ("require (\n\tk8s.io/api v0.36.5\n\tk8s.io/kubernetes v1.36.5\n)\n", "v1.36.5"),
    # the example's own: staging modules replaced by releases, kube-scheduler's require a placeholder
    ("require (\n\tk8s.io/kube-scheduler v0.0.0\n\tk8s.io/kubernetes v1.37.2\n)\n"
     "replace k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.37.2\n", "v1.37.2"),
    # a fork of kubernetes replacing it by a version
    ("require k8s.io/kubernetes v1.35.0\nreplace k8s.io/kubernetes => example.com/fork v1.35.4\n", "v1.35.4"),
    # no k8s.io/kubernetes: its staging modules say the version
    ("require (\n\tk8s.io/component-base v0.35.8\n)\n", "v1.35.8"),
    ("require github.com/x/y v1.2.3\n", None),
])
def test_the_kubernetes_a_go_mod_builds_against(gomod, want):
    assert kubernetes_of(gomod) == want


def test_a_module_of_another_minor_than_the_pin_is_refused_naming_both():
    spec = ModuleSpec("./sched", ".", root=Path("/x"))
    assert check_kubernetes(spec, "require k8s.io/kubernetes v1.37.0\n", "v1.37.2") == "v1.37.0"
    with pytest.raises(SchedgateError) as e:
        check_kubernetes(spec, "require k8s.io/kubernetes v1.36.5\n", "v1.37.2")
    assert str(e.value) == ("--scheduler-module ./sched: go.mod builds against Kubernetes v1.36.5, and this run's "
                            "pin is v1.37.2: build it at 1.37 or pass --kubernetes-version 1.36")
    with pytest.raises(SchedgateError, match="requires neither k8s.io/kubernetes nor its staging modules"):
        check_kubernetes(spec, "require github.com/x/y v1.2.3\n", "v1.37.2")


def test_the_cache_key_reads_sources_and_go_files_not_tests_or_testdata(tmp_path):
    (tmp_path / "go.mod").write_text("module m\n")
    (tmp_path / "main.go").write_text("package main\n")
    key = source_key(tmp_path, ".", "go1.26.8")
    (tmp_path / "main_test.go").write_text("package main\n")
    (tmp_path / "testdata").mkdir()
    (tmp_path / "testdata" / "x.go").write_text("package x\n")
    (tmp_path / "README.md").write_text("words\n")
    assert source_key(tmp_path, ".", "go1.26.8") == key
    (tmp_path / "main.go").write_text("package main // changed\n")
    changed = source_key(tmp_path, ".", "go1.26.8")
    assert changed != key
    assert source_key(tmp_path, ".", "go1.27.3") != changed
    assert source_key(tmp_path, "./cmd/other", "go1.26.8") != changed


def test_the_shipped_example_is_a_module_of_the_default_pin():
    from schedgate.runtime.toolchain import pinned_kubernetes_version

    spec = parse_spec(str(EXAMPLE))
    assert spec.root == EXAMPLE and spec.name == "out-of-tree-scheduler"
    assert check_kubernetes(spec, (EXAMPLE / "go.mod").read_text(), pinned_kubernetes_version()).startswith("v1.")
