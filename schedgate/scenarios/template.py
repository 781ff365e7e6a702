"""The pod fields of a scenario file, declared once each: a template's and a ``createPods`` step's.

A :class:`PodField` is everything about one field: its key, what it means, its JSON type, how the file's
value is read (a problem is the one line ``FILE: FIELD: PROBLEM (line N)``) and what it does to the pod.
:data:`POD_FIELDS` lists them in the order they are applied to the pod, so a later one goes over an earlier
(``labels`` over a ``pod:`` fragment's). The loader (:func:`read_template`), the pod (:meth:`Template.builder`),
the JSON Schema (:mod:`schedgate.scenarios.schema`) and the reference (``docs/reference/pod-fields.md``,
``schedgate schema --write``) are all made from this list: a new pod field is one entry here and its test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from schedgate.objects.builders import PodBuilder, make_pod
from schedgate.objects.claims import ALL, DeviceRequest
from schedgate.spec.cluster import ClusterDefinition, NodeSpec
from schedgate.spec.device_names import capacity_requests
from schedgate.spec.jsontypes import DNS, LABEL, STR, Schema, described, listing, ref, whole
from schedgate.spec.manifest import merged, pod_fragment
from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import TAINT_EFFECTS, Validator, kind_of
from schedgate.workloads.podgroup import in_group


class Context(Protocol):
    """What reading a pod field needs of the file's parse (scenarios.parse.Parser)."""

    v: Validator
    definition: ClusterDefinition
    added: dict[str, NodeSpec]

    @property
    def node_names(self) -> dict[str, None]: ...


Read = Callable[[Context, Any, str], Any]  # (the parse, the file's value, where) -> the value the pod gets
Apply = Callable[[PodBuilder, Any], PodBuilder]


def _over(_: Any, new: Any) -> Any:
    return new


@dataclass(frozen=True)
class PodField:
    """One pod field: ``key`` in the file, ``doc`` (the reference's and the schema's description), ``schema``
    (its JSON type), ``read``, ``apply`` and what it ``needs`` of a black box. Fields with one ``slot`` make
    one value together (``cpu`` and ``memory`` go into ``requests``); ``merge`` puts a later value over an
    earlier (a step's over its template's; default: the later one); the slot's last field applies it."""

    key: str
    doc: str
    schema: Schema
    read: Read
    apply: Apply | None = None
    slot: str = ""
    merge: Callable[[Any, Any], Any] = _over
    needs: str = ""  # the capability a black box must offer for it (spec.blackbox; scenarios.needs)

    @property
    def into(self) -> str:
        return self.slot or self.key


def _requests_merge(old: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    return {**old, **new}


def _apply_requests(b: PodBuilder, requests: dict[str, str]) -> PodBuilder:
    for r, q in requests.items():
        b = b.request(r, q)
    return b


def _require_labels(c: Context, raw: Any, w: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    for key, vals in c.v.mapping(raw, w).items():
        c.v.label_key(key, f"{w}.{key}")
        values = vals if isinstance(vals, list) else [c.v.labels({key: vals}, w)[key]]
        out.append((key, tuple(c.v.strings(values, f"{w}.{key}"))))
    return tuple(out)


def _forbid_labels(c: Context, raw: Any, w: str) -> tuple[str, ...]:
    keys = c.v.strings(raw, w)
    for i, key in enumerate(keys):
        c.v.label_key(key, f"{w}[{i}]")
    return tuple(keys)


TOLERATION = Shape("toleration", "a toleration: the shorthand (key; value: Equal, else Exists; effect, default "
                                  "NoSchedule), or Kubernetes' own (with operator: key optional with Exists, no "
                                  "effect meaning every effect, tolerationSeconds)", (
    Key("key", "the taint's key (required unless operator is Exists: then none is every key)", STR),
    Key("operator", "Exists or Equal: Kubernetes' own form", {"enum": ["Exists", "Equal"]}),
    Key("value", "the taint's value", LABEL),
    Key("effect", "the shorthand's default NoSchedule; with operator, none is every effect",
        {"enum": list(TAINT_EFFECTS)}),
    Key("tolerationSeconds", "with effect NoExecute: how long the taint is tolerated", whole(0, 10**9)),
))
Toleration = tuple[str, str, str, str, int | None]  # key, operator ("" for the shorthand), value, effect, seconds


def _tolerations(c: Context, raw: Any, w: str) -> tuple[Toleration, ...]:
    v = c.v
    if not isinstance(raw, list):
        v.fail(w, f"must be a list, got {kind_of(raw)}")
    out = []
    for i, t in enumerate(raw):
        tw = f"{w}[{i}]"
        tm = TOLERATION.read(v, t, tw)
        op = str(tm.get("operator") or "")
        if op not in ("", "Exists", "Equal"):
            v.fail(f"{tw}.operator", f"must be Exists or Equal, got {tm['operator']!r}")
        key, value = str(tm.get("key") or ""), str(tm.get("value") or "")
        if key or op != "Exists":
            if not key:
                v.fail(f"{tw}.key", "required (only operator: Exists may leave it out, to tolerate every key)")
            v.label_key(key, f"{tw}.key")
        if op == "Exists" and value:
            v.fail(f"{tw}.value", "must be empty with operator Exists")
        default = "" if op else "NoSchedule"  # Kubernetes' own form: no effect is every effect
        effect = v.taint_effect(tm["effect"], f"{tw}.effect") if tm.get("effect") is not None else default
        seconds = tm.get("tolerationSeconds")
        if seconds is not None and effect != "NoExecute":
            v.fail(f"{tw}.tolerationSeconds", f"only with effect NoExecute, got {effect or 'every effect'}")
        out.append((key, op, value, effect, None if seconds is None else v.whole(seconds, f"{tw}.tolerationSeconds")))
    return tuple(out)


DEVICES: Schema = {"anyOf": [ref("deviceRequest"), listing(ref("deviceRequest"), 1)]}
DEVICE_REQUEST = Shape("deviceRequest", "one request of the pod's own ResourceClaim", (
    Key("class", "a DeviceClass of the cluster definition", STR, required=True),
    Key("count", "devices the claim asks for, or All: every matching device of a node (allocationMode All)",
        {"anyOf": [whole(1, 128), {"const": "All"}]}),
    Key("sameAttribute", "attributes all devices share (matchAttribute); domain/ optional", ref("names")),
    Key("selector", "CEL expressions each device must pass", ref("names")),
    Key("capacity", "capacity -> what the claim takes of a device several claims share (DRAConsumableCapacity)",
        {"type": "object", "minProperties": 1, "additionalProperties": ref("quantity")}),
))


def read_devices(c: Context, raw: Any, w: str) -> tuple[DeviceRequest, ...]:
    """One request or a list, each ``class`` (a DeviceClass of the cluster definition), ``count`` (or ``All``),
    ``sameAttribute`` (a name or list: a matchAttribute constraint) and ``selector`` (CEL)."""
    v, definition = c.v, c.definition
    classes = [d.name for d in definition.device_classes]
    drivers = {ds.driver for n in [*definition.nodes(), *c.added.values()] for ds in n.devices}
    out = []
    for i, item in enumerate(raw if isinstance(raw, list) else [raw]):
        rw = f"{w}[{i}]" if isinstance(raw, list) else w
        m = DEVICE_REQUEST.read(v, item, rw)
        cls = v.string(m["class"], f"{rw}.class")
        if cls not in classes:
            v.fail(f"{rw}.class", f"unknown device class {cls!r}: cluster {definition.name!r} defines "
                                  + (", ".join(classes) if classes else "no deviceClasses"))
        same = []
        for a in v.strings(m["sameAttribute"], f"{rw}.sameAttribute") if "sameAttribute" in m else []:
            if "/" not in a:
                if len(drivers) != 1:
                    v.fail(f"{rw}.sameAttribute", f"{a!r} needs its driver's domain ('driver/{a}'): "
                                                  f"the cluster's devices come from {len(drivers)} drivers")
                a = f"{next(iter(drivers))}/{a}"
            same.append(a)
        selectors = v.strings(m["selector"], f"{rw}.selector") if "selector" in m else []
        count = ALL if m.get("count") == "All" else v.whole(m.get("count", 1), f"{rw}.count", minimum=1, maximum=128)
        capacity = capacity_requests(v, m["capacity"], f"{rw}.capacity") if "capacity" in m else ()
        out.append(DeviceRequest(cls, count, tuple(same), tuple(selectors), capacity))
    return tuple(out)


def _member(b: PodBuilder, group: str | tuple[str, tuple[DeviceRequest, ...]]) -> PodBuilder:
    """A member of ``group``: its name, or (once the createPods step knows the group) its name and devices."""
    return in_group(b, *group) if isinstance(group, tuple) else in_group(b, group)


def _gate_names(c: Context, raw: Any, w: str) -> tuple[str, ...]:
    names = c.v.strings(raw, w)
    for i, name in enumerate(names):
        c.v.label_key(name, f"{w}[{i}]" if isinstance(raw, list) else w)
    return tuple(dict.fromkeys(names))


def _node(c: Context, raw: Any, w: str) -> str:
    if not isinstance(raw, str) or raw not in c.node_names:
        c.v.fail(w, f"must be the name of one node in cluster {c.definition.name!r}, got {raw!r}")
    return raw


def _apply_each(method: Callable[[PodBuilder, str, str], PodBuilder]) -> Apply:
    def apply(b: PodBuilder, pairs: tuple[tuple[str, str], ...]) -> PodBuilder:
        for k, x in pairs:
            b = method(b, k, x)
        return b
    return apply


def _apply_required(b: PodBuilder, terms: tuple[tuple[str, tuple[str, ...]], ...]) -> PodBuilder:
    for key, values in terms:
        b = b.require_label(key, *values)
    return b


def _apply_forbidden(b: PodBuilder, keys: tuple[str, ...]) -> PodBuilder:
    for key in keys:
        b = b.forbid_label(key)
    return b


def _apply_tolerations(b: PodBuilder, tolerations: tuple[Toleration, ...]) -> PodBuilder:
    for key, op, value, effect, seconds in tolerations:
        b = b.tolerate(key, value, effect, operator=op, seconds=seconds)
    return b


# In the order they are applied to the pod (a later field goes over an earlier one).
POD_FIELDS: tuple[PodField, ...] = (
    PodField("gpus", "GPUs the pod asks for (nvidia.com/gpu)", whole(),
             lambda c, x, w: c.v.whole(x, w), lambda b, n: b.gpus(n)),
    PodField("cpu", "CPU the pod requests: 4, 500m", ref("quantity"),
             lambda c, x, w: c.v.resources({"cpu": x}, w.rsplit(".", 1)[0]), slot="requests",
             merge=_requests_merge),
    PodField("memory", "memory the pod requests: 64Gi", ref("quantity"),
             lambda c, x, w: c.v.resources({"memory": x}, w.rsplit(".", 1)[0]), slot="requests",
             merge=_requests_merge),
    PodField("requests", "resource -> quantity the pod requests (over cpu and memory); an extended resource's "
                         "limit is set equal", ref("resources"),
             lambda c, x, w: c.v.resources(x, w), _apply_requests, merge=_requests_merge),
    PodField("scheduler", "the scheduler's name (default: default-scheduler)", STR,
             lambda c, x, w: c.v.string(x, w), lambda b, name: b.scheduler(name)),
    PodField("requireLabels", "label key -> the value, or a list of values, a node must have (required node "
                              "affinity, key In values)",
             {"type": "object", "additionalProperties": {"anyOf": [LABEL, listing(STR, 1)]}},
             _require_labels, _apply_required),
    PodField("forbidLabels", "label keys a node must not have (required node affinity, DoesNotExist)",
             ref("names"), _forbid_labels, _apply_forbidden),
    PodField("tolerations", "taints the pod tolerates: key, value (none: any value), effect (NoSchedule)",
             listing(ref("toleration")), _tolerations, _apply_tolerations),
    PodField("devices", "devices through a DRA claim of the pod's own: class, count, sameAttribute, selector, "
                        "capacity", DEVICES, read_devices,
             lambda b, requests: b.devices(*requests), needs="devices"),
    PodField("schedulingGates", "scheduling gates the pod is created with (names such as schedgate.io/hold): "
                                "no scheduler takes it until a step removes them (patch spec.schedulingGates)",
             ref("names"), _gate_names,
             lambda b, names: b.manifest({"spec": {"schedulingGates": [{"name": n} for n in names]}})),
    PodField("podGroup", "the PodGroup (Kubernetes' own gang, a createPodGroup step's) the pod is a member of: "
                         "spec.schedulingGroup.podGroupName; it uses the group's claim if the group has devices",
             DNS, lambda c, x, w: c.v.dns_label(x, w), _member),
    PodField("pod", "a Pod manifest fragment (metadata, spec), merged over the shorthand fields; checked against "
                    "the pinned API's schema when the file loads", {"type": "object"},
             lambda c, x, w: pod_fragment(c.v, x, w), lambda b, fragment: b.manifest(fragment), merge=merged),
    PodField("labels", "the pod's labels: key -> value (quote \"true\")", ref("labels"),
             lambda c, x, w: tuple(c.v.labels(x, w).items()), _apply_each(PodBuilder.label)),
    PodField("annotations", "the pod's annotations: key -> value", ref("annotations"),
             lambda c, x, w: tuple((a, str(y)) for a, y in c.v.mapping(x, w).items()),
             _apply_each(PodBuilder.annotate)),
    PodField("node", "bound to this node at creation (spec.nodeName): no scheduler involved", STR, _node,
             lambda b, node: b.on_node(node)),
    PodField("priorityClass", "the pod's PriorityClass", DNS, lambda c, x, w: c.v.dns_label(x, w),
             lambda b, name: b.priority(name), needs="preemption"),
)
FIELDS: Mapping[str, PodField] = {f.key: f for f in POD_FIELDS}
TEMPLATE_FIELDS = tuple(FIELDS)
SLOTS: Mapping[str, PodField] = {f.into: f for f in POD_FIELDS}  # each slot by its last field, which applies it


def pod_schema(key: str) -> Schema:
    """The JSON type of pod field ``key``, with its description."""
    return described(FIELDS[key].schema, FIELDS[key].doc)


@dataclass(frozen=True)
class Template:
    """A validated pod template: each pod field's value by its slot (only those the file gives)."""

    values: Mapping[str, Any] = field(default_factory=dict)

    def get(self, slot: str) -> Any:
        return self.values.get(slot)

    def with_value(self, slot: str, value: Any) -> Template:
        return Template({**self.values, slot: value})

    def merged(self, other: Template) -> Template:
        """``other``'s fields over this one's (a step's own fields over its template's); an empty one
        (``labels: {}``) leaves the template's."""
        out = dict(self.values)
        for slot, f in SLOTS.items():
            new = other.values.get(slot)
            if new not in (None, ()):
                out[slot] = f.merge(out[slot], new) if slot in out else new
        return Template(out)

    def builder(self, name: str) -> PodBuilder:
        b = make_pod(name).no_requests()  # a file's pod asks for what it says, nothing hidden
        for f in POD_FIELDS:
            if f.apply is not None and f.into in self.values and SLOTS[f.into] is f:
                b = f.apply(b, self.values[f.into])
        return b


def read_template(c: Context, raw: Any, where: str) -> Template:
    """The pod fields of a template or a ``createPods`` step (other keys are the step's own)."""
    m = c.v.mapping(raw, where)
    values: dict[str, Any] = {}
    for f in POD_FIELDS:
        if f.key in m:
            value = f.read(c, m[f.key], f"{where}.{f.key}")
            values[f.into] = f.merge(values[f.into], value) if f.into in values else value
    return Template(values)
