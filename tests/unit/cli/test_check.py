"""``schedgate check``: scenario files, cluster definitions and scheduler configurations, the last judged by
the pinned kube-scheduler itself (so that check and start agree), each refusal one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.providers.base import binaries
from schedgate.runtime.schedcheck import check_with_scheduler
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[3]
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
profiles:
  - schedulerName: gpu-packing-scheduler
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedgate", "check", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


@pytest.mark.parametrize("old, new, said", [
    ("podInitialBackoffSeconds: 1", "podInitialBackoffSeconds: 0",
     "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
    ("  - schedulerName: gpu-packing-scheduler\n",
     "  - schedulerName: gpu-packing-scheduler\n    plugins: {filter: {enabled: [{name: NoSuchPlugin}]}}\n",
     'FilterPlugin "NoSuchPlugin" does not exist'),
    ("  - schedulerName: gpu-packing-scheduler\n",
     "  - schedulerName: gpu-packing-scheduler\n    pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
     "{type: MostAllocated, resources: [{name: cpu, weight: 1000}]}}}]\n",
     "resource weight of cpu not in valid range"),
])
def test_a_configuration_the_scheduler_refuses_is_refused_by_check_in_its_words(tmp_path, old, new, said):
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG.replace(old, new))
    bins = binaries(None)
    with pytest.raises(DefinitionError) as e:
        check_with_scheduler(load_scheduler_config(path), bins.kube_scheduler, bins.kubernetes_version)
    assert str(e.value).startswith(f"{path}: kube-scheduler {bins.kubernetes_version} refuses it: ")
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
    out = cli(str(path))
    assert out.returncode == 2 and said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert cli("--no-scheduler", str(path)).returncode == 0  # its shape is fine: only the scheduler refuses it


def test_every_shipped_scheduler_configuration_is_one_the_pinned_scheduler_accepts():
    """The profiles and the mutants: a mutant the scheduler refused would be 'caught' by a start failure."""
    bins = binaries(None)
    files = [f for d in ("profiles", "mutants") for f in sorted((ROOT / "clusters" / d).glob("*.yaml"))]
    assert len(files) > 40
    for f in files:
        check_with_scheduler(load_scheduler_config(f), bins.kube_scheduler, bins.kubernetes_version)


def test_check_takes_cluster_definitions_and_configurations_beside_scenarios():
    out = cli("clusters/live.yaml", "clusters/profiles/gpu-packing-scheduler.yaml",
              "e2e/scenarios/live-node-unreachable.scenario.yaml")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "clusters/live.yaml: ok — cluster live, 4 nodes",
        "clusters/profiles/gpu-packing-scheduler.yaml: ok — scheduler configuration, profiles gpu-packing-scheduler; "
        f"kube-scheduler {binaries(None).kubernetes_version} accepts it",
        "e2e/scenarios/live-node-unreachable.scenario.yaml: ok — scenario live-node-unreachable, 9 steps, 3 pods, "
        f"cluster live; kube-scheduler {binaries(None).kubernetes_version} accepts its scheduler configuration",
    ]


def test_every_file_is_judged_and_each_bad_one_is_a_line_of_its_own(tmp_path):
    """check A B C does not stop at the first bad file: each good one is printed, each bad one is one line on
    stderr naming its file, and the exit is 2."""
    bad = tmp_path / "sched.yaml"
    bad.write_text(CONFIG.replace("podInitialBackoffSeconds: 1", "podInitialBackoffSeconds: 0"))
    out = cli("--no-scheduler", "clusters/live.yaml", str(bad), "e2e/scenarios/live-node-unreachable.scenario.yaml")
    assert out.returncode == 0, "shape alone: all three are fine"
    out = cli("clusters/live.yaml", str(bad), "e2e/scenarios/live-node-unreachable.scenario.yaml")
    assert out.returncode == 2
    assert [line.split(":")[0] for line in out.stdout.splitlines()] == [
        "clusters/live.yaml", "e2e/scenarios/live-node-unreachable.scenario.yaml"]
    errors = out.stderr.strip().splitlines()
    assert errors[0].startswith(f"schedgate: {bad}: kube-scheduler ") and "must be greater than 0" in errors[0]
    assert errors[1:] == ["schedgate: 1 of 3 files refused"]


def test_the_binary_given_is_named_by_the_version_it_reports():
    bins = binaries(None)
    out = cli("--scheduler-binary", str(bins.kube_scheduler), "clusters/profiles/gpu-packing-scheduler.yaml")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith(f"kube-scheduler {bins.kubernetes_version} ({bins.kube_scheduler}) accepts it")


def test_a_plugin_that_reads_the_api_server_as_it_is_built_is_no_refusal(tmp_path):
    """A plugin backed by custom resources (a quota's) lists them while its framework is built; with no cluster
    there, kube-scheduler fails on the address nobody serves: the configuration is valid as far as check can
    tell, and the verdict says so; any other failure is still a refusal."""
    from schedgate.runtime.schedcheck import NEEDS_SERVER

    fake = tmp_path / "kube-scheduler"
    said = 'failed to get server groups: Get \\"https://127.0.0.1:1/api?timeout=32s\\": connection refused'
    fake.write_text(f"#!/bin/sh\necho 'E1206 run.go:72] \"command failed\" err=\"{said}\"' >&2\nexit 1\n")
    fake.chmod(0o755)
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG)
    assert check_with_scheduler(load_scheduler_config(path), fake, "v1.35.4") == NEEDS_SERVER
    fake.write_text("#!/bin/sh\necho 'E1206 run.go:72] \"command failed\" err=\"no such plugin\"' >&2\nexit 1\n")
    with pytest.raises(DefinitionError, match="kube-scheduler v1.35.4 refuses it: no such plugin"):
        check_with_scheduler(load_scheduler_config(path), fake, "v1.35.4")
