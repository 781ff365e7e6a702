"""Scenario files: every shipped example validates; bad files fail in one line naming file, field and line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.scenarios.load import load_scenario
from schedgate.spec.schedconfig import parse_scheduler_config

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "e2e" / "scenarios").glob("*.scenario.yaml"))
CLUSTER = str(ROOT / "clusters" / "inference.yaml")

GOOD = f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: sample
cluster: {CLUSTER}
templates:
  infer: {{gpus: 1, scheduler: gpu-packing-scheduler, requireLabels: {{infra.example.com/high-speed-network: "true"}}}}
steps:
  - createPods: {{template: infer, name: infer, count: 2}}
  - label: {{nodes: [gpu-plain], key: example.com/x, value: "y"}}
  - expect:
      pods: infer-*
      scheduledOn: [gpu-net]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "case.scenario.yaml"
    p.write_text(text)
    return p


def test_every_shipped_example_validates():
    assert len(EXAMPLES) >= 6, EXAMPLES
    for path in EXAMPLES:
        sc = load_scenario(path)
        # The design's topology, or a shipped cluster of its own: with devices, the racks of the spread files,
        # tenant pools, gated features (workloads), pods that live (live), or a file's inline one.
        own = ("inference", "racks", "fleet", "tenant-pools", "one-gpu-node", "workloads", "live")
        inline = sc.definition.source == str(path)
        assert sc.steps and (sc.definition.name in own or sc.has_devices or inline), path


def test_a_good_file_expands_pools_pods_and_the_never_set(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD))
    assert sc.pods == ("infer-1", "infer-2")
    label, expect = sc.steps[1], sc.steps[2]
    assert label.action.nodes == ("gpu-plain-1", "gpu-plain-2")
    assert expect.action.outcome.nodes == ("gpu-net-1", "gpu-net-2", "gpu-net-3", "gpu-net-4")
    # Not naming 'never' forbids every other node.
    assert set(expect.action.outcome.never) == {"gpu-plain-1", "gpu-plain-2", "cpu-1", "cpu-2", "train-1"}
    assert expect.line == 10


@pytest.mark.parametrize(
    "old, new, field, problem",
    [
        pytest.param("  - label:", "  - relabel:", r"steps\[1\]\.relabel", r"unknown step \(known: createPods",
                     id="unknown-step"),
        pytest.param("  - label:", "  - sleep:", r"steps\[1\]\.sleep", r"fixed sleeps are not steps",
                     id="sleep-is-not-a-step"),
        pytest.param("{template: infer, name: infer, count: 2}", "{template: infer, count: 2}",
                     r"steps\[0\]\.createPods\.name", "required field is missing", id="missing-field"),
        pytest.param("count: 2", "count: two", r"steps\[0\]\.createPods\.count",
                     "must be a whole number from 1 to 10000, got 'two'", id="wrong-type"),
        pytest.param("nodes: [gpu-plain]", "nodes: [gpu-plian]", r"steps\[1\]\.label\.nodes\[0\]",
                     "unknown node or pool 'gpu-plian'", id="unknown-node"),
        pytest.param("pods: infer-*", "pods: train-*", r"steps\[2\]\.expect\.pods",
                     "no pod created by an earlier step matches 'train-\\*'", id="unknown-pod"),
        pytest.param("template: infer,", "template: inference,", r"steps\[0\]\.createPods\.template",
                     "unknown template 'inference'", id="unknown-template"),
        pytest.param("      scheduledOn: [gpu-net]", "      scheduledOn: [gpu-net]\n      gone: true",
                     r"steps\[2\]\.expect", "needs exactly one outcome", id="two-outcomes"),
        pytest.param("{template: infer, name: infer, count: 2}",
                     "{template: infer, name: infer, count: 2, gpuCycle: []}",
                     r"steps\[0\]\.createPods\.gpuCycle", "must be a non-empty list", id="empty-gpu-cycle"),
        pytest.param("{template: infer, name: infer, count: 2}",
                     "{template: infer, name: infer, count: 2, gpuCycle: [1, -4]}",
                     r"steps\[0\]\.createPods\.gpuCycle\[1\]", "must be a whole number", id="bad-gpu-cycle"),
        pytest.param("{template: infer, name: infer, count: 2}",
                     "{template: infer, name: infer, count: 2, gpus: 1, gpuCycle: [1, 4]}",
                     r"steps\[0\]\.createPods\.gpuCycle", "remove 'gpus'", id="gpu-cycle-and-gpus"),
        pytest.param("      scheduledOn: [gpu-net]", "      attempts: {atLeast: 1, for: 3}",
                     r"steps\[2\]\.expect\.attempts\.for", "holds an upper bound", id="hold-without-upper-bound"),
        pytest.param("      scheduledOn: [gpu-net]", "      requeued: {event: Node.*, queue: activeQ}",
                     r"steps\[2\]\.expect\.requeued\.queue", "must be one of Active, Backoff", id="bad-queue"),
        pytest.param("kind: Scenario", "kind: Scenery", "kind", "must be Scenario", id="wrong-kind"),
        pytest.param("name: sample", "name: Sample_1", "name", "must be a DNS label", id="bad-name"),
    ],
)
def test_a_bad_file_names_file_field_and_line(tmp_path, old, new, field, problem):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert re.match(rf"^{re.escape(str(path))}: {field}: .*{problem}", msg), msg
    assert re.search(r"\(line \d+\)$", msg), msg


def test_a_node_step_is_one_class_that_parses_and_runs_itself(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD.replace("  - label: {nodes: [gpu-plain], key: example.com/x, value: \"y\"}",
                                                    "  - cordon: {nodes: [gpu-net-1, gpu-plain]}")))
    [cordon] = [s for s in sc.steps if s.kind == "cordon"]
    assert cordon.action.nodes == ("gpu-net-1", "gpu-plain-1", "gpu-plain-2")
    calls: list[str] = []

    class Nodes:
        def cordon(self, node: str) -> None:
            calls.append(node)

    class Cluster:
        nodes = Nodes()

    class Run:
        cluster = Cluster()

    cordon.action.run(Run())  # type: ignore[arg-type]
    assert calls == ["gpu-net-1", "gpu-plain-1", "gpu-plain-2"]


def test_a_missing_cluster_file_is_named(tmp_path):
    path = write(tmp_path, GOOD.replace(CLUSTER, "nowhere/cluster.yaml"))
    with pytest.raises(DefinitionError, match=r"nowhere/cluster\.yaml: no such cluster definition file$"):
        load_scenario(path)


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, GOOD.replace("  - createPods: {", "  - createPods: {{", 1))
    with pytest.raises(DefinitionError, match=rf"^{re.escape(str(path))}: line \d+: not valid YAML"):
        load_scenario(path)


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedgate", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("command", ["check", "repro"])
def test_the_command_line_refuses_a_bad_file_in_one_line_and_starts_nothing(tmp_path, command):
    path = write(tmp_path, GOOD.replace("nodes: [gpu-plain]", "nodes: [gpu-plian]"))
    out = cli(command, str(path))
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert re.match(rf"^schedgate: {re.escape(str(path))}: steps\[1\]\.label\.nodes\[0\]: unknown node", lines[0])
    assert not list(Path(tmp_path).glob("schedgate-run-*"))


def test_check_accepts_the_examples():
    out = cli("check", *map(str, EXAMPLES))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(": ok") == len(EXAMPLES)


def test_pytest_reports_a_bad_file_as_one_line_collection_error(tmp_path):
    path = write(tmp_path, GOOD.replace("count: 2", "count: -1"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout
    assert re.search(rf"^{re.escape(str(path))}: steps\[0\]\.createPods\.count: must be a whole number from 1 to "
                     r"10000, got -1 \(line \d+\)$", out.stdout, re.M), out.stdout
    assert "Traceback" not in out.stdout


WRONG = f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: expects-the-wrong-node
cluster: {CLUSTER}
scheduler: {ROOT / "clusters" / "profiles" / "gpu-packing-scheduler.yaml"}
templates:
  filler: {{gpus: 8, cpu: 1, memory: 8Gi}}
steps:
  - createPods: {{template: filler, name: full-1, node: gpu-net-1}}
  - createPods: {{template: filler, name: full-2, node: gpu-net-2}}
  - createPods: {{template: filler, name: full-3, node: gpu-net-3}}
  - createPods:
      name: infer
      gpus: 1
      scheduler: gpu-packing-scheduler
      requireLabels: {{infra.example.com/high-speed-network: "true"}}
  # The only free network node is gpu-net-4; this file claims gpu-net-1.
  - expect: {{pods: infer, scheduledOn: [gpu-net-1]}}
"""


@pytest.mark.live
def test_a_failing_scenario_leaves_artifacts_and_a_picture_that_explain_it(tmp_path):
    from browser import pixels, screenshot

    from schedgate.report.picture import pod_color

    scenario = tmp_path / "wrong.scenario.yaml"
    scenario.write_text(WRONG)
    arts = tmp_path / "arts"
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    out = subprocess.run([sys.executable, "-m", "schedgate", "repro", str(scenario), "--artifacts", str(arts)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "TMPDIR": str(env_tmp)})
    assert out.returncode == 1, out.stdout[-3000:]
    [folder] = arts.iterdir()
    files = {p.name for p in folder.iterdir()}
    assert {"summary.txt", "steps.txt", "pods.yaml", "nodes.yaml", "events.txt", "timings.csv", "placement.html",
            "cluster.yaml", "schedulers"} <= files, files
    logs = {p.name for p in (folder / "schedulers").iterdir()}
    assert {"gpu-packing-scheduler.log", "gpu-packing-scheduler.metrics.txt",
            "gpu-packing-scheduler.config.yaml"} <= logs, logs
    summary = (folder / "summary.txt").read_text()
    assert re.search(r"steps\[4\] expect \(line 18\): .*bound to a forbidden node 'gpu-net-4'",
                     summary), summary
    assert "steps[4] expect (line 18): FAILED" in (folder / "steps.txt").read_text()
    events = (folder / "events.txt").read_text()
    assert re.search(r"Normal\s+Scheduled\s+gpu-packing-scheduler\s+Pod/infer .* to gpu-net-4", events), events
    assert re.search(r"^infer,gpu-packing-scheduler,gpu-net-4,\d+\.\d+,-,1,bound$",
                     (folder / "timings.csv").read_text(), re.M)

    page = folder / "placement.html"
    html = page.read_text()
    row = html.split('id="node-gpu-net-4"', 1)[1].split("</tr>", 1)[0]
    assert "infer" in row and "bound to a forbidden node" in html
    seen = pixels(screenshot(page, tmp_path / "shot.png", size=(1400, 1100)))
    assert seen[pod_color("infer")] > 300, "the pod's GPU slot is not visible in the picture"
    # Nothing left running: the run folder and its processes are gone.
    assert not list(env_tmp.glob("schedgate-run-*"))


def test_a_gpu_cycle_gives_each_pod_its_turn(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD.replace("{template: infer, name: infer, count: 2}",
                                                    "{template: infer, name: infer, count: 5, gpuCycle: [1, 4]}")))
    create = sc.steps[0].action
    assert create.names == tuple(f"infer-{i}" for i in range(1, 6))
    assert [create.template_for(i).get("gpus") for i in range(5)] == [1, 4, 1, 4, 1]


def test_a_file_that_adds_or_overcommits_nodes_says_which_step_before_anything_starts():
    """What kind and an existing cluster cannot give (nodes schedgate adds, a node two schedulers overcommit)
    is read from the file, so those providers skip it at setup instead of failing a step midway."""
    from schedgate.cluster import Ability
    from schedgate.providers.existing.provider import ExistingProvider
    from schedgate.providers.kind.provider import KindProvider
    from schedgate.providers.local.provider import LocalProvider

    scenarios = ROOT / "e2e/scenarios"
    assert load_scenario(scenarios / "dra-nvlink-domain.scenario.yaml").node_objects == {"adds": "steps[5].addNodes"}
    assert load_scenario(scenarios / "performance-slots-at-scale.scenario.yaml").node_objects == {
        "adds": "steps[0].measurePerformance"}
    assert load_scenario(scenarios / "two-schedulers-one-node.scenario.yaml").node_objects == {
        "overcommits": "steps[5].expect.overcommitted"}
    assert load_scenario(scenarios / "hard-constraint.scenario.yaml").node_objects == {}
    assert [Ability.ADDS_NODES in p.abilities for p in (LocalProvider, KindProvider, ExistingProvider)] == [
        True, True, False]


def test_scheduling_gates_are_one_pod_field_a_step_goes_over_and_a_fragment_over_that(tmp_path):
    """schedulingGates, declared once in scenarios.template: read, applied to the pod, merged step over
    template, and a later pod: fragment over it."""
    text = GOOD.replace("requireLabels:", "schedulingGates: [schedgate.io/hold], requireLabels:").replace(
        "{template: infer, name: infer, count: 2}",
        "{template: infer, name: infer, count: 2, schedulingGates: [example.com/a, example.com/b]}")
    create = load_scenario(write(tmp_path, text)).steps[0].action
    spec = create.template_for(0).builder("infer-1").obj()["spec"]
    assert spec["schedulingGates"] == [{"name": "example.com/a"}, {"name": "example.com/b"}]
    fragment = text.replace("count: 2, schedulingGates", "count: 2, pod: {spec: {schedulingGates: []}}, x")
    spec = load_scenario(write(tmp_path, fragment.replace(", x: [example.com/a, example.com/b]", ""))).steps[0] \
        .action.template_for(0).builder("infer-1").obj()["spec"]
    assert spec["schedulingGates"] == []  # the fragment, applied after the field, has the last word


@pytest.mark.parametrize("value, problem", [
    ("[not a key!]", "steps[0].createPods.schedulingGates[0]: "),
    ("{a: b}", "steps[0].createPods.schedulingGates: "),
])
def test_a_bad_scheduling_gate_is_one_line_naming_the_field(tmp_path, value, problem):
    path = write(tmp_path, GOOD.replace("count: 2}", f"count: 2, schedulingGates: {value}}}"))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}") and "\n" not in str(e.value), str(e.value)


SHIPPED_FOLDERS = ("scenarios", "conformance", "bugs", "fuzz")


@pytest.mark.parametrize("profile, unserved", [
    pytest.param("gpu-packing-scheduler", (), id="the-same-profile-runs"),
    pytest.param("my-packing", ("gpu-packing-scheduler",), id="another-profile-skips"),
])
def test_a_configuration_under_test_that_does_not_serve_a_files_own_profile_makes_it_skip(tmp_path, profile, unserved):
    """``--scheduler-config`` replaces a file's own configuration: a profile its steps name and the replacement
    does not serve is said before anything starts (a skip), not found missing once the cluster is up."""
    own = tmp_path / "own.yaml"
    own.write_text("profiles: [{schedulerName: gpu-packing-scheduler}]\n")
    path = write(tmp_path, GOOD.replace("steps:\n", "scheduler: own.yaml\nsteps:\n  - apiFaults: "
                                        "{profile: gpu-packing-scheduler, delayAnswers: 0.1}\n", 1))
    under_test = parse_scheduler_config({"profiles": [{"schedulerName": profile}]}, source="mine.yaml")
    sc = load_scenario(path, under_test)
    assert sc.unserved == unserved
    assert sc.scheduler is under_test


def test_every_shipped_file_runs_or_skips_under_a_users_packing_profile():
    """The shipped suite under a correct user profile named as the design's: every file either keeps a
    profile it names (a role's, or the one under test) or says it skips; none fails to load."""
    mine = parse_scheduler_config({"profiles": [{"schedulerName": "gpu-packing-scheduler"}]}, source="mine.yaml")
    files = [p for folder in SHIPPED_FOLDERS for p in sorted((ROOT / "e2e" / folder).glob("*.scenario.yaml"))]
    assert len(files) > 100, files
    skipped = [p.name for p in files if load_scenario(p, mine).unserved]
    assert skipped == [], skipped


def tolerations_of(tmp_path: Path, tolerations: str) -> list[dict[str, object]]:
    text = GOOD.replace("  - createPods: {template: infer, name: infer, count: 2}",
                        f"  - createPods: {{template: infer, name: infer, count: 2, tolerations: {tolerations}}}")
    step = load_scenario(write(tmp_path, text)).steps[0].action
    return step.template.builder("p").obj()["spec"]["tolerations"]


def test_kubernetes_own_toleration_form_is_taken_as_kubernetes_means_it(tmp_path):
    assert tolerations_of(tmp_path, "[{operator: Exists}]") == [{"operator": "Exists"}]
    assert tolerations_of(tmp_path, "[{key: k, operator: Equal, value: v}]") == [
        {"key": "k", "operator": "Equal", "value": "v"}]
    assert tolerations_of(tmp_path, "[{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]") == [
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]
    # The shorthand keeps its meaning: value -> Equal, no effect -> NoSchedule.
    assert tolerations_of(tmp_path, "[{key: k, value: v}]") == [
        {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]


@pytest.mark.parametrize("tolerations, field, problem", [
    ("[{value: v}]", "tolerations[0].key", "required"),
    ("[{operator: Exists, value: v}]", "tolerations[0].value", "must be empty with operator Exists"),
    ("[{key: k, tolerationSeconds: 5}]", "tolerations[0].tolerationSeconds", "only with effect NoExecute"),
    ("[{key: k, operator: In}]", "tolerations[0].operator", "Exists"),
])
def test_a_bad_toleration_is_one_line_naming_its_field(tmp_path, tolerations, field, problem):
    with pytest.raises(DefinitionError) as e:
        tolerations_of(tmp_path, tolerations)
    assert field in str(e.value) and problem in str(e.value), str(e.value)
