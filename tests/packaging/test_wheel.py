"""schedgate as a wheel in someone else's repository: built, installed into a fresh venv, and a user's own
scenario file and Python scenario run from outside this checkout, against the shipped defaults."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from schedgate.pytest_plugin.exclusive import lock_dir

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: my-gpu-pod-needs-the-network
cluster: clusters/inference.yaml                     # not in this repository: the definition shipped
scheduler: clusters/profiles/gpu-packing-scheduler.yaml
templates:
  infer: {gpus: 1, cpu: 4, memory: 32Gi, scheduler: gpu-packing-scheduler,
          requireLabels: {infra.example.com/high-speed-network: "true"}}
steps:
  - createPods: {template: infer, name: infer}
  - expect: {pods: infer, scheduledOn: [gpu-net]}
"""

PYTHON_SCENARIO = """\
from schedgate import scheduled_on, wait_for
from schedgate.workloads.gpu import gpu_pod


def test_my_gpu_pod_lands_on_a_network_node(cluster, ns):
    pod = wait_for(gpu_pod("mine").create(ns), scheduled_on(cluster.pool("gpu-net"),
                                                            never=cluster.nodes_except("gpu-net")))
    assert pod.node_name in cluster.pool("gpu-net")
"""


# How every pip of these tests installs (the fixture venv's and a new repository's Makefile's): the wheel's
# dependencies from a folder of their wheels, resolved from the package index once per run, and no bytecode
# compiled ahead (Python compiles what it imports). Each install took 44 s of which 39 s CPU; from the folder,
# without compiling, 10 s CPU (2026-12-07).
PIP: dict[str, str] = {"PIP_NO_COMPILE": "0"}  # pip's "no-" switches read their variable inverted: 0 is --no-compile


def run(*argv: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | PIP
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built once per run: under -n the workers share it, built by the first under a
    lock (two builds at once share the checkout's build/ folder: "File exists: build/bdist.linux-x86_64/...")."""
    shared = lock_dir(request.config)
    dist = shared / "schedgate-wheel" if shared is not None else tmp_path_factory.mktemp("dist")
    dist.mkdir(exist_ok=True)
    with open(dist / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not list(dist.glob("schedgate-*.whl")):
            built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, ROOT, cwd=dist)
            assert built.returncode == 0, built.stderr[-2000:]
        [found] = dist.glob("schedgate-*.whl")
        house = dist / "dependencies"
        if not house.exists():
            staged = dist / "dependencies.new"
            shutil.rmtree(staged, ignore_errors=True)
            deps = run(sys.executable, "-m", "pip", "wheel", "-q", "-w", staged, found, cwd=dist)
            assert deps.returncode == 0, deps.stderr[-2000:]
            staged.rename(house)
    PIP.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(house))
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """A fresh venv with the wheel installed (by its file: pip records where from, PEP 610)."""
    where = tmp_path_factory.mktemp("wheel-venv")
    venv = where / "venv"
    assert run(sys.executable, "-m", "venv", venv, cwd=where).returncode == 0
    installed = run(venv / "bin" / "pip", "install", "-q", wheel, cwd=where)
    assert installed.returncode == 0, installed.stderr[-2000:]
    return venv


def test_the_wheel_runs_a_users_scenarios_with_no_checkout(tmp_path, venv):

    repo = tmp_path / "my-repo"
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")  # their own rootdir: nothing of this checkout around
    (repo / "my.scenario.yaml").write_text(SCENARIO)
    (repo / "test_mine.py").write_text(PYTHON_SCENARIO)
    where = run(venv / "bin" / "python", "-c", "import schedgate, schedgate.spec.shipped as s; "
                "print(schedgate.__file__); print(s.ROOT)", cwd=repo)
    module, shipped = where.stdout.split()
    assert module.startswith(str(venv)) and shipped.startswith(str(venv)), where.stdout + where.stderr

    check = run(venv / "bin" / "schedgate", "check", "my.scenario.yaml", cwd=repo)
    assert check.returncode == 0 and "my.scenario.yaml: ok" in check.stdout, check.stdout + check.stderr
    suite = run(venv / "bin" / "pytest", "-p", "no:cacheprovider", "-q", "--provider", "local", cwd=repo)
    assert suite.returncode == 0, suite.stdout[-4000:] + suite.stderr[-2000:]
    assert "2 passed" in suite.stdout, suite.stdout[-2000:]


def test_init_writes_a_repository_whose_two_commands_pass(tmp_path, venv, wheel):
    """`schedgate init` of the installed wheel in an empty folder, then its README's two commands: its Makefile
    installs schedgate from that wheel's own file, never by name from a package index."""
    repo = tmp_path / "new-repo"
    made = run(venv / "bin" / "schedgate", "init", repo, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"SCHEDGATE ?= {wheel}\n" in (repo / "Makefile").read_text()
    again = run(venv / "bin" / "schedgate", "init", repo, cwd=tmp_path)
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "exists" in again.stderr, again.stderr
    e2e = run("make", "e2e", cwd=repo)
    assert e2e.returncode == 0, e2e.stdout[-4000:] + e2e.stderr[-2000:]
    assert "3 passed" in e2e.stdout, e2e.stdout[-2000:]
    test = run("make", "test", cwd=repo)
    assert test.returncode == 0 and "3 passed" in test.stdout, test.stdout[-4000:]


def test_init_from_a_schedgate_that_names_no_file_refuses_in_one_line_instead_of_a_bare_name(tmp_path, venv):
    """Installed with no record of where from (as from a package index): the name ``schedgate`` there is not
    this project's, so init asks for --schedgate, and refuses a bare name given there."""
    [record] = venv.glob("lib/python*/site-packages/schedgate-*.dist-info/direct_url.json")
    hidden = record.with_name("direct_url.hidden")
    record.rename(hidden)
    try:
        _refuses_to_name_schedgate(tmp_path, venv)
    finally:
        hidden.rename(record)


def _refuses_to_name_schedgate(tmp_path: Path, venv: Path) -> None:
    for argv, says in [((), "not installed from a file or a checkout; say where its Makefile installs schedgate "
                            "from with --schedgate"),
                       (("--schedgate", "schedgate"), "--schedgate schedgate: not a wheel file")]:
        out = run(venv / "bin" / "python", "-c", "import sys; from schedgate.cli import main; sys.exit(main())",
                  "init", tmp_path / "repo", *argv, cwd=tmp_path)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and says in out.stderr, out.stderr
        assert not (tmp_path / "repo").exists()


def readme_example() -> tuple[str, list[str]]:
    """The README's scenario file ("Your scheduler, in twenty lines") and the commands after it that need nothing
    of the reader's own (no deploy/ file, no cluster of theirs)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Your scheduler, in twenty lines", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    [scenario] = [b for lang, b in blocks if lang == "yaml" and b.startswith("# my-bug.scenario.yaml")]
    commands = [line.split("#")[0].strip() for lang, b in blocks if lang == "sh" for line in b.splitlines()]
    return scenario, [c for c in commands if c and not re.search(r"deploy/|bin/|~/|\./cmd/", c)]


def test_the_readmes_example_passes_in_a_repository_init_made_from_the_wheel(tmp_path, venv):
    """The README's twenty lines, dropped into a repository `schedgate init` wrote (whose own profile is
    my-scheduler), pass `check` and pass when run: the file names the profile it holds to."""
    scenario, commands = readme_example()
    assert commands == ["schedgate check my-bug.scenario.yaml", "pytest my-bug.scenario.yaml"], commands
    repo = tmp_path / "readme-repo"
    assert run(venv / "bin" / "schedgate", "init", repo, cwd=tmp_path).returncode == 0
    (repo / "my-bug.scenario.yaml").write_text(scenario)
    check = run(venv / "bin" / "schedgate", "check", "my-bug.scenario.yaml", cwd=repo)
    assert check.returncode == 0 and "my-bug.scenario.yaml: ok" in check.stdout, check.stdout + check.stderr
    suite = run(venv / "bin" / "pytest", "my-bug.scenario.yaml", "-p", "no:cacheprovider", "-q", "--provider",
                "local", cwd=repo)
    assert suite.returncode == 0 and "1 passed" in suite.stdout, suite.stdout[-4000:] + suite.stderr[-2000:]
