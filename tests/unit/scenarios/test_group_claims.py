"""Devices a PodGroup shares in scenario files (createPodGroup's devices, the outcome groupClaims): the group's
claim is written once, its members name the same claim, and every mistake is one line naming file, field
and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.objects.claims import DeviceRequest, template_name
from schedgate.scenarios.group_claims import GroupClaims
from schedgate.scenarios.load import load_scenario
from schedgate.workloads.podgroup import GROUP_CLAIM

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "e2e/scenarios/native-podgroups-share-devices.scenario.yaml"
TEXT = SHIPPED.read_text().replace("../../clusters/", f"{ROOT}/clusters/")


def load(tmp_path: Path, text: str):
    path = tmp_path / "g.scenario.yaml"
    path.write_text(text)
    return load_scenario(path)


def test_the_group_and_each_member_name_the_same_claim_template(tmp_path):
    scenario = load(tmp_path, TEXT)
    create = scenario.steps[0].action
    domain = (DeviceRequest("gpu.schedgate.io", 4, same=("gpu.schedgate.io/nvlinkDomain",)),)
    assert create.devices == domain
    ref = {"name": GROUP_CLAIM, "resourceClaimTemplateName": template_name(domain)}
    assert create.manifest()["spec"]["resourceClaims"] == [ref]
    pod = scenario.steps[3].action.template_for(0).builder("a-1").obj()
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "a"}
    assert pod["spec"]["resourceClaims"] == [ref]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": GROUP_CLAIM}]
    assert scenario.steps[5].action.outcome == GroupClaims(
        groups=("a", "b"), devices=4, members=(("a", ("a-1", "a-2")), ("b", ("b-1", "b-2"))))


@pytest.mark.parametrize("old, new, problem", [
    ("DRAWorkloadResourceClaims]\n", "]\n",
     "steps[0].createPodGroup.devices: a group's devices need the DRAWorkloadResourceClaims feature: add "
     "'requires: [GenericWorkload, DRAWorkloadResourceClaims]' to the file (line 37)"),
    ("{name: a, minCount: 2, devices: {class: gpu.schedgate.io,", "{name: a, minCount: 2, devices: {class: tpu,",
     "steps[0].createPodGroup.devices.class: unknown device class 'tpu': cluster 'nvlink-domains' defines "
     "gpu.schedgate.io (line 37)"),
    ("{groupClaims: {groups: [a, b], devices: 4}}", "{groupClaims: {groups: [a, b], devices: 0}}",
     "steps[5].expect.groupClaims.devices: must be a whole number from 1 to 128, got 0 (line 42)"),
    ("  - createPodGroup: {name: c, minCount: 2, devices: {class: gpu.schedgate.io, count: 4, sameAttribute: "
     "nvlinkDomain}}", "  - createPodGroup: {name: c, minCount: 2}",
     "steps[10].expect.groupClaims.groups[1]: PodGroup 'c' has no devices (createPodGroup's devices) (line 47)"),
])
def test_a_groups_devices_without_their_feature_or_a_wrong_claim_outcome_is_one_line(tmp_path, old, new, problem):
    assert old in TEXT
    text = TEXT.replace(old, new, 1).replace(", DRAWorkloadResourceClaims: true}", "}") if old.endswith("\n") \
        else TEXT.replace(old, new, 1)
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, text)
    assert problem in str(e.value)
    assert len(str(e.value).splitlines()) == 1
