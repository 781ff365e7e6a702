"""Devices in cluster definitions and claims in scenario files: what loads, the one line a bad file gets,
and what the ResourceSlices and claims schedgate writes look like."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from schedgate.errors import DefinitionError
from schedgate.objects.builders import make_pod
from schedgate.objects.claims import ALL, DeviceRequest, claim_template, template_name
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition
from schedgate.spec.manifest import check_manifest
from schedgate.spec.validate import Validator

ROOT = Path(__file__).resolve().parents[3]

CLUSTER = """\
apiVersion: schedgate.io/v1alpha1
kind: Cluster
name: devs
deviceClasses:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu}
    spec:
      selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
pools:
  - name: n
    count: 2
    capacity: {cpu: "8", memory: 64Gi, pods: 110}
    devices:
      - driver: gpu.example.com
        count: 4
        name: gpu
        attributes:
          model: H100
          nvlinkDomain: [0, 0, 1, 1]
          fw: {version: 1.2.3}
          nvidia.com/mig: false
        capacity: {memory: [80Gi, 80Gi, 40Gi, 40Gi]}
"""


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_devices_expand_per_node_with_typed_attributes_and_a_value_each(tmp_path):
    d = load_definition(write(tmp_path, CLUSTER))
    (ds,) = d.node("n-2").devices
    assert ds.driver == "gpu.example.com" and ds.names == ("gpu-0", "gpu-1", "gpu-2", "gpu-3")
    assert ds.devices[2].to_api() == {
        "name": "gpu-2",
        "attributes": {"model": {"string": "H100"}, "nvlinkDomain": {"int": 1}, "fw": {"version": "1.2.3"},
                       "nvidia.com/mig": {"bool": False}},
        "capacity": {"memory": {"value": "40Gi"}}}
    assert [c.name for c in d.device_classes] == ["gpu"]


def test_a_published_slice_is_one_the_pinned_api_accepts(tmp_path):
    d = load_definition(write(tmp_path, CLUSTER))
    ds = d.node("n-1").devices[0]
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n-1-gpu"},
            "spec": {"driver": ds.driver, "nodeName": "n-1", "pool": {"name": "n-1", "generation": 1,
                                                                      "resourceSliceCount": 1},
                     "devices": [x.to_api() for x in ds.devices]}}
    check_manifest(Validator("slice"), body, "")


def test_the_shipped_dra_cluster_has_two_nvlink_domains_of_four():
    d = load_definition(ROOT / "clusters" / "dra.yaml")
    (ds,) = d.node("dra-net-1").devices
    domains = [dict((k, v) for k, _, v in x.attributes)["nvlinkDomain"] for x in ds.devices]
    assert domains == [0, 0, 0, 0, 1, 1, 1, 1]
    assert {c.name for c in d.device_classes} == {"gpu.schedgate.io", "nvidia-gpu-extended"}
    assert all("nvidia.com/gpu" not in n.allocatable for n in d.nodes())


@pytest.mark.parametrize("old, new, field, problem", [
    pytest.param("          nvlinkDomain: [0, 0, 1, 1]", "          nvlinkDomain: [0, 0, 1]",
                 "pools[0].devices[0].attributes.nvlinkDomain", "lists 3 values for 4 devices", id="list-length"),
    pytest.param("        count: 4\n        name: gpu\n", "        names: [a, b, a, c]\n",
                 "pools[0].devices[0].names[2]", "device 'a' of driver gpu.example.com is given twice",
                 id="duplicate-name"),
    pytest.param("      - driver: gpu.example.com", "      - driver: GPU_Example",
                 "pools[0].devices[0].driver", "must be a driver name", id="bad-driver"),
    pytest.param("          model: H100", "          model: [H100]", "pools[0].devices[0].attributes.model",
                 "lists 1 values for 4 devices", id="short-list"),
    pytest.param("          model: H100", "          model: {gpu: H100}", "pools[0].devices[0].attributes.model",
                 "must be a string, a whole number", id="attribute-type"),
    pytest.param("          model: H100", "          2model: H100", "pools[0].devices[0].attributes.2model",
                 "is not an attribute name", id="attribute-name"),
    pytest.param("memory: [80Gi, 80Gi, 40Gi, 40Gi]", "memory: [80Gi, 80Gi, 40Gi, lots]",
                 "pools[0].devices[0].capacity.memory[3]", "must be a quantity", id="capacity"),
    pytest.param("        count: 4\n", "        count: 129\n", "pools[0].devices[0].count",
                 "must be a whole number", id="too-many"),
    pytest.param("    metadata: {name: gpu}", "    metadata: {name: gpu}\n    bogus: 1",
                 "deviceClasses[0]", "Additional properties", id="class-schema"),
])
def test_a_bad_device_definition_is_one_line_naming_file_and_field(tmp_path, old, new, field, problem):
    assert old in CLUSTER
    path = write(tmp_path, CLUSTER.replace(old, new))
    with pytest.raises(DefinitionError) as e:
        load_definition(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and field in msg and problem in msg, msg


def test_two_sets_of_one_driver_on_a_node_may_not_repeat_a_name(tmp_path):
    text = CLUSTER.replace("        capacity: {memory: [80Gi, 80Gi, 40Gi, 40Gi]}\n",
                           "      - {driver: gpu.example.com, count: 1, name: gpu}\n")
    with pytest.raises(DefinitionError, match=r"pools\[0\]\.devices\[1\]\.name: device 'gpu-0' of driver "
                                              r"gpu.example.com is given twice"):
        load_definition(write(tmp_path, text))


SCENARIO = """\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: s
cluster: cluster.yaml
steps:
  - createPods: {name: p, devices: {class: gpu, count: 2, sameAttribute: nvlinkDomain}}
  - takeDevicesOffline: {node: n-1, devices: [gpu-3]}
  - expect: {pods: p, devices: [gpu-0, gpu-1]}
"""


def test_a_claim_names_a_class_of_the_definition_and_attributes_get_the_driver_domain(tmp_path):
    write(tmp_path, CLUSTER)
    s = load_scenario(write(tmp_path, SCENARIO, "s.scenario.yaml"))
    assert s.has_devices
    pod = s.steps[0].action.template.builder("p").obj()  # type: ignore[attr-defined]
    name = pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "devices"}]
    (req,) = s.steps[0].action.template.get("devices")  # type: ignore[attr-defined]
    assert req == DeviceRequest("gpu", 2, ("gpu.example.com/nvlinkDomain",))
    tmpl = claim_template([req])
    assert tmpl["metadata"]["name"] == name
    assert tmpl["spec"]["spec"]["devices"]["constraints"] == [
        {"requests": ["r0"], "matchAttribute": "gpu.example.com/nvlinkDomain"}]
    check_manifest(Validator("t"), tmpl, "")
    check_manifest(Validator("p"), pod, "")


@pytest.mark.parametrize("old, new, field, problem", [
    pytest.param("class: gpu,", "class: tpu,", "steps[0].createPods.devices.class",
                 "unknown device class 'tpu': cluster 'devs' defines gpu", id="unknown-class"),
    pytest.param("devices: [gpu-3]", "devices: [gpu-9]", "steps[1].takeDevicesOffline.devices[0]",
                 "node n-1 has no device 'gpu-9'", id="unknown-device"),
    pytest.param("node: n-1", "node: n-9", "steps[1].takeDevicesOffline.node", "unknown node 'n-9'",
                 id="unknown-node"),
    pytest.param("devices: [gpu-0, gpu-1]", "devices: [gpu-0, gpu-0]", "steps[2].expect.devices",
                 "names a device twice", id="twice"),
    pytest.param("count: 2,", "count: 0,", "steps[0].createPods.devices.count", "must be", id="zero"),
    pytest.param("count: 2,", "count: all,", "steps[0].createPods.devices.count", "must be", id="all-lowercase"),
])
def test_a_bad_claim_or_device_step_is_one_line(tmp_path, old, new, field, problem):
    write(tmp_path, CLUSTER)
    path = write(tmp_path, SCENARIO.replace(old, new), "s.scenario.yaml")
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    msg = str(e.value)
    assert "\n" not in msg and field in msg and problem in msg, msg


def test_count_all_asks_for_every_matching_device(tmp_path):
    write(tmp_path, CLUSTER)
    s = load_scenario(write(tmp_path, SCENARIO.replace("count: 2,", "count: All,"), "s.scenario.yaml"))
    (req,) = s.steps[0].action.template.get("devices")  # type: ignore[attr-defined]
    assert req.count == ALL
    tmpl = claim_template([req])
    assert tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu", "allocationMode": "All"}
    check_manifest(Validator("t"), tmpl, "")


def test_pods_asking_the_same_devices_share_one_template():
    a = make_pod("a").devices(DeviceRequest("gpu", 1)).obj()
    b = make_pod("b").devices(DeviceRequest("gpu", 1)).obj()
    c = make_pod("c").devices(DeviceRequest("gpu", 2)).obj()
    names = [p["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] for p in (a, b, c)]
    assert names[0] == names[1] == template_name([DeviceRequest("gpu", 1)]) != names[2]


def test_every_shipped_device_class_is_a_valid_manifest():
    for path in sorted((ROOT / "clusters" / "deviceclasses").glob("*.yaml")):
        check_manifest(Validator(str(path)), yaml.safe_load(path.read_text()), "")
