"""Devices that share a pool's counters (partitions of one GPU): how a definition says so, the one line a
mistake gets, and the two ResourceSlices of the pool schedgate writes (devices and counters, one generation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import load_text, shipped_scenario

from schedgate.cluster.devices import ApiSlices, counter_slice_name, slice_name
from schedgate.errors import DefinitionError
from schedgate.scenarios.load import Scenario
from schedgate.spec.devices import counters_only_local

TEXT = shipped_scenario("dra-partitions")


def load(tmp_path: Path, text: str = TEXT) -> Scenario:
    return load_text(tmp_path, text)


def test_the_halves_and_the_whole_draw_on_one_counter_and_need_the_feature(tmp_path):
    scenario = load(tmp_path)
    (ds,) = scenario.definition.nodes()[0].devices
    assert ds.counters_api() == [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]
    assert [d.to_api()["consumesCounters"] for d in ds.devices] == [
        [{"counterSet": "gpu-0", "counters": {"memory": {"value": q}}}] for q in ("80Gi", "40Gi", "40Gi")]
    assert scenario.needs["DRAPartitionableDevices"] == "cluster: devices' counters"
    assert "published by the local provider" in counters_only_local(scenario.definition, "kind's kubelet workers")


@pytest.mark.parametrize("old, new, problem", [
    ("- {gpu-0: {memory: 40Gi}}\n            - {gpu-0: {memory: 40Gi}}", "- {gpu-1: {memory: 40Gi}}\n"
     "            - {gpu-0: {memory: 40Gi}}",
     "cluster.nodes[0].devices[0].consumes[1].gpu-1: no counter set 'gpu-1' of this driver on this node "
     "(counters: gpu-0) (line 29)"),
    ("- {gpu-0: {memory: 80Gi}}", "- {gpu-0: {cores: 8}}",
     "cluster.nodes[0].devices[0].consumes[0].gpu-0.cores: counter set 'gpu-0' has no counter 'cores' (it has "
     "memory) (line 28)"),
    ("gpu-0: {memory: 80Gi}\n", "gpu-0: {memory: lots}\n",
     "cluster.nodes[0].devices[0].counters.gpu-0.memory: must be a quantity (80Gi, 4, 500m), got 'lots' (line 24)"),
    ("            - {gpu-0: {memory: 40Gi}}\n            - {gpu-0: {memory: 40Gi}}\n",
     "            - {gpu-0: {memory: 40Gi}}\n",
     "cluster.nodes[0].devices[0].consumes: lists 2 values for 3 devices (one per device, or one value for all) "
     "(line 27)"),
])
def test_a_counter_written_wrong_is_one_line(tmp_path, old, new, problem):
    assert old in TEXT
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, TEXT.replace(old, new, 1))
    assert problem in str(e.value)
    assert len(str(e.value).splitlines()) == 1


class FakeSlices:
    """The ResourceV1Api calls ApiSlices makes, over a dict."""

    def __init__(self) -> None:
        self.slices: dict[str, dict[str, Any]] = {}

    def read_resource_slice(self, name: str, **_: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        if name not in self.slices:
            raise ApiException(status=404)
        import json

        class Resp:
            data = json.dumps({**self.slices[name], "metadata": {"name": name, "resourceVersion": "1"}}).encode()
        return Resp()

    def create_resource_slice(self, body: dict[str, Any]) -> None:
        self.slices[body["metadata"]["name"]] = body

    def replace_resource_slice(self, name: str, body: dict[str, Any]) -> None:
        self.slices[name] = body

    def delete_resource_slice(self, name: str) -> None:
        if name not in self.slices:
            from kubernetes.client.exceptions import ApiException
            raise ApiException(status=404)
        del self.slices[name]


def test_a_pool_with_counters_is_two_slices_of_one_generation_and_loses_the_second_without_them(tmp_path):
    (ds,) = load(tmp_path).definition.nodes()[0].devices
    res = FakeSlices()
    slices = ApiSlices(res)
    assert slices.write("part", ds.driver, ds.devices, 0, ds.counters) == 1
    devices, counters = res.slices[slice_name("part", ds.driver)], res.slices[counter_slice_name("part", ds.driver)]
    assert devices["spec"]["pool"] == counters["spec"]["pool"] == {"name": "part", "generation": 1,
                                                                   "resourceSliceCount": 2}
    assert "sharedCounters" not in devices["spec"] and "devices" not in counters["spec"]
    assert counters["spec"]["sharedCounters"] == ds.counters_api()
    assert slices.write("part", ds.driver, ds.devices[1:], 1, ds.counters) == 2  # a device taken offline
    assert res.slices[counter_slice_name("part", ds.driver)]["spec"]["pool"]["generation"] == 2
    assert slices.write("part", ds.driver, (), 2) == 3
    assert set(res.slices) == {slice_name("part", ds.driver)}
    assert res.slices[slice_name("part", ds.driver)]["spec"]["pool"]["resourceSliceCount"] == 1
