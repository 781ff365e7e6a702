"""Bad input to the kind provider: one line naming the culprit, exit 4, and nothing left behind.

Each case runs the suite's first file in a child pytest with a private TMPDIR
and counts, afterwards, run folders under it and kind node containers in the
Docker engine. Cases that need an engine are skipped when none answers
(``make test`` starts one where Docker is installed); the case that needs
kind itself is skipped until the node tools are built (``make kind-image``).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import pytest_child, run_dirs

from schedgate.providers.kind.config import cluster_name
from schedgate.runtime.pins import cache_root

SCENARIO = "e2e/test_hard_constraint.py"
TAKEN = "schedgate-inference-control-plane"  # kind's name for the reusable cluster's first node


def docker(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["docker", *argv], capture_output=True, input=stdin, timeout=120)


def kind_containers() -> set[str]:
    out = docker("ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}")
    return set(out.stdout.decode().split())


def the_error(r: subprocess.CompletedProcess[str], starts: str) -> str:
    """The one line of output that carries the error; fails if there is not exactly one."""
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [x for x in (r.stdout + r.stderr).splitlines() if starts in x and "Exit" in x]
    assert len(lines) == 1, r.stdout[-2000:] + r.stderr[-2000:]
    return lines[0]


@pytest.fixture
def engine() -> Iterator[set[str]]:
    """A Docker engine that answers; yields the kind containers present before the case."""
    try:
        if docker("info").returncode != 0:
            pytest.skip("no Docker engine answers (make docker starts one)")
    except FileNotFoundError:
        pytest.skip("no docker command (make docker installs one)")
    before = kind_containers()
    yield before
    assert kind_containers() == before, "a kind node container was left behind"


@pytest.fixture
def empty_image(engine: set[str]) -> Iterator[str]:
    """An image with no files at all: nothing can run in it."""
    tag = f"schedgate/test-empty:bad-input-{os.getpid()}"  # one per xdist worker: another's teardown removes its own
    tar = subprocess.run(["tar", "cf", "-", "-T", "/dev/null"], capture_output=True, check=True).stdout
    assert docker("import", "-", tag, stdin=tar).returncode == 0
    yield tag
    docker("rmi", "-f", tag)


def test_no_docker_engine_is_one_line_naming_where_it_looked(tmp_path):
    sock = f"unix://{tmp_path}/no-engine.sock"
    r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", env={"DOCKER_HOST": sock})
    line = the_error(r, "no Docker engine answers")
    assert f"--provider kind: no Docker engine answers at DOCKER_HOST={sock} (start one with `make docker`)" in line
    assert run_dirs(tmp_path) == []


def test_a_node_image_that_is_not_in_the_engine_is_one_line(tmp_path, engine):
    r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", env={"SCHEDGATE_KIND_IMAGE": "schedgate/none:v0"})
    line = the_error(r, "SCHEDGATE_KIND_IMAGE")
    assert "SCHEDGATE_KIND_IMAGE=schedgate/none:v0: no such image in the Docker engine" in line
    assert run_dirs(tmp_path) == []


def test_a_scheduler_image_that_is_not_in_the_engine_is_one_line_and_nothing_is_pulled(tmp_path, engine):
    r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", "--scheduler-image", "example/sched:none")
    line = the_error(r, "--scheduler-image")
    assert "--scheduler-image example/sched:none: no such image in the Docker engine" in line
    assert docker("image", "inspect", "example/sched:none").returncode != 0
    assert run_dirs(tmp_path) == []


def test_a_cluster_name_taken_by_another_container_is_refused_and_that_container_left_alone(
        tmp_path, empty_image):
    created = docker("create", "--name", TAKEN, empty_image, "/nothing")
    assert created.returncode == 0, created.stderr
    try:
        r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", "--reuse-cluster")
        line = the_error(r, "--reuse-cluster")
        assert (f"--reuse-cluster: the name schedgate-inference is taken: Docker container {TAKEN} exists and "
                "is not a node of kind cluster schedgate-inference") in line
        assert docker("container", "inspect", TAKEN).returncode == 0, "schedgate removed a container it did not make"
        assert run_dirs(tmp_path) == []
    finally:
        docker("rm", "-f", TAKEN)


def node_tools_built() -> bool:
    return any((d / "kind").is_file() for d in (cache_root() / "kind" / "bin").glob("kubernetes-*"))


@pytest.mark.schedgate_exclusive  # its cluster's containers exist a while: the cases beside it count them
@pytest.mark.skipif(not node_tools_built(), reason="kind's node tools are not built yet (make kind-image)")
def test_a_node_image_kind_cannot_boot_is_one_line_and_its_cluster_is_deleted(tmp_path, empty_image):
    r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", env={"SCHEDGATE_KIND_IMAGE": empty_image})
    line = the_error(r, "kind create cluster")
    assert "kind-config.yaml) failed: ERROR: failed to create cluster" in line
    assert "No command specified" in line  # the engine's own reason, not kind's "see --help"
    assert run_dirs(tmp_path) == []


def test_the_reusable_cluster_name_is_the_definitions():
    from schedgate.spec.cluster import load_definition

    assert f"{cluster_name(load_definition(Path('clusters/inference.yaml')))}-control-plane" == TAKEN


def kubelet_fleet(tmp_path: Path) -> Path:
    """clusters/fleet.yaml's 320 nodes, asked of kind as real kubelets (kwok nodes have no such limit)."""
    path = tmp_path / "fleet-kubelets.yaml"
    path.write_text(Path("clusters/fleet.yaml").read_text() + "\nnodeAgent: {kind: kubelet}\n")
    return path


def test_more_kubelet_workers_than_kind_runs_here_is_one_line_before_anything_starts(tmp_path):
    fleet = kubelet_fleet(tmp_path)
    r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", "--cluster", str(fleet))
    line = the_error(r, "nodeAgent: kubelet")
    assert re.search(re.escape(f"{fleet}: nodeAgent: kubelet: 320 nodes are a kind cluster of 321 node containers, "
                               "more than this machine runs (at most ") + r"\d+: 8 per CPU core, \d+ cores; "
                     r"SCHEDGATE_KIND_MAX_NODES sets another limit\); leave nodeAgent out \(kwok nodes\) or make it "
                     r"smaller", line), line
    assert run_dirs(tmp_path) == []


def test_a_scenario_file_asking_for_more_kubelets_than_kind_runs_here_is_skipped_with_the_limit(tmp_path):
    """A file's own definition with real kubelets is skipped at setup, before any container starts."""
    kubelets = tmp_path / "dra-kubelets.yaml"
    kubelets.write_text(Path("clusters/dra-kubelets.yaml").read_text().replace(
        "clusters/deviceclasses/", f"{Path.cwd()}/clusters/deviceclasses/"))
    scenario = tmp_path / "kubelets.scenario.yaml"
    scenario.write_text(f"""apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: kubelets
cluster: {kubelets}
steps:
  - createPods: {{name: p, cpu: 100m}}
  - expect: {{pods: p, scheduledOn: [dra-net, cpu]}}
""")
    r = pytest_child(tmp_path, str(scenario), "--provider", "kind", "-rs", env={"SCHEDGATE_KIND_MAX_NODES": "2"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "1 skipped" in r.stdout
    assert (f"{kubelets}: nodeAgent: kubelet: 2 nodes are a kind cluster of 3 node containers, more than this "
            "machine runs (at most 2: SCHEDGATE_KIND_MAX_NODES=2)") in r.stdout
    assert run_dirs(tmp_path) == []


def test_a_node_limit_that_is_not_a_number_is_one_line(tmp_path):
    r = pytest_child(tmp_path, SCENARIO, "--provider", "kind", env={"SCHEDGATE_KIND_MAX_NODES": "many"})
    line = the_error(r, "SCHEDGATE_KIND_MAX_NODES")
    assert "SCHEDGATE_KIND_MAX_NODES=many: not a whole number of nodes of at least 2" in line
    assert run_dirs(tmp_path) == []
