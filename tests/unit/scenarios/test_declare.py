"""Steps declared on their dataclass (scenarios.declare): one class is the step's parsing, its one-line
refusals, its JSON Schema and its reference entry."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.scenarios import reference, schema
from schedgate.scenarios.control_steps import ExtenderFaults, ExtenderStep
from schedgate.scenarios.declare import Declared, arg, read_nodes
from schedgate.scenarios.device_steps import BringDevicesOnline, Devices
from schedgate.scenarios.load import load_scenario
from schedgate.scenarios.object_steps import Delete, Patch
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import STEPS, step
from schedgate.spec.jsontypes import ref, whole

ROOT = Path(__file__).resolve().parents[3]
FILE = f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: declared
cluster: {ROOT}/clusters/inference.yaml
steps:
  - drain: {{nodes: gpu-net, within: 30}}
"""


@pytest.fixture
def drain():
    """A new step, written as a user of schedgate.scenarios.declare would: the class and nothing else."""

    @step("drain")
    @dataclass(frozen=True)
    class Drain(Declared):
        """Drain nodes (a made-up step for this test)."""

        nodes: tuple[str, ...] = arg("nodes", "node and pool names", ref("nodeSet"), read_nodes)
        within: int = arg("within", "seconds the drain may take", whole(1, 600),
                          lambda p, x, w: p.v.whole(x, w, minimum=1, maximum=600), default=60)

        def run(self, r: Run) -> None:
            raise AssertionError("not run here")

    yield Drain
    del STEPS["drain"]


def test_a_declared_step_is_parsed_from_its_class_alone(tmp_path, drain):
    path = tmp_path / "d.scenario.yaml"
    path.write_text(FILE)
    action = load_scenario(path).steps[0].action
    assert action == drain(nodes=("gpu-net-1", "gpu-net-2", "gpu-net-3", "gpu-net-4"), within=30)
    path.write_text(FILE.replace(", within: 30", ""))
    assert load_scenario(path).steps[0].action.within == 60  # type: ignore[attr-defined]


@pytest.mark.parametrize("body, problem", [
    ("{nodes: gpu-net, within: 0}", "steps[0].drain.within: must be a whole number from 1 to 600, got 0 (line 6)"),
    ("{nodes: gpu-net, for: 3}", "steps[0].drain.for: unknown field (allowed: nodes, within) (line 6)"),
    ("{within: 3}", "steps[0].drain.nodes: required field is missing (line 6)"),
    ("{nodes: nowhere}", "steps[0].drain.nodes: unknown node or pool 'nowhere'"),
])
def test_a_declared_step_refuses_bad_input_in_one_line(tmp_path, drain, body, problem):
    path = tmp_path / "d.scenario.yaml"
    path.write_text(FILE.replace("{nodes: gpu-net, within: 30}", body))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_declared_step_s_schema_and_reference_come_from_its_declarations(drain):
    body = schema.scenario_schema()["$defs"]["step"]["properties"]["drain"]
    assert body["description"] == "Drain nodes (a made-up step for this test)."
    assert body["required"] == ["nodes"] and body["additionalProperties"] is False
    assert body["properties"]["within"] == {"type": "integer", "minimum": 1, "maximum": 600,
                                           "description": "seconds the drain may take"}
    page = reference.steps_page()
    assert "## `drain`" in page and "| `within` | whole number 1–600 | seconds the drain may take |" in page


def test_a_declared_outcome_reads_its_fields_and_its_schema_says_what_they_mean(tmp_path):
    path = tmp_path / "e.scenario.yaml"
    path.write_text(FILE.replace("  - drain: {nodes: gpu-net, within: 30}\n", """\
  - createPods: {name: p, gpus: 1}
  - expect: {pods: p, event: {reason: Scheduled, by: default-scheduler, type: null}}
"""))
    event = load_scenario(path).steps[1].action.outcome  # type: ignore[attr-defined]
    assert (event.reason, event.by, event.message, event.type) == ("Scheduled", "default-scheduler", None, None)
    path.write_text(path.read_text().replace("type: null", "type: Info"))
    with pytest.raises(DefinitionError, match=r"expect\.event\.type: must be Normal or Warning, got .Info."):
        load_scenario(path)
    shapes = schema.scenario_schema()["$defs"]["step"]["properties"]["expect"]["properties"]["event"]
    assert shapes["properties"]["type"]["description"] == "Normal or Warning"


@pytest.mark.parametrize("body, problem", [
    ("{pods: p, until: scheduled, seconds: 5}", "steps[1].wait.seconds: fixed sleeps are not supported: wait for a "
                                                 "signal ('until') or 'expect'"),
    ("{seconds: 5}", "steps[1].wait.seconds: fixed sleeps are not supported"),  # before the missing fields
    ("{pods: p}", "steps[1].wait.until: required field is missing"),
    ("{pods: p, until: soon}", "steps[1].wait.until: must be one of scheduled, unschedulable, schedulingError, "
                               "decided, gone, got 'soon'"),
])
def test_wait_refuses_a_fixed_sleep_first_then_what_is_missing_or_wrong(tmp_path, body, problem):
    path = tmp_path / "w.scenario.yaml"
    path.write_text(FILE.replace("  - drain: {nodes: gpu-net, within: 30}\n",
                                 f"  - createPods: {{name: p, gpus: 1}}\n  - wait: {body}\n"))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)
    wait = schema.scenario_schema()["$defs"]["step"]["properties"]["wait"]
    assert "seconds" not in wait["properties"] and wait["required"] == ["pods", "until"]


@pytest.mark.parametrize("body, problem", [
    ("{}", "steps[0].stopScheduler: needs exactly one of: profile (a running scheduler's profile), config (a file "
           "or role) (line 6)"),
    ("{profile: a, config: network-slots}", "steps[0].stopScheduler: needs exactly one of"),  # the rule first
    ("{config: network-slots}", "steps[0].stopScheduler.config: stopScheduler takes a running scheduler's "
                                "profile, not a configuration (line 6)"),
    ("{config: 5}", "steps[0].stopScheduler.config: must be a non-empty string, got int"),  # read, then refused
    ("{profile: a, at: 1}", "steps[0].stopScheduler.at: unknown field (allowed: profile, config) (line 6)"),
])
def test_stop_scheduler_takes_a_profile_and_reads_a_config_before_refusing_it(tmp_path, body, problem):
    path = tmp_path / "s.scenario.yaml"
    path.write_text(FILE.replace("drain: {nodes: gpu-net, within: 30}", f"stopScheduler: {body}"))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)
    path.write_text(FILE.replace("drain: {nodes: gpu-net, within: 30}", "stopScheduler: {config: missing.yaml}"))
    with pytest.raises(DefinitionError, match="missing.yaml: no such scheduler configuration file"):
        load_scenario(path)  # a file that is no configuration says so, as before the step was declared
    assert tuple(STEPS["stopScheduler"].__self__.REFUSED) == ("config",)
    assert tuple(STEPS["wait"].__self__.REFUSED) == ("seconds",)
    stop = schema.scenario_schema()["$defs"]["step"]["properties"]["stopScheduler"]
    assert list(stop["properties"]) == ["profile"] and stop["required"] == ["profile"]


def test_start_scheduler_takes_a_running_profile_a_role_or_a_file(tmp_path):
    path = tmp_path / "s.scenario.yaml"
    for body, profile, config in [("{profile: p}", "p", None), ("{config: network-slots}", None, "network-slots")]:
        path.write_text(FILE.replace("drain: {nodes: gpu-net, within: 30}", f"startScheduler: {body}"))
        action = load_scenario(path).steps[0].action
        assert (action.profile, action.config) == (profile, config)  # type: ignore[attr-defined]
    path.write_text(FILE.replace("drain: {nodes: gpu-net, within: 30}",
                                 f"startScheduler: {{config: {ROOT}/clusters/profiles/network-slots.yaml}}"))
    config = load_scenario(path).steps[0].action.config  # type: ignore[attr-defined]
    assert "gpu-network-slots" in config.profile_names and config.source.endswith("network-slots.yaml")


DEVICES = """\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: devices
cluster:
  apiVersion: schedgate.io/v1alpha1
  kind: Cluster
  name: devs
  pools:
    - name: n
      count: 1
      capacity: {cpu: "8", memory: 64Gi, pods: 110}
      devices: [{driver: gpu.example.com, count: 2, name: gpu}]
steps:
  - takeDevicesOffline: BODY
"""


@pytest.mark.parametrize("body, problem", [
    ("{node: n-1, devices: [gpu-0, gpu-7]}", "steps[0].takeDevicesOffline.devices[1]: node n-1 has no device "
                                             "'gpu-7' (its devices: gpu-0, gpu-1) (line 14)"),
    ("{node: n-1, devices: gpu-7}", "steps[0].takeDevicesOffline.devices: node n-1 has no device 'gpu-7'"),
    ("{node: n-9, devices: gpu-7}", "steps[0].takeDevicesOffline.node: unknown node 'n-9' in cluster 'devs' "
                                    "(line 14)"),  # the node before its devices
    ("{node: n-1}", "steps[0].takeDevicesOffline.devices: required field is missing (line 14)"),
    ("{node: n-1, devices: []}", "steps[0].takeDevicesOffline.devices: must be a name or a non-empty list of "
                                 "names, got list"),
])
def test_a_device_step_checks_its_node_then_each_device_against_the_node_s(tmp_path, body, problem):
    path = tmp_path / "d.scenario.yaml"
    path.write_text(DEVICES.replace("BODY", body))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)
    path.write_text(DEVICES.replace("takeDevicesOffline: BODY", "bringDevicesOnline: {node: n-1, devices: gpu-1}"))
    assert load_scenario(path).steps[0].action == BringDevicesOnline(node="n-1", devices=("gpu-1",))


def test_an_outcome_whose_body_is_one_value_declares_it_and_its_schema_type(tmp_path):
    path = tmp_path / "d.scenario.yaml"
    path.write_text(DEVICES.replace("takeDevicesOffline: BODY", "createPods: {name: p}\n  - expect: {pods: p, "
                                    "devices: [gpu-0, gpu-1]}"))
    assert load_scenario(path).steps[1].action.outcome == Devices(names=("gpu-0", "gpu-1"))  # type: ignore
    path.write_text(path.read_text().replace("[gpu-0, gpu-1]", "[gpu-0, gpu-0]"))
    with pytest.raises(DefinitionError, match=r"steps\[1\]\.expect\.devices: names a device twice \(line 15\)"):
        load_scenario(path)
    body = schema.scenario_schema()["$defs"]["step"]["properties"]["expect"]["properties"]["devices"]
    assert body["anyOf"] == [{"$ref": "#/$defs/names", "description": "device names, each once"}]
    assert body["description"].startswith("Each pod is bound")


@pytest.mark.parametrize("body, problem", [
    ("{kind: medium}", "steps[0].extender.kind: must be one of hard, soft, got 'medium' (line 6)"),
    ("{slots: {gpu-net: -1}}", "steps[0].extender.slots.gpu-net: must be a whole number from 0 to 1000000, got -1"),
    ("{slots: {nowhere: 1}}", "steps[0].extender.slots.nowhere: unknown node or pool 'nowhere'"),
    ("{faults: {status: 99}}", "steps[0].extender.faults.status: must be a whole number from 100 to 599, got 99"),
    ("{faults: {slow: 1}}", "steps[0].extender.faults.slow: unknown field (allowed: latency, status, malformed, "
                            "drop, down) (line 6)"),
    ("{kind: hard, size: 1}", "steps[0].extender.size: unknown field (allowed: kind, slots, faults) (line 6)"),
])
def test_the_extender_step_s_fields_and_its_faults_refuse_bad_input_as_before(tmp_path, body, problem):
    path = tmp_path / "x.scenario.yaml"
    path.write_text(FILE.replace("drain: {nodes: gpu-net, within: 30}", f"extender: {body}"))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)


def test_the_extender_step_reads_its_faults_into_one_value_and_null_clears_them(tmp_path):
    path = tmp_path / "x.scenario.yaml"
    for body, want in [
        ("null", ExtenderStep()),
        ("{kind: soft, faults: null}", ExtenderStep("soft", faults=ExtenderFaults())),
        ("{slots: {gpu-net-1: 2}, faults: {latency: 1.5, drop: gpu-net-2, down: true}}",
         ExtenderStep(slots=(("gpu-net-1", 2),), faults=ExtenderFaults(1.5, drop=("gpu-net-2",), down=True))),
    ]:
        path.write_text(FILE.replace("drain: {nodes: gpu-net, within: 30}", f"extender: {body}"))
        assert load_scenario(path).steps[0].action == want, body


OBJECTS = FILE.replace("  - drain: {nodes: gpu-net, within: 30}\n", """\
  - createPods: {name: p}
  - apply: {manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}}
  - STEP
""")


@pytest.mark.parametrize("text, problem", [
    ("patch: {kind: Pod, name: q, patch: 5}", "steps[2].patch.name: no pod created by an earlier step matches 'q'"),
    ("patch: {kind: ConfigMap, name: cm, apiVersion: 5, patch: 5}", "steps[2].patch.apiVersion: must be a "
                                                                   "non-empty string, got int (line 8)"),
    ("patch: {kind: ConfigMap, name: cm, patch: 5}", "steps[2].patch.patch: must be a mapping, got int (line 8)"),
    ("patch: {kind: Pod, name: p, at: 1}", "steps[2].patch.at: unknown field (allowed: apiVersion, kind, name, "
                                           "patch) (line 8)"),
    ("delete: {name: p}", "steps[2].delete.kind: required field is missing (line 8)"),
    ("delete: {kind: Node, name: n}", "steps[2].delete.kind: Node objects are changed by addNodes"),
    ("delete: {kind: Secret, name: cm}", "steps[2].delete.name: no earlier apply step made Secret/cm; a scenario "
                                         "changes only its own objects (line 8)"),
])
def test_patch_and_delete_check_their_target_first_then_the_patch(tmp_path, text, problem):
    path = tmp_path / "o.scenario.yaml"
    path.write_text(OBJECTS.replace("STEP", text))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)


def test_a_pod_s_api_version_is_v1_and_an_applied_object_s_its_own(tmp_path):
    path = tmp_path / "o.scenario.yaml"
    for text, want in [
        ("delete: {kind: Pod, name: p, apiVersion: 5}", Delete(api_version="v1", kind="Pod", name="p")),
        ("delete: {kind: ConfigMap, name: cm}", Delete(api_version="v1", kind="ConfigMap", name="cm")),
        ("patch: {kind: ConfigMap, name: cm, apiVersion: x/v2, patch: {data: {a: b}}}",
         Patch(api_version="x/v2", kind="ConfigMap", name="cm", body={"data": {"a": "b"}})),
    ]:
        path.write_text(OBJECTS.replace("STEP", text))
        assert load_scenario(path).steps[2].action == want, text
