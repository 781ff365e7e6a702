"""Scenario steps for objects of any kind and for nodes by spec: apply, patch, delete, addNodes,
setResources, setConditions. Each is undone after the test: applied objects are deleted (namespaced ones go with the
run's namespace), added nodes deleted, changed resources put back as defined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.kube.api import read_json
from schedgate.kube.poll import poll_until
from schedgate.objects.builders import PLACEHOLDER_IMAGE
from schedgate.providers.rbac import PLUGIN_ROLE_LABEL, PLUGIN_ROLE_SUFFIX
from schedgate.scenarios.declare import Declared, arg, read_string
from schedgate.scenarios.node_steps import NodeStep
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.cluster import Condition, NodeSpec, parse_conditions, parse_node_or_manifest
from schedgate.spec.crds import is_crd, served_kinds
from schedgate.spec.files import read_text
from schedgate.spec.jsontypes import NODE_OR_MANIFEST, STR, Schema, listing, ref
from schedgate.spec.manifest import describe, object_manifest
from schedgate.spec.validate import Validator, join
from schedgate.spec.yamlfile import MAX_BYTES, parse_yaml_all

# Kinds a scenario makes with its own steps, where the harness keeps track of them.
_OWN_STEP = {"Pod": "createPods", "Node": "addNodes (or a node step: label, taint, setResources, ...)",
             "Namespace": "nothing: the run has its namespace"}


def _manifest(p: Parser, body: Any, w: str, v: Validator | None = None) -> dict[str, Any]:
    """One object to apply: of a kind no step of the scenario's own makes, and not applied before; a
    CustomResourceDefinition makes the kinds it serves ones the later steps may apply (``v``: the checks of
    the file the object is in, if not the scenario's)."""
    v = v or p.v
    kind = body.get("kind") if isinstance(body, dict) else None
    if isinstance(kind, str) and kind in _OWN_STEP:  # any other kind: the manifest's own check names it
        v.fail(join(w, "kind"), f"{kind} objects are made by {_OWN_STEP[kind]}, not apply")
    manifest = object_manifest(v, body, w, p.custom_kinds)
    ref = (str(manifest["kind"]), str(manifest["metadata"]["name"]))
    if ref in p.applied:
        v.fail(join(w, "metadata.name"), f"{describe(manifest)} is already applied by an earlier step")
    p.applied[ref] = str(manifest["apiVersion"])
    if is_crd(manifest):
        p.custom_kinds.update(served_kinds(v, manifest, w))
    return manifest


def _manifests(p: Parser, raw: Any, w: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(raw, list) or not raw:
        p.v.fail(w, "must be a non-empty list of objects")
    return tuple(_manifest(p, body, f"{w}[{i}]") for i, body in enumerate(raw))


def _files(p: Parser, raw: Any, w: str) -> tuple[dict[str, Any], ...]:
    """The objects of YAML files (each document one; a CRD release's files as they are), named relative to the
    scenario's folder; a problem in one names that file, its document and field."""
    out: list[dict[str, Any]] = []
    for i, name in enumerate(p.v.strings(raw, w)):
        path = p.referenced(name)
        if not path.is_file():
            p.v.fail(f"{w}[{i}]", f"no file {name!r} (relative to {p.path.parent})")
        docs = parse_yaml_all(read_text(path, "manifest", MAX_BYTES), path)
        if not docs:
            p.v.fail(f"{w}[{i}]", f"{name!r} holds no object")
        for j, (doc, lines) in enumerate(docs):
            source = f"{path} (document {j + 1} of {len(docs)})" if len(docs) > 1 else str(path)
            out.append(_manifest(p, doc, "", Validator(source, lines)))
    return tuple(out)


MANIFEST: Schema = {"type": "object", "description": "an object of any kind the pinned API serves"}


@step("apply")
@dataclass(frozen=True)
class Apply(Declared):
    """``manifest`` (or ``manifests``, or ``files``): objects of any kind the pinned API serves, created in order.
    A CustomResourceDefinition is waited for until it serves its kinds; the later steps may apply objects of them,
    checked against its schema. A container image ``schedgate.invalid/placeholder:0`` becomes the cluster's own
    pod image."""

    RULE: ClassVar[Schema] = {"oneOf": [{"required": ["manifest"]}, {"required": ["manifests"]},
                                        {"required": ["files"]}]}

    manifest: dict[str, Any] | None = arg("manifest", MANIFEST["description"], MANIFEST, _manifest, default=None)
    manifests: tuple[dict[str, Any], ...] = arg("manifests", "objects of any kind the pinned API serves, in order",
                                                listing({"type": "object"}, 1), _manifests, default=())
    files: tuple[dict[str, Any], ...] = arg("files", "YAML files of such objects (a document each), relative to "
                                                     "the scenario's folder, in order", listing(STR, 1), _files,
                                            default=())

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> None:
        if sum(k in m for k in ("manifest", "manifests", "files")) != 1:
            p.v.fail(w, "needs one of 'manifest' (an object), 'manifests' (a list of objects) or 'files' (YAML "
                        "files of objects)")

    @property
    def objects(self) -> tuple[dict[str, Any], ...]:
        return (self.manifest,) if self.manifest is not None else self.manifests or self.files

    def run(self, r: Run) -> None:
        r.cluster.settle()
        image = r.cluster.backend.pod_image
        for manifest in self.objects:
            r.objects.create(_with_image(manifest, image) if image != PLACEHOLDER_IMAGE else manifest)
            if manifest["kind"] == "PriorityClass":
                _in_effect(r, str(manifest["metadata"]["name"]))
            elif manifest["kind"] == "ClusterRole" and (manifest["metadata"].get("labels") or {}).get(
                    PLUGIN_ROLE_LABEL) == "true":
                _aggregated(r, manifest)


def _plain_rule(rule: Any) -> dict[str, Any]:
    return {k: v for k, v in rule.items() if v} if isinstance(rule, dict) else {}


def _aggregated(r: Run, role: dict[str, Any], timeout: float = 30.0) -> None:
    """Wait until the controller manager has copied the rules of ``role`` (a ClusterRole for the schedulers'
    plugins, :data:`~schedgate.providers.rbac.PLUGIN_ROLE_LABEL`) into each scheduler's aggregated role: a scheduler
    started by the next step lists what it grants from its first request."""
    rbac = k8s.RbacAuthorizationV1Api(r.cluster.api)
    wanted = [_plain_rule(x) for x in role.get("rules") or []]

    def missing() -> list[str]:
        roles = read_json(rbac.list_cluster_role, label_selector="app.kubernetes.io/managed-by=schedgate")["items"]
        return [x["metadata"]["name"] for x in roles if x["metadata"]["name"].endswith(PLUGIN_ROLE_SUFFIX)
                and any(w not in [_plain_rule(y) for y in x.get("rules") or []] for w in wanted)]

    poll_until(lambda: not missing(), f"the rules of ClusterRole {role['metadata']['name']} in every scheduler's "
               "aggregated role (is the controller manager's clusterrole-aggregation-controller running?)", timeout,
               interval=0.05)


def _in_effect(r: Run, priority_class: str, timeout: float = 30.0) -> None:
    """Wait until the API server's Priority admission, which reads PriorityClasses from its own informer,
    admits a pod naming ``priority_class`` (a dry run, stored nowhere): a pod made at once after the class
    could be refused ("no PriorityClass with name ... was found"), most of all a class deleted and made again."""
    core = k8s.CoreV1Api(r.cluster.api)
    probe: Any = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "schedgate-priority-probe-"},
             "spec": {"priorityClassName": priority_class, "containers": [{"name": "c", "image": PLACEHOLDER_IMAGE}]}}

    def admitted() -> bool:
        try:
            core.create_namespaced_pod(r.ns.name, probe, dry_run="All")
        except ApiException as e:
            if e.status == 403 and "no PriorityClass" in str(e.body):
                return False
            raise
        return True

    poll_until(admitted, f"PriorityClass {priority_class} admitted by the API server", timeout, interval=0.05)


def _with_image(doc: Any, image: str) -> Any:
    """``doc`` with each container image that is schedgate's placeholder replaced by ``image`` (the
    cluster's own: a workload's pods run on kind's kubelets as they do on local's agent)."""
    if isinstance(doc, dict):
        return {k: (image if k == "image" and v == PLACEHOLDER_IMAGE else _with_image(v, image))
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [_with_image(v, image) for v in doc]
    return doc


def _target(p: Parser, m: dict[str, Any], w: str) -> tuple[str | None, str, str]:
    """``kind`` and ``name`` of a scenario pod or an object an earlier ``apply`` made (``apiVersion`` optional)."""
    v = p.v
    kind = v.string(m["kind"], f"{w}.kind")
    name = v.string(m["name"], f"{w}.name")
    if kind == "Pod":
        p.pod_set(name, f"{w}.name")
        return "v1", kind, name
    if kind in _OWN_STEP:
        v.fail(f"{w}.kind", f"{kind} objects are changed by {_OWN_STEP[kind]}")
    if (kind, name) not in p.applied:
        v.fail(f"{w}.name", f"no earlier apply step made {kind}/{name}; a scenario changes only its own objects")
    api_version = m.get("apiVersion") or p.applied[(kind, name)]
    return v.string(api_version, f"{w}.apiVersion"), kind, name


@dataclass(frozen=True, kw_only=True)
class ObjectStep(Declared):
    """A step on a scenario pod or an object an earlier ``apply`` made, named by ``kind`` and ``name``."""

    api_version: str | None = arg("apiVersion", "the object's API version (default: the one it was applied with; a "
                                                "pod's is v1)", STR, read_string, default=None)
    kind: str = arg("kind", "Pod (a pod an earlier step created) or the kind of an applied object", STR, read_string)
    name: str = arg("name", "the pod's or the applied object's name", STR, read_string)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """kind, name and apiVersion read together (a pod's apiVersion is v1, whatever the step says)."""
        api_version, kind, name = _target(p, m, w)
        return {"api_version": api_version, "kind": kind, "name": name}


@step("patch")
@dataclass(frozen=True, kw_only=True)
class Patch(ObjectStep):
    """A merge patch of a scenario pod (e.g. lifting ``schedulingGates``) or of an applied object."""

    body: dict[str, Any] = arg("patch", "a merge patch (JSON merge patch: null removes a field)",
                               {"type": "object"}, lambda p, x, w: p.v.mapping(x, w))

    def run(self, r: Run) -> None:
        r.cluster.settle()
        r.objects.patch(self.api_version, self.kind, self.name, self.body)


@step("delete")
@dataclass(frozen=True, kw_only=True)
class Delete(ObjectStep):
    """Delete a scenario pod or an applied object (at once, as ``deletePods`` does)."""

    def run(self, r: Run) -> None:
        if self.kind == "Pod":
            r.pod(self.name).delete()
            return
        r.cluster.settle()
        r.objects.delete(self.api_version, self.kind, self.name)


def _added_nodes(p: Parser, raw: Any, w: str) -> tuple[NodeSpec, ...]:
    if not isinstance(raw, list) or not raw:
        p.v.fail(w, "must be a non-empty list of nodes")
    specs = []
    for i, body in enumerate(raw):
        spec = parse_node_or_manifest(p.v, body, f"{w}[{i}]")
        if spec.name in p.node_names or spec.name in p.pools:
            p.v.fail(f"{w}[{i}].name", f"node {spec.name!r} already exists in the scenario")
        p.added[spec.name] = spec
        specs.append(spec)
    return tuple(specs)


@step("addNodes")
@dataclass(frozen=True)
class AddNodes(Declared):
    """``nodes``: nodes by spec (a cluster definition's ``nodes:`` entries: its fields or Node manifests),
    deleted after the test."""

    specs: tuple[NodeSpec, ...] = arg("nodes", "nodes by spec: a cluster definition's nodes entries or Node "
                                               "manifests", listing(NODE_OR_MANIFEST, 1), _added_nodes)

    def run(self, r: Run) -> None:
        for spec in self.specs:
            r.cluster.nodes.add(spec)


def _resources(p: Parser, raw: Any, w: str) -> tuple[tuple[str, str], ...]:
    return tuple(p.v.resources(raw or {}, w).items())


@step("setResources")
@dataclass(frozen=True)
class SetResources(NodeStep):
    """``capacity`` and/or ``allocatable`` of any resources (allocatable defaults to the capacity given)."""

    RULE: ClassVar[Schema] = {"anyOf": [{"required": ["capacity"]}, {"required": ["allocatable"]}]}

    capacity: tuple[tuple[str, str], ...] = arg("capacity", "resource -> quantity the nodes report",
                                                ref("resources"), _resources, default=())
    allocatable: tuple[tuple[str, str], ...] = arg("allocatable", "resource -> quantity; default: the capacity",
                                                   ref("resources"), _resources, default=())

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> None:
        if not m.get("capacity") and not m.get("allocatable"):
            p.v.fail(w, "needs 'capacity', 'allocatable' or both")

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.set_resources(node, dict(self.capacity), dict(self.allocatable))


@step("setConditions")
@dataclass(frozen=True)
class SetConditions(NodeStep):
    """``conditions``: status conditions by type (``type``, ``status``, ``reason``, ``message``); API-only
    nodes only (a kubelet rewrites its own at each heartbeat)."""

    conditions: tuple[Condition, ...] = arg("conditions", "status conditions by type", listing(ref("condition"), 1),
                                            lambda p, x, w: parse_conditions(p.v, x, w))

    def on(self, r: Run, node: str) -> None:
        r.cluster.nodes.set_conditions(node, self.conditions)
