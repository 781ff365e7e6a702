"""A device several claims share (DRAConsumableCapacity): how a definition and a pod say so, what schedgate
publishes and asks for, and the one line each mistake gets."""

from __future__ import annotations

import pytest
from support import load_text, shipped_scenario

from schedgate.errors import DefinitionError
from schedgate.objects.claims import claim_spec

TEXT = shipped_scenario("dra-shared-capacity")
POLICY = "memory: {default: 80Gi, min: 10Gi, step: 10Gi}"


def test_the_shared_gpu_is_published_with_its_policy_and_the_pods_ask_for_part_of_it(tmp_path):
    scenario = load_text(tmp_path, TEXT)
    (ds,) = scenario.definition.nodes()[0].devices
    assert ds.devices[0].to_api() == {"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": {
        "value": "80Gi", "requestPolicy": {"default": "80Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}}}}
    assert scenario.needs["DRAConsumableCapacity"] == "cluster: devices' allowMultipleAllocations"
    small = next(s.action for s in scenario.steps if s.kind == "createPods" and s.action.name == "small")
    (request,) = small.template.values["devices"]
    assert claim_spec([request])["devices"]["requests"] == [{"name": "r0", "exactly": {
        "deviceClassName": "gpu.schedgate.io", "count": 1, "capacity": {"requests": {"memory": "15Gi"}}}}]


@pytest.mark.parametrize("old, new, problem", [
    ("          allowMultipleAllocations: true\n", "",
     "cluster.nodes[0].devices[0].requestPolicy: is for devices several claims share: set allowMultipleAllocations: "
     "true (line 25)"),
    (POLICY, "cores: {default: 1}",
     "cluster.nodes[0].devices[0].requestPolicy.cores: the set gives no capacity 'cores' (capacity: memory) "
     "(line 27)"),
    (POLICY, "memory: {default: 80Gi, min: 10Gi, step: 30Gi}",
     "cluster.nodes[0].devices[0].requestPolicy.memory.default: must be min (10Gi) plus a multiple of step "
     "(30Gi) (line 27)"),
    (POLICY, "memory: {min: 10Gi}",
     "cluster.nodes[0].devices[0].requestPolicy.memory.default: required field is missing (with min: the API's "
     "validRange needs it) (line 27)"),
    (POLICY, "memory: {default: 90Gi}",
     "cluster.nodes[0].devices[0].requestPolicy.memory.default: 90Gi is more than the device's memory (80Gi) "
     "(line 27)"),
    (POLICY, "memory: {default: 80Gi, step: 10Gi}",
     "cluster.nodes[0].devices[0].requestPolicy.memory: max and step need min (the API's validRange) (line 27)"),
    (POLICY, "memory: {default: 20Gi, min: 30Gi}",
     "cluster.nodes[0].devices[0].requestPolicy.memory.default: must be within min and max (line 27)"),
    (POLICY, "memory: {default: 80Gi, mn: 10Gi}",
     "cluster.nodes[0].devices[0].requestPolicy.memory.mn: unknown field (allowed: default, min, max, step) "
     "(line 27)"),
    ("capacity: {memory: 25Gi}}", "capacity: {}}",
     "templates.slice.devices.capacity: must give at least one capacity: name -> quantity (line 32)"),
    ("capacity: {memory: 25Gi}}", "capacity: {memory: lots}}",
     "templates.slice.devices.capacity.memory: must be a quantity (80Gi, 4, 500m), got 'lots' (line 32)"),
    ("capacity: {memory: 25Gi}}", "capacity: {9memory: 25Gi}}",
     "templates.slice.devices.capacity.9memory: '9memory' is not an attribute name (a C identifier of at most 32, "
     "optionally after 'domain/') (line 32)"),
    ("allowMultipleAllocations: true", "allowMultipleAllocations: yes please",
     "cluster.nodes[0].devices[0].allowMultipleAllocations: must be true or false, got 'yes please' (line 24)"),
])
def test_a_mistake_is_one_line_naming_the_field(tmp_path, old, new, problem):
    assert old in TEXT
    with pytest.raises(DefinitionError) as e:
        load_text(tmp_path, TEXT.replace(old, new))
    assert str(e.value) == f"{tmp_path / 's.scenario.yaml'}: {problem}"
