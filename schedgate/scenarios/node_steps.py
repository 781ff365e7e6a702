"""Scenario steps that edit nodes (undone before the next test): label, unlabel, annotateNodes, taint,
untaint, setGPUs, cordon, deleteNodes, stopHeartbeats. Each takes ``nodes``: node and pool names."""

from __future__ import annotations

from dataclasses import dataclass

from schedgate.scenarios.declare import (
    Declared,
    arg,
    read_annotations,
    read_label_key,
    read_label_value,
    read_nodes,
)
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.jsontypes import LABEL, STR, ref, whole
from schedgate.spec.validate import TAINT_EFFECTS

NODES = arg("nodes", "node and pool names (a pool: each of its nodes)", ref("nodeSet"), read_nodes)
KEY = arg("key", "a label or taint key", STR, read_label_key)


@dataclass(frozen=True)
class NodeStep(Declared):
    """A step on a node set: ``nodes``, then the fields each step declares (scenarios.declare)."""

    nodes: tuple[str, ...] = NODES

    def run(self, r: Run) -> None:
        for node in self.nodes:
            self.on(r, node)

    def on(self, r: Run, node: str) -> None:
        raise NotImplementedError


@step("label")
@dataclass(frozen=True)
class Label(NodeStep):
    """Set a label on nodes."""

    key: str = KEY
    value: str = arg("value", "the label's value (quote \"true\"; null: empty)", LABEL, read_label_value)

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.label(node, self.key, self.value)


@step("unlabel")
@dataclass(frozen=True)
class Unlabel(NodeStep):
    """Remove a label from nodes."""

    key: str = KEY

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.label(node, self.key, None)


@step("annotateNodes")
@dataclass(frozen=True)
class AnnotateNodes(NodeStep):
    """Set (or with null remove) annotations on nodes."""

    annotations: tuple[tuple[str, str | None], ...] = arg(
        "annotations", "key -> value; null removes it", ref("annotations"), read_annotations)

    def on(self, r: Run, node: str) -> None:
        for k, val in self.annotations:
            r.cluster.nodes.annotate(node, k, val)


@step("taint")
@dataclass(frozen=True)
class TaintNodes(NodeStep):
    """Taint nodes (a taint with the same key and effect is replaced)."""

    key: str = KEY
    value: str = arg("value", "the taint's value (default: none)", LABEL, read_label_value, default="")
    effect: str = arg("effect", "NoSchedule (default), PreferNoSchedule or NoExecute", {"enum": list(TAINT_EFFECTS)},
                      lambda p, x, w: p.v.taint_effect(x, w), default="NoSchedule")

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.taint(node, self.key, self.value, self.effect)


@step("untaint")
@dataclass(frozen=True)
class Untaint(NodeStep):
    """Remove the taints of a key from nodes."""

    key: str = KEY

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.untaint(node, self.key)


@step("setGPUs")
@dataclass(frozen=True)
class SetGPUs(NodeStep):
    """Set the GPUs (nvidia.com/gpu) nodes report, as a device plugin would."""

    count: int = arg("count", "GPUs each node reports", whole(), lambda p, x, w: p.v.whole(x, w))

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.set_gpus(node, self.count)


@step("deleteNodes")
@dataclass(frozen=True)
class DeleteNodes(NodeStep):
    """Delete nodes (on local; a kubelet's node registers itself again)."""

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.delete(node)


@step("cordon")
@dataclass(frozen=True)
class Cordon(NodeStep):
    """Mark nodes unschedulable (``kubectl cordon``); undone before the next test."""

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.cordon(node)


@step("stopHeartbeats")
@dataclass(frozen=True)
class StopHeartbeats(NodeStep):
    """Stop the nodes' heartbeats, as a kubelet cut off from the API server (needs a node agent:
    ``nodeAgent`` in the cluster definition): after the node lifecycle controller's grace period the
    node is Ready=Unknown and tainted ``node.kubernetes.io/unreachable``, and pods that do not tolerate
    that are evicted. Started again before the next test."""

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.stop_heartbeat(node)
