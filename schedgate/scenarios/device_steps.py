"""Scenario steps and outcomes about devices (DRA): ``takeDevicesOffline``, ``bringDevicesOnline`` and
``expect: {devices: [...]}``. A pod asks for devices with the template field ``devices``
(:meth:`schedgate.scenarios.parse.Parser.template`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.kube.poll import poll_until
from schedgate.objects.matchers import bound
from schedgate.scenarios.declare import Declared, DeclaredOutcome, arg, body
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.jsontypes import STR, ref


def _read_node(p: Parser, raw: Any, w: str) -> str:
    node = p.v.string(raw, w)
    if node not in p.node_names:
        p.v.fail(w, f"unknown node {node!r} in cluster {p.definition.name!r}")
    return node


@step("takeDevicesOffline")
@dataclass(frozen=True)
class TakeDevicesOffline(Declared):
    """Republish the node's ResourceSlice without these devices (a GPU gone offline); undone after the test."""

    node: str = arg("node", "a node's name (of the definition or an earlier addNodes step)", STR, _read_node)
    devices: tuple[str, ...] = arg("devices", "device names, each one the node has", ref("names"),
                                   lambda p, x, w: tuple(p.v.strings(x, w)))
    offline = True

    @classmethod
    def read(cls, p: Parser, raw: Any, w: str) -> dict[str, Any]:
        """The fields, then each device checked against the node's: the one check across the two."""
        fields = super().read(p, raw, w)
        node = fields["node"]
        spec = p.added.get(node) or p.definition.node(node)
        have = {n for ds in spec.devices for n in ds.names}
        for i, n in enumerate(fields["devices"]):
            if n not in have:
                p.v.fail(f"{w}.devices[{i}]" if isinstance(raw["devices"], list) else f"{w}.devices",
                         f"node {node} has no device {n!r} (its devices: {', '.join(sorted(have)) or 'none'})")
        return fields

    def run(self, r: Run) -> None:
        r.cluster.nodes.set_devices_offline(self.node, list(self.devices), offline=self.offline)


@step("bringDevicesOnline")
@dataclass(frozen=True)
class BringDevicesOnline(TakeDevicesOffline):
    """Put devices taken offline back into the node's ResourceSlice."""

    offline = False


def _device_names(p: Parser, raw: Any, w: str) -> tuple[str, ...]:
    names = p.v.strings(raw, w)
    if len(set(names)) != len(names):
        p.v.fail(w, "names a device twice")
    return tuple(names)


@outcome("devices")
@dataclass(frozen=True)
class Devices(DeclaredOutcome):
    """Each pod is bound and its claims hold exactly these devices of its node (another node's device shows
    as ``pool/name`` and fails)."""

    names: tuple[str, ...] = body("device names, each once", ref("names"), _device_names)

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
