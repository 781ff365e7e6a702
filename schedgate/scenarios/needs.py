"""What a scenario file needs of the scheduler under test beyond the common ground (spec.blackbox).

Most needs show in the file itself — a ``metric`` expectation reads kube-scheduler's
/metrics, a ``message`` matches its wording — and are found here; what does not
show (that a placement is a profile's scoring choice) the file declares in
``requires:``. A black box that does not offer one of them skips the file, naming
the need and the first field that makes it. ``requires:`` may also name a Kubernetes
feature (spec.features) that older minors have off by default: there the file skips.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from schedgate.scenarios.template import POD_FIELDS
from schedgate.spec.blackbox import CAPABILITIES
from schedgate.spec.features import FEATURES
from schedgate.spec.jsontypes import Schema, listing
from schedgate.spec.validate import Validator
from schedgate.spec.versions import KUBERNETES, RANGE_PATTERN, version_need

# Step and outcome names that need a capability, wherever they appear.
BY_KEY = {
    "metric": "metrics", "performance": "metrics", "measurePerformance": "metrics",
    "attempts": "logs", "nominatedNode": "preemption", "schedulingGated": "scheduling-gates",
    "devices": "devices", "takeDevicesOffline": "devices", "bringDevicesOnline": "devices",
    "extender": "kube-scheduler", "startScheduler": "kube-scheduler",
    "podAffinity": "inter-pod-affinity", "podAntiAffinity": "inter-pod-affinity",
    "topologySpreadConstraints": "topology-spread", "hostPort": "host-ports",
    "priorityClassName": "preemption", "resourceClaims": "devices",
    **{f.key: f.needs for f in POD_FIELDS if f.needs},  # the pod fields' own (scenarios.template)
}
# Steps and outcomes that need nodes which are API objects only (no kubelet behind them), by what they need:
# "adds" a node schedgate creates (a kubelet's node registers itself), "overcommits" a node whose kubelet
# would not refuse a pod that does not fit (the API server accepts the binding).
NODE_OBJECTS = {"addNodes": "adds", "measurePerformance": "adds", "overcommitted": "overcommits"}
# Keys that need kube-scheduler's wording under these outcomes.
WORDED = ("unschedulable", "schedulingError", "event")


REQUIRES: Schema = listing({"anyOf": [{"enum": [*CAPABILITIES, *FEATURES]}, {
    "type": "string", "pattern": rf"^kubernetes *{RANGE_PATTERN}$",
    "description": "Kubernetes versions, all of whose comparators hold (alternatives joined by ||): "
                   "kubernetes>=1.37"}]}, 0)


def requires(v: Validator, raw: Any) -> dict[str, str]:
    """The file's ``requires:`` list, each checked against the known capabilities and features."""
    known = ", ".join([*CAPABILITIES, *FEATURES])
    if raw is None:
        return {}
    if not isinstance(raw, list):
        v.fail("requires", f"must be a list of capabilities or Kubernetes features (known: {known})")
    out: dict[str, str] = {}
    for i, cap in enumerate(raw):
        if isinstance(cap, str) and cap.startswith(KUBERNETES):
            try:
                version_need(cap)
            except ValueError as e:
                v.fail(f"requires[{i}]", f"Kubernetes versions: {e}")
        elif not isinstance(cap, str) or (cap not in CAPABILITIES and cap not in FEATURES):
            v.fail(f"requires[{i}]", f"unknown capability or feature {cap!r} (known: {known}; or Kubernetes "
                                     "versions: kubernetes>=1.37)")
        out[cap] = f"requires[{i}]"
    return out


def found(doc: dict[str, Any]) -> dict[str, str]:
    """Each capability the file's templates and steps need, with the first field that needs it."""
    out: dict[str, str] = {}
    for path, key, value in _walk({"templates": doc.get("templates") or {}, "steps": doc.get("steps") or []}, ""):
        cap = BY_KEY.get(key)
        if key == "message" and any(f".{w}." in f"{path}." for w in WORDED):
            cap = "messages"
        if key == "devices" and not value:
            cap = None
        if cap:
            out.setdefault(cap, path)
    return out


def node_objects(doc: dict[str, Any]) -> dict[str, str]:
    """Each need of nodes that are API objects only (``NODE_OBJECTS``' values), with the first step field that
    has it."""
    out: dict[str, str] = {}
    for path, key, _ in _walk({"steps": doc.get("steps") or []}, ""):
        if key in NODE_OBJECTS:
            out.setdefault(NODE_OBJECTS[key], path)
    return out


def _walk(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            here = f"{path}.{k}" if path else str(k)
            yield here, str(k), v
            yield from _walk(v, here)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")
