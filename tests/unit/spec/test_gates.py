"""Feature gates and API versions of a cluster definition: parsing, the check against the pinned version
(before anything starts), the flags each component gets, and a scenario's gated ``requires:``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from schedgate.errors import DefinitionError
from schedgate.providers import ClusterRequest, start_cluster
from schedgate.providers.base import binaries
from schedgate.runtime.procs import RUN_PREFIX
from schedgate.spec.cluster import load_definition, parse_definition
from schedgate.spec.features import skip_reason
from schedgate.spec.gates import Gate, settable_gates
from schedgate.spec.manifest import served_api_versions
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[3]
BASE = """\
apiVersion: schedgate.io/v1alpha1
kind: Cluster
name: c
featureGates:
  GenericWorkload: true
runtimeConfig:
  scheduling.k8s.io/v1beta1: true
pools:
  - {name: p, count: 1, capacity: {cpu: "4", memory: 8Gi, pods: 110}}
"""
HELP = """      --feature-gates colonSeparatedMultimapStringString   Comma-separated list of ... Options are:
                                                           kube:AllAlpha=true|false (ALPHA - default=false)
                                                           kube:GenericWorkload=true|false (BETA - default=false)
                                                           kube:DRAConsumableCapacity=true|false (BETA - default=true)
"""


def definition(tmp_path: Path, text: str = BASE) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_gates_and_api_versions_become_each_components_flags(tmp_path):
    gates = load_definition(definition(tmp_path)).gates
    assert gates.on("GenericWorkload") is True and gates.on("Nope") is None
    assert gates.feature_gates_flag() == ["--feature-gates=GenericWorkload=true"]
    assert gates.runtime_config_flag() == ["--runtime-config=scheduling.k8s.io/v1beta1=true"]
    assert not load_definition(definition(tmp_path, BASE.split("featureGates")[0] + BASE.split("true\n", 2)[2])).gates


@pytest.mark.parametrize("old, new, problem", [
    ("GenericWorkload: true", "GenericWorkload: yes please", "featureGates.GenericWorkload: must be true or false"),
    ("GenericWorkload: true", "genericWorkload: true", "featureGates.genericWorkload: must be a feature gate's name"),
    ("scheduling.k8s.io/v1beta1: true", "scheduling.k8s.io: true", "runtimeConfig.scheduling.k8s.io: must be an API"),
    ("featureGates:\n  GenericWorkload: true", "featureGates: [GenericWorkload]", "featureGates: "),
])
def test_a_bad_gate_or_api_version_is_one_line_naming_file_field_and_line(tmp_path, old, new, problem):
    with pytest.raises(DefinitionError) as e:
        load_definition(definition(tmp_path, BASE.replace(old, new)))
    assert problem in str(e.value) and str(tmp_path / "c.yaml") in str(e.value) and "\n" not in str(e.value)
    assert "(line " in str(e.value)


def test_the_settable_gates_are_read_from_a_components_help():
    assert settable_gates(HELP) == {"AllAlpha": Gate("ALPHA", False), "GenericWorkload": Gate("BETA", False),
                                    "DRAConsumableCapacity": Gate("BETA", True)}


def test_a_gate_the_version_does_not_have_is_refused_naming_the_version_and_line(tmp_path):
    gates = load_definition(definition(tmp_path, BASE.replace("GenericWorkload", "GenericWorkloads"))).gates
    with pytest.raises(DefinitionError) as e:
        gates.check(settable_gates(HELP), "v1.37.2")
    assert str(e.value) == (f"{tmp_path / 'c.yaml'}: featureGates.GenericWorkloads: Kubernetes v1.37.2 has no feature "
                            "gate 'GenericWorkloads' one may set (never there, not yet there, or GA and locked); it "
                            "has GenericWorkload (line 5)")


def test_an_api_version_the_version_does_not_serve_is_refused_naming_what_it_serves(tmp_path):
    gates = load_definition(definition(tmp_path)).gates
    gates.check(settable_gates(HELP), "v1.37.2")  # 1.37 serves scheduling.k8s.io/v1beta1
    with pytest.raises(DefinitionError) as e:
        gates.check(settable_gates(HELP), "v1.35.4")
    assert str(e.value).endswith("runtimeConfig.scheduling.k8s.io/v1beta1: Kubernetes v1.35.4 does not serve "
                                 "scheduling.k8s.io/v1beta1 (it serves scheduling.k8s.io/v1, "
                                 "scheduling.k8s.io/v1alpha1) (line 7)")
    assert served_api_versions("v9.99.0") is None  # no published schemas: the API server says it at start


def test_a_gated_feature_skips_unless_the_cluster_has_the_gate_on():
    needs = {"GenericWorkload": "requires[0]"}
    assert skip_reason(needs, "v1.37.2", "f.yaml", lambda: {"GenericWorkload": True}) is None
    off = skip_reason(needs, "v1.37.2", "f.yaml", lambda: {"GenericWorkload": False})
    assert off is not None and "the gate off" in off and "featureGates: {GenericWorkload: false}" in off
    old = skip_reason(needs, "v1.36.3", "f.yaml", lambda: {"GenericWorkload": True})
    assert old is not None and "is older than 1.37, the first to have it" in old


def test_the_pinned_api_server_lists_the_gates_of_its_version():
    gates = binaries(None).feature_gates()
    assert gates["GenericWorkload"] == Gate("BETA", False) and "DRAExtendedResource" not in gates  # GA and locked


def test_the_local_provider_refuses_a_gate_before_starting_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    text = BASE.replace("GenericWorkload: true", "GenericWorkload: true\n  NoSuchGate: false")
    req = ClusterRequest("local", parse_definition(yaml.safe_load(text), source="c.yaml"),
                         load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml"))
    with pytest.raises(DefinitionError, match=r"^c\.yaml: featureGates\.NoSuchGate: Kubernetes v1\.37"):
        start_cluster(req, out=None)
    assert not list(tmp_path.glob(f"{RUN_PREFIX}*")) and os.listdir(tmp_path) == []


@pytest.mark.parametrize("given, problem", [
    ("GenericWorkload", "--feature-gates: GenericWorkload: must be NAME=true or NAME=false"),
    ("GenericWorkload=yes", "--feature-gates: GenericWorkload=yes: must be NAME=true or NAME=false"),
])
def test_a_bad_feature_gates_option_is_one_line(given, problem):
    from schedgate.spec.gates import parse_gate_option

    with pytest.raises(DefinitionError) as e:
        parse_gate_option(given)
    assert str(e.value).startswith(problem), str(e.value)


def test_the_option_s_gates_go_over_the_definition_s_and_an_unknown_one_names_the_option(tmp_path):
    from schedgate.spec.gates import parse_gate_option

    gates = load_definition(definition(tmp_path)).gates.with_option(
        parse_gate_option("GenericWorkload=false,DRAConsumableCapacity=true"))
    assert gates.feature_gates_flag() == ["--feature-gates=GenericWorkload=false,DRAConsumableCapacity=true"]
    settable = settable_gates(HELP)
    gates.check(settable, "v1.37.2")  # both are settable
    with pytest.raises(DefinitionError, match=r"^--feature-gates: Telepathy: Kubernetes v1.37.2 has no feature gate"):
        load_definition(definition(tmp_path)).gates.with_option(parse_gate_option("Telepathy=true")).check(
            settable, "v1.37.2")


SCENARIO = """\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: s
cluster: c.yaml
requires: [GenericWorkload]
steps:
  - apply:
      manifest: {apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {name: pair},
                 spec: {schedulingPolicy: {gang: {minCount: 2}}}}
"""
PLAIN = BASE.replace("featureGates:\n  GenericWorkload: true\nruntimeConfig:\n  scheduling.k8s.io/v1beta1: true\n", "")


def test_a_scenario_that_requires_a_gated_feature_has_it_turned_on_unless_its_definition_sets_the_gate(tmp_path):
    from schedgate.scenarios.load import load_scenario

    definition(tmp_path, PLAIN)
    (tmp_path / "s.scenario.yaml").write_text(SCENARIO)
    gates = load_scenario(tmp_path / "s.scenario.yaml").definition.gates
    assert gates.feature_gates == (("GenericWorkload", True),)
    assert gates.runtime_config == (("scheduling.k8s.io/v1beta1", True),)
    assert gates == load_definition(definition(tmp_path)).gates  # what a definition that turns it on has
    definition(tmp_path, BASE.replace("GenericWorkload: true", "GenericWorkload: false"))
    off = load_scenario(tmp_path / "s.scenario.yaml").definition.gates
    assert off.feature_gates == (("GenericWorkload", False),)  # the definition's word stands: the file skips
    definition(tmp_path, PLAIN)
    (tmp_path / "s.scenario.yaml").write_text(SCENARIO.replace("requires: [GenericWorkload]\n", ""))
    assert not load_scenario(tmp_path / "s.scenario.yaml").definition.gates


def test_a_gate_turned_on_for_requires_that_the_version_lacks_names_the_scenario_s_field(tmp_path):
    from schedgate.scenarios.load import load_scenario

    definition(tmp_path, PLAIN)
    path = tmp_path / "s.scenario.yaml"
    path.write_text(SCENARIO)
    gates = load_scenario(path).definition.gates
    with pytest.raises(DefinitionError) as e:
        gates.check(settable_gates(HELP.replace("GenericWorkload", "Other")), "v1.36.3")
    assert str(e.value).startswith(f"{path}: requires[0]: turns on featureGates.GenericWorkload for it: "
                                   "Kubernetes v1.36.3 has no feature gate 'GenericWorkload'"), str(e.value)
    with pytest.raises(DefinitionError) as e:
        gates.check(settable_gates(HELP), "v1.35.4")
    assert str(e.value).startswith(f"{path}: requires[0]: turns on runtimeConfig.scheduling.k8s.io/v1beta1 for "
                                   "it: Kubernetes v1.35.4 does not serve"), str(e.value)


@pytest.mark.live
def test_a_podgroup_file_whose_definition_leaves_the_gate_unset_runs_with_it_on(tmp_path):
    """native-podgroup-gang on a definition with neither featureGates nor runtimeConfig: its requires: turns
    both on for its own cluster, so the PodGroup is served and the pair binds whole (before: a skip)."""
    import subprocess
    import sys

    cluster = tmp_path / "plain.yaml"
    cluster.write_text((ROOT / "clusters" / "workloads.yaml").read_text().replace(
        "featureGates:\n  GenericWorkload: true\nruntimeConfig:\n  scheduling.k8s.io/v1beta1: true\n", "")
        .replace("name: workloads", "name: plain"))
    assert "featureGates" not in cluster.read_text()
    scenario = tmp_path / "plain.scenario.yaml"
    scenario.write_text((ROOT / "e2e" / "scenarios" / "native-podgroup-gang.scenario.yaml").read_text()
                        .replace("../../clusters/workloads.yaml", str(cluster)))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", str(scenario)],
                       cwd=ROOT, env=dict(os.environ, TMPDIR=str(tmp_path)), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "\n1 passed in" in r.stdout, r.stdout[-3000:]
    # Only the file's own cluster started: the session's (inference.yaml), which it does not use, did not
    # start just to read a version (on kind that was a second cluster, 150 s).
    assert "cluster start ::" not in r.stdout, r.stdout[-3000:]
