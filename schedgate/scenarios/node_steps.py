"""Scenario steps that edit nodes (undone before the next test): label, unlabel, annotateNodes, taint,
untaint, setGPUs, cordon, deleteNodes, stopHeartbeats. Each takes ``nodes``: node and pool names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step


@dataclass(frozen=True)
class NodeStep:
    """A step on a node set (``nodes``: node and pool names); ``FIELDS`` are its other fields."""

    nodes: tuple[str, ...]
    FIELDS: ClassVar[tuple[str, ...]] = ()
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parse_nodes(cls, p: Parser, raw: Any, w: str) -> tuple[dict[str, Any], tuple[str, ...]]:
        m = p.v.mapping(raw, w, required=("nodes", *cls.FIELDS), allowed=("nodes", *cls.FIELDS, *cls.OPTIONAL))
        return m, tuple(p.node_set(m["nodes"], f"{w}.nodes"))

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> Self:
        """A step with no fields but ``nodes``; steps with more parse them too."""
        _, nodes = cls.parse_nodes(p, raw, w)
        return cls(nodes=nodes)

    def run(self, r: Run) -> None:
        for node in self.nodes:
            self.on(r, node)

    def on(self, r: Run, node: str) -> None:
        raise NotImplementedError


def _key(p: Parser, m: dict[str, Any], w: str) -> str:
    key = p.v.string(m["key"], f"{w}.key")
    p.v.label_key(key, f"{w}.key")
    return key


@dataclass(frozen=True)
class KeyStep(NodeStep):
    """A step on a node set naming one label or taint ``key``."""

    key: str = ""
    FIELDS: ClassVar[tuple[str, ...]] = ("key",)

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> Self:
        m, nodes = cls.parse_nodes(p, raw, w)
        return cls(nodes=nodes, key=_key(p, m, w))


@step("label")
@dataclass(frozen=True)
class Label(NodeStep):
    key: str = ""
    value: str = ""
    FIELDS: ClassVar[tuple[str, ...]] = ("key", "value")

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> Label:
        m, nodes = cls.parse_nodes(p, raw, w)
        value = p.v.labels({"value": m["value"]}, w)["value"] if m["value"] is not None else ""
        return cls(nodes=nodes, key=_key(p, m, w), value=value)

    def on(self, r: Run, node: str) -> None:
        r.cluster.label(node, self.key, self.value)


@step("unlabel")
@dataclass(frozen=True)
class Unlabel(KeyStep):
    def on(self, r: Run, node: str) -> None:
        r.cluster.unlabel(node, self.key)


@step("annotateNodes")
@dataclass(frozen=True)
class AnnotateNodes(NodeStep):
    annotations: tuple[tuple[str, str | None], ...] = ()
    FIELDS: ClassVar[tuple[str, ...]] = ("annotations",)

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> AnnotateNodes:
        m, nodes = cls.parse_nodes(p, raw, w)
        ann = p.v.mapping(m["annotations"], f"{w}.annotations")
        return cls(nodes=nodes, annotations=tuple((a, None if x is None else str(x)) for a, x in ann.items()))

    def on(self, r: Run, node: str) -> None:
        for k, val in self.annotations:
            r.cluster.annotate(node, k, val)


@step("taint")
@dataclass(frozen=True)
class TaintNodes(NodeStep):
    key: str = ""
    value: str = ""
    effect: str = "NoSchedule"
    FIELDS: ClassVar[tuple[str, ...]] = ("key",)
    OPTIONAL: ClassVar[tuple[str, ...]] = ("value", "effect")

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> TaintNodes:
        m, nodes = cls.parse_nodes(p, raw, w)
        value = p.v.labels({"value": m["value"]}, w)["value"] if m.get("value") is not None else ""
        effect = p.v.taint_effect(m["effect"], f"{w}.effect") if "effect" in m else "NoSchedule"
        return cls(nodes=nodes, key=_key(p, m, w), value=value, effect=effect)

    def on(self, r: Run, node: str) -> None:
        r.cluster.taint(node, self.key, self.value, self.effect)


@step("untaint")
@dataclass(frozen=True)
class Untaint(KeyStep):
    def on(self, r: Run, node: str) -> None:
        r.cluster.untaint(node, self.key)


@step("setGPUs")
@dataclass(frozen=True)
class SetGPUs(NodeStep):
    count: int = 0
    FIELDS: ClassVar[tuple[str, ...]] = ("count",)

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> SetGPUs:
        m, nodes = cls.parse_nodes(p, raw, w)
        return cls(nodes=nodes, count=p.v.whole(m["count"], f"{w}.count"))

    def on(self, r: Run, node: str) -> None:
        r.cluster.set_gpus(node, self.count)


@step("deleteNodes")
@dataclass(frozen=True)
class DeleteNodes(NodeStep):
    def on(self, r: Run, node: str) -> None:
        r.cluster.delete_node(node)


@step("cordon")
@dataclass(frozen=True)
class Cordon(NodeStep):
    """Mark nodes unschedulable (``kubectl cordon``); undone before the next test."""

    def on(self, r: Run, node: str) -> None:
        r.cluster.cordon(node)


@step("stopHeartbeats")
@dataclass(frozen=True)
class StopHeartbeats(NodeStep):
    """Stop the nodes' heartbeats, as a kubelet cut off from the API server (needs a node agent:
    ``nodeAgent`` in the cluster definition): after the node lifecycle controller's grace period the
    node is Ready=Unknown and tainted ``node.kubernetes.io/unreachable``, and pods that do not tolerate
    that are evicted. Started again before the next test."""

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.stop_heartbeat(node)
