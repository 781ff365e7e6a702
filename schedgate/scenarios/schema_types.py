"""The JSON types of scenario and cluster file fields, for :mod:`schedgate.scenarios.schema`: what the
loader's probes cannot tell (a field's JSON type) and rules no probe reaches, for the fields no step or
outcome declares on its class (:mod:`schedgate.scenarios.declare`)."""

from __future__ import annotations

from schedgate.scenarios import load
from schedgate.scenarios.bounds import BOUNDS
from schedgate.scenarios.jsontypes import (
    BOOL,
    CONFIG,
    DNS,
    LABEL,
    NAMES,
    NODE_OR_MANIFEST,
    SCALAR,
    STR,
    Schema,
    listing,
    ref,
    whole,
)
from schedgate.scenarios.log_outcomes import QUEUES
from schedgate.scenarios.parse import MAX_PODS
from schedgate.scenarios.perf_steps import BASELINES
from schedgate.scenarios.steps import WAIT_UNTIL
from schedgate.spec.agent import KINDS as AGENT_KINDS
from schedgate.spec.agent import MIN_GRACE
from schedgate.spec.blackbox import CAPABILITIES
from schedgate.spec.cluster import API_VERSION, CONDITION_STATUSES, MAX_NODES
from schedgate.spec.devices import MAX_DEVICES
from schedgate.spec.features import FEATURES
from schedgate.spec.validate import MAX_SECONDS, TAINT_EFFECTS

_CMPS = r"((>=|<=|==|>|<)v?\d+\.\d+(\.\d+)? *)+"  # a version range's comparators

DEFS: dict[str, Schema] = {
    "nodeSet": {"description": "node and pool names (a pool: each of its nodes): one or a list", **NAMES},
    "podSet": {"description": "names or globs (infer-*) of pods earlier steps created: one or a list", **NAMES},
    "names": {"description": "one name or a list", **NAMES},
    "quantity": {"description": "a quantity: 8, 500m, 64Gi, 1e3", "type": ["string", "number"], "minimum": 0},
    "resources": {"type": "object", "additionalProperties": ref("quantity"), "description": "resource name (cpu, "
                  "memory, pods, ephemeral-storage, hugepages-<size>, or domain/name: nvidia.com/gpu) -> quantity"},
    "labels": {"description": "label key -> value (quote \"true\")", "type": "object", "additionalProperties": LABEL},
    "annotations": {"description": "annotation key -> value", "type": "object", "additionalProperties": SCALAR},
}

# A field's type by its name, wherever it appears; ``context.field`` where the name means something else
# there (context: a step or outcome name, Scenario, Cluster, pool, node, taint, toleration, faults).
TYPES: dict[str, Schema] = {
    "drop": ref("nodeSet"), "pods": ref("podSet"),
    "timeout": {"type": "number", "minimum": 0.1, "maximum": MAX_SECONDS, "description": "seconds (default 30)"},
    "latency": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS, "description": "seconds"},
    "count": whole(), "size": {**whole(1), "description": "GPUs of a whole node (default 8)"},
    "gpuCycle": {**listing(whole(), 1), "description": "pod i asks for the i-th count, cycling"},
    "status": whole(100, 599), "malformed": BOOL, "down": BOOL, "unschedulable": BOOL,
    "capacity": ref("resources"), "allocatable": ref("resources"), "labels": ref("labels"),
    "annotations": {**ref("annotations"), "description": "key -> value; null removes it"},
    "taints": listing(ref("taint")), "conditions": listing(ref("condition"), 1),
    "condition.type": STR, "condition.status": {"enum": list(CONDITION_STATUSES)},
    "effect": {"enum": list(TAINT_EFFECTS)}, "until": {"enum": list(WAIT_UNTIL)}, "value": LABEL,
    "oneAtATime": {**BOOL, "description": "wait until each pod is bound or refused before the next"},
    # manifest, manifests (apply) and patch: declared on their steps; kept as field names test_schema.py tries.
    "manifest": {"type": "object", "description": "an object of any kind the pinned API serves"},
    "manifests": listing({"type": "object"}, 1), "patch": {"type": "object", "description": "a merge patch"},
    # Declared on their outcomes (attempts, requeued, metric, overcommitted, evicted, scheduledOn's extras,
    # running, unbound, notEvicted, countsOn), so no schema reads these: kept as field names
    # tests/unit/scenarios/test_schema.py tries on every mapping (its candidates), which no other entry names.
    "never": {**ref("nodeSet"), "description": "default: every other node"}, "distinctNodes": whole(1),
    "attempts.for": {"type": "number", "minimum": 0.1, "maximum": 600,
                     "description": "seconds the upper bound must hold (equals or atMost)"},
    "requeued.event": {**STR, "description": "a regular expression of the cluster event's label"},
    "requeued.queue": {"enum": list(QUEUES)}, **dict.fromkeys(BOUNDS, {"type": "number"}),
    "overcommitted.resource": {**STR, "description": "a resource name (default nvidia.com/gpu)"},
    "expect.evicted": {"anyOf": [{"const": True}, {
        "type": "object", "required": ["reason"], "additionalProperties": False,
        "properties": {"reason": {**STR, "description": "DeletionByTaintManager, PreemptionByScheduler, ..."}}}]},
    # Declared on measurePerformance and performance: kept as field names test_schema.py tries on every mapping.
    "measurePerformance.profile": {**STR, "description": "a profile of the configuration under test"},
    "measurePerformance.baseline": {"enum": list(BASELINES), "description": "in-tree (default): the profile "
                                    "without out-of-tree plugins; same: the profile itself"},
    "measurePerformance.backlog": {**whole(2, MAX_PODS), "description": "pods waiting when a side starts (200)"},
    "measurePerformance.rounds": {**whole(1, 10), "description": "turns per side (2)"},
    "measurePerformance.pairedRounds": {**whole(0, 30), "description": "rounds of both sides at once, for CPU "
                                                                      "per pod (0: none)"},
    "measurePerformance.pairedPods": {**whole(10, MAX_PODS), "description": "pods of each side in a paired "
                                                                           "round (100)"},
    **{f"performance.{k}": {"type": "object", "description": "a budget"}
       for k in ("throughput", "p50", "p99", "cpuPerPod", "extensionPoints")},
    "expect.running": {"const": True}, "expect.unbound": {"const": True},
    "expect.notEvicted": {"const": True},
    "expect.countsOn": {"type": "object", "minProperties": 1, "additionalProperties": whole(),
                        "description": "node or pool -> exactly this many of the pods"},
    "type": {"enum": ["Normal", "Warning"]},
    "message": {**STR, "description": "a regular expression"},
    "name": STR, "key": STR, "template": STR, "reason": STR,
    "by": STR, "scheduler": {**STR, "description": "the scheduler's name (default: default-scheduler)"},
    "node": {**STR, "description": "a node's name"},
    "addNodes.nodes": listing(NODE_OR_MANIFEST, 1),
    "Scenario.apiVersion": {"const": API_VERSION}, "Scenario.kind": {"const": load.KIND}, "Scenario.name": DNS,
    "Scenario.description": {"type": "string"}, "Scenario.steps": listing(ref("step"), 1),
    "Scenario.knownBug": {
        "type": "object", "required": ["issue", "affects", "failsWith"], "additionalProperties": False,
        "description": "an upstream bug the file shows on some versions: there it must fail so (xfail, strict)",
        "properties": {
            "issue": {**STR, "pattern": r"^[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*#\d+$",
                      "description": "owner/repo#number: kubernetes/kubernetes#140053"},
            "affects": {**STR, "description": "the versions it affects: comparators, all of which hold "
                                              "('>=1.35.0 <1.37.0'), alternatives joined by '||'"},
            "failsWith": {**STR, "description": "a regular expression the failure's message matches there"}}},
    "Scenario.requires": {**listing({"anyOf": [{"enum": [*CAPABILITIES, *FEATURES]}, {
        "type": "string", "pattern": rf"^kubernetes *{_CMPS}( *\|\| *{_CMPS})*$",
        "description": "Kubernetes versions, all of whose comparators hold (alternatives joined by ||): "
                       "kubernetes>=1.37"}]}, 0),
                          "description": "what it needs of the scheduler under test that its steps do not show, "
                                         "Kubernetes features older minors have off by default, and "
                                         "Kubernetes versions (elsewhere the file skips)"},
    "Scenario.cluster": {"anyOf": [{**STR, "description": "a cluster definition file"}, ref("cluster")]},
    "Scenario.scheduler": {"anyOf": [CONFIG, {"type": "object", "description": "an inline configuration"}]},
    "Scenario.templates": {"type": "object", "propertyNames": DNS, "additionalProperties": ref("template")},
    "Cluster.apiVersion": {"const": API_VERSION}, "Cluster.kind": {"const": "Cluster"}, "Cluster.name": DNS,
    "Cluster.pools": listing(ref("pool")), "Cluster.nodes": listing(NODE_OR_MANIFEST),
    "Cluster.featureGates": {"type": "object", "propertyNames": {"pattern": "^[A-Z][A-Za-z0-9]*$"},
                             "additionalProperties": {"type": "boolean"},
                             "description": "feature gate -> on, for every component (checked against the pinned "
                                            "kube-apiserver's own list)"},
    "Cluster.runtimeConfig": {"type": "object", "additionalProperties": {"type": "boolean"},
                              "description": "API group/version -> served, for the API server's --runtime-config"},
    "Cluster.nodeAgent": {"type": "object", "required": ["kind"], "additionalProperties": False,
                          "description": "what runs the pods of API-only nodes on the local provider",
                          "properties": {"kind": {"enum": list(AGENT_KINDS)}, "nodeMonitorGracePeriod": {
                              "type": "number", "minimum": MIN_GRACE, "maximum": 3600,
                              "description": "seconds without a heartbeat before a node is Unknown (50)"}}},
    "pool.name": {**DNS, "description": "its nodes are NAME-1 .. NAME-COUNT"}, "pool.count": whole(1, MAX_NODES),
    "Cluster.deviceClasses": listing({"anyOf": [{**STR, "description": "a file of one DeviceClass manifest"}, {
        "type": "object", "description": "a DeviceClass manifest (resource.k8s.io/v1)"}]}, 1),
    "pool.devices": listing(ref("deviceSet"), 1), "node.devices": listing(ref("deviceSet"), 1),
    "deviceSet.driver": {**STR, "maxLength": 63}, "deviceSet.count": whole(1, MAX_DEVICES),
    "deviceSet.name": {**STR, "description": "a prefix: devices NAME-0 .. NAME-(COUNT-1) (default dev)"},
    "deviceSet.names": listing(STR, 1), "deviceSet.attributes": {
        "type": "object", "description": "attribute -> a string, whole number, boolean or {version: X} for "
        "every device, or a list of them (one per device)"},
    "deviceSet.capacity": {"type": "object", "description": "capacity -> a quantity, or a list (one per device)"},
    "deviceSet.counters": {"type": "object", "description": "shared counter sets of the node's pool of this driver "
                           "(DRAPartitionableDevices): set -> counter -> quantity",
                           "additionalProperties": {"type": "object", "additionalProperties": ref("quantity")}},
    "deviceSet.consumes": {"description": "what each device draws on the counters: set -> counter -> quantity, "
                           "or a list (one per device)", "anyOf": [
                               {"type": "object"}, {"type": "array", "items": {"type": "object"}}]},
    "createPods.devices": {"anyOf": [ref("deviceRequest"), listing(ref("deviceRequest"), 1)]},
    "deviceRequest.class": {**STR, "description": "a DeviceClass of the cluster definition"},
    "deviceRequest.count": {"anyOf": [whole(1, MAX_DEVICES), {"const": "All"}], "description": "devices the "
                            "claim asks for, or All: every matching device of a node (allocationMode All)"},
    "deviceRequest.sameAttribute": {
        **ref("names"), "description": "attributes all devices share (matchAttribute); domain/ optional"},
    "deviceRequest.selector": {**ref("names"), "description": "CEL expressions each device must pass"},
}

RULES: dict[str, Schema] = {
    "Cluster": {"anyOf": [{"required": [k], "properties": {k: {"minItems": 1}}} for k in ("pools", "nodes")]},
    "setResources": {"anyOf": [{"required": ["capacity"]}, {"required": ["allocatable"]}]},
}
