"""Scenario steps and outcomes about devices (DRA): ``takeDevicesOffline``, ``bringDevicesOnline`` and
``expect: {devices: [...]}``. A pod asks for devices with the template field ``devices``
(:meth:`schedgate.scenarios.parse.Parser.template`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.kube.poll import poll_until
from schedgate.objects.matchers import bound
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step


def _node_devices(p: Parser, raw: Any, w: str) -> tuple[str, tuple[str, ...]]:
    m = p.v.mapping(raw, w, required=("node", "devices"), allowed=("node", "devices"))
    node = p.v.string(m["node"], f"{w}.node")
    if node not in p.node_names:
        p.v.fail(f"{w}.node", f"unknown node {node!r} in cluster {p.definition.name!r}")
    spec = p.added.get(node) or p.definition.node(node)
    have = {n for ds in spec.devices for n in ds.names}
    names = p.v.strings(m["devices"], f"{w}.devices")
    for i, n in enumerate(names):
        if n not in have:
            p.v.fail(f"{w}.devices[{i}]" if isinstance(m["devices"], list) else f"{w}.devices",
                     f"node {node} has no device {n!r} (its devices: {', '.join(sorted(have)) or 'none'})")
    return node, tuple(names)


@step("takeDevicesOffline")
@dataclass(frozen=True)
class TakeDevicesOffline:
    """Republish the node's ResourceSlice without these devices (a GPU gone offline); undone after the test."""

    node: str
    devices: tuple[str, ...]
    offline = True

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> TakeDevicesOffline:
        return cls(*_node_devices(p, raw, w))

    def run(self, r: Run) -> None:
        r.cluster.nodes.set_devices_offline(self.node, list(self.devices), offline=self.offline)


@step("bringDevicesOnline")
@dataclass(frozen=True)
class BringDevicesOnline(TakeDevicesOffline):
    """Put devices taken offline back into the node's ResourceSlice."""

    offline = False


@outcome("devices")
@dataclass(frozen=True)
class Devices:
    """Each pod is bound and its claims hold exactly these devices of its node (another node's device shows
    as ``pool/name`` and fails)."""

    names: tuple[str, ...]

    @classmethod
    def parse(cls, p: Parser, body: Any, m: dict[str, Any], w: str) -> Devices:
        names = p.v.strings(body, w)
        if len(set(names)) != len(names):
            p.v.fail(w, "names a device twice")
        return cls(tuple(names))

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        r.each(pods, bound(), timeout)
        want = sorted(self.names)
        for name in pods:
            pod = r.pod(name)
            got: list[str] = []

            def allocated(pod: Any = pod, got: list[str] = got) -> bool:
                got[:] = sorted(r.cluster.allocated_devices(pod))
                return got == want

            try:
                poll_until(allocated, f"pod {name}'s claims allocated {want}", timeout=timeout, interval=0.2)
            except AssertionError:
                raise AssertionError(f"pod {name} on {pod.node_name}: its claims hold devices {got or 'none'}; "
                                     f"expected exactly {want}") from None
            r.figure(f"step {index}: devices of {name}", ", ".join(got))
