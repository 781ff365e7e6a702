"""Devices in cluster definitions: what a node's DRA driver would publish, as data.

A pool or a named node may list device sets; each becomes devices of a
ResourceSlice (``resource.k8s.io/v1``) for that node, one pool per node and
driver::

    devices:
      - driver: gpu.schedgate.io          # the driver's name (a DNS subdomain)
        count: 8
        name: gpu                         # devices gpu-0 ... gpu-7 (or names: [a, b, ...])
        attributes:
          model: H100                     # one value: every device has it
          nvlinkDomain: [0, 0, 0, 0, 1, 1, 1, 1]   # a list: one value per device
          driverVersion: {version: 1.2.3}
        capacity:
          memory: 80Gi

An attribute's value is a string, a whole number, true/false, or ``{version: X}``
(semantic version); a list gives each device its own. Its name is a C identifier
(the driver's domain is implied: ``device.attributes["gpu.schedgate.io"].model``)
or ``domain/name``. The definition's ``deviceClasses:`` lists DeviceClass
manifests (inline, or a file beside the definition or shipped in ``clusters/``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedgate.errors import DefinitionError
from schedgate.spec.capacity_policy import Policies, parse_policies, policy_api
from schedgate.spec.device_names import DRIVER, attribute_name, device_quantity
from schedgate.spec.jsontypes import BOOL, STR, listing, ref, whole
from schedgate.spec.manifest import check_manifest
from schedgate.spec.shape import Key, Shape
from schedgate.spec.shipped import resolve_user_path
from schedgate.spec.validate import Validator, kind_of, short
from schedgate.spec.yamlfile import read_yaml

MAX_DEVICES = 128       # devices in one ResourceSlice (the API's limit)
_DEVICE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
MAX_COUNTER_SETS = 8     # shared counter sets of one pool (the API's limit)
MAX_CONSUMED_SETS = 2    # counter sets one device consumes from (the API's limit)
Counters = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # counter set -> (counter, quantity)
DEVICE_SET = Shape("deviceSet", "devices of one DRA driver on each node of the pool (or the node)", (
    Key("driver", "the driver's name, a DNS subdomain", {**STR, "maxLength": 63}, required=True),
    Key("count", "how many devices (with name)", whole(1, MAX_DEVICES)),
    Key("name", "a prefix: devices NAME-0 .. NAME-(COUNT-1) (default dev)", STR),
    Key("names", "each device's name (instead of count and name)", listing(STR, 1)),
    Key("attributes", "attribute -> a string, whole number, boolean or {version: X} for every device, or a list of "
                      "them (one per device)", {"type": "object"}),
    Key("capacity", "capacity -> a quantity, or a list (one per device)", {"type": "object"}),
    Key("counters", "shared counter sets of the node's pool of this driver (DRAPartitionableDevices): set -> "
                    "counter -> quantity",
        {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": ref("quantity")}}),
    Key("consumes", "what each device draws on the counters: set -> counter -> quantity, or a list (one per "
                    "device)", {"anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}]}),
    Key("allowMultipleAllocations", "each device may be allocated to several claims at once, each taking part of "
                                    "its capacity (DRAConsumableCapacity)", BOOL),
    Key("requestPolicy", "capacity -> how much of it one claim takes (with allowMultipleAllocations)",
        {"type": "object", "additionalProperties": ref("requestPolicy")}),
), rule={"anyOf": [{"required": ["count"]}, {"required": ["names"]}, {"required": ["counters"]}]})


@dataclass(frozen=True)
class Device:
    """One device: its name, typed attributes (``(name, type, value)``) and capacities."""

    name: str
    attributes: tuple[tuple[str, str, Any], ...] = ()
    capacity: tuple[tuple[str, str], ...] = ()
    consumes: Counters = ()  # what it takes from its pool's shared counters (a partition of a GPU)
    shared: bool = False  # allowMultipleAllocations: claims take parts of its capacity (spec.capacity_policy)
    policies: Policies = ()  # capacity -> its requestPolicy

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.attributes:
            out["attributes"] = {k: {t: v} for k, t, v in self.attributes}
        if self.capacity:
            policy = dict(self.policies)
            out["capacity"] = {k: {"value": q, **({"requestPolicy": policy_api(policy[k])} if k in policy else {})}
                               for k, q in self.capacity}
        if self.shared:
            out["allowMultipleAllocations"] = True
        if self.consumes:
            out["consumesCounters"] = [{"counterSet": s, "counters": {c: {"value": q} for c, q in cs}}
                                       for s, cs in self.consumes]
        return out


@dataclass(frozen=True)
class DeviceSet:
    """A node's devices of one driver (one ResourceSlice pool)."""

    driver: str
    devices: tuple[Device, ...]
    counters: Counters = ()  # shared counter sets (DRAPartitionableDevices), published in a slice of their own

    def counters_api(self) -> list[dict[str, Any]]:
        return [{"name": s, "counters": {c: {"value": q} for c, q in cs}} for s, cs in self.counters]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)


def counters_only_local(definition: Any, provider: str) -> str | None:
    """Why ``provider`` (not local) does not run a definition whose devices share counters, or None."""
    if not any(ds.counters for n in definition.nodes() for ds in n.devices):
        return None
    return (f"{definition.source}: devices sharing counters (a device set's counters) are published by the local "
            f"provider; schedgate's DRA driver on {provider} publishes one slice a pool, without counters")


def parse_device_sets(v: Validator, raw: Any, where: str) -> tuple[DeviceSet, ...]:
    """A pool's or node's ``devices:``: sets of one driver each; a driver's sets on a node are joined."""
    if not isinstance(raw, list) or not raw:
        v.fail(where, f"must be a non-empty list of device sets, got {kind_of(raw)}")
    by_driver: dict[str, list[Device]] = {}
    counters: dict[str, dict[str, tuple[tuple[str, str], ...]]] = {}
    for i, item in enumerate(raw):
        sw = f"{where}[{i}]"
        m = DEVICE_SET.read(v, item, sw)
        driver = m["driver"]
        if not isinstance(driver, str) or len(driver) > 63 or not DRIVER.match(driver):
            v.fail(f"{sw}.driver", f"must be a driver name (a DNS subdomain of at most 63), got {short(driver)}")
        sets = counters.setdefault(driver, {})
        for name, cs in _counter_sets(v, m["counters"], f"{sw}.counters") if "counters" in m else ():
            if name in sets:
                v.fail(f"{sw}.counters.{name}", f"counter set {name!r} of driver {driver} is given twice on this node")
            sets[name] = cs
        if len(sets) > MAX_COUNTER_SETS:
            v.fail(f"{sw}.counters", f"{len(sets)} counter sets of driver {driver} on one node; at most "
                                     f"{MAX_COUNTER_SETS}")
        names = [] if "counters" in m and "count" not in m and "names" not in m else _names(v, m, sw)
        devices = by_driver.setdefault(driver, [])
        taken = {d.name for d in devices}
        for j, n in enumerate(names):
            if n in taken:
                v.fail(f"{sw}.names[{j}]" if "names" in m else f"{sw}.name",
                       f"device {n!r} of driver {driver} is given twice on this node")
            taken.add(n)
        attrs = _per_device(v, m.get("attributes") or {}, f"{sw}.attributes", len(names), _attribute)
        caps = _per_device(v, m.get("capacity") or {}, f"{sw}.capacity", len(names), device_quantity)
        takes = _consumes(v, m["consumes"], f"{sw}.consumes", len(names), sets) if "consumes" in m else \
            [()] * len(names)
        shared = v.flag(m["allowMultipleAllocations"], f"{sw}.allowMultipleAllocations") \
            if "allowMultipleAllocations" in m else False
        policies = parse_policies(v, m["requestPolicy"], f"{sw}.requestPolicy", dict(m.get("capacity") or {}),
                                  shared) if "requestPolicy" in m else ()
        devices += [Device(n, tuple(a[j] for a in attrs), tuple(c[j] for c in caps), takes[j], shared, policies)
                    for j, n in enumerate(names)]
        if len(devices) > MAX_DEVICES:
            v.fail(f"{sw}.count", f"{len(devices)} devices of driver {driver} on one node; at most {MAX_DEVICES}")
    return tuple(DeviceSet(d, tuple(devs), tuple(counters.get(d, {}).items())) for d, devs in by_driver.items())


def _counter_sets(v: Validator, raw: Any, where: str) -> Counters:
    """``counters:``: counter set -> counter -> quantity (a GPU's memory, its compute slices)."""
    out = []
    for name, body in v.mapping(raw, where).items():
        sw = f"{where}.{name}"
        if not _DEVICE_NAME.match(str(name)):
            v.fail(sw, f"must be a counter set name (a DNS label), got {short(name)}")
        cs = v.mapping(body, sw)
        if not cs:
            v.fail(sw, "must give at least one counter: name -> quantity")
        for c in cs:
            attribute_name(v, str(c), f"{sw}.{c}")
        out.append((str(name), tuple(device_quantity(v, str(c), q, f"{sw}.{c}") for c, q in cs.items())))
    return tuple(out)


def _consumes(v: Validator, raw: Any, where: str, count: int, sets: dict[str, tuple[tuple[str, str], ...]]
              ) -> list[Counters]:
    """``consumes:`` for every device, or a list of one per device: counter set -> counter -> quantity, each
    set and counter one the node's ``counters`` of this driver has."""
    if isinstance(raw, list) and len(raw) != count:
        v.fail(where, f"lists {len(raw)} values for {count} devices (one per device, or one value for all)")
    out = []
    for j, item in enumerate(raw if isinstance(raw, list) else [raw] * count):
        iw = f"{where}[{j}]" if isinstance(raw, list) else where
        takes = _counter_sets(v, item, iw)
        if len(takes) > MAX_CONSUMED_SETS:
            v.fail(iw, f"a device consumes from at most {MAX_CONSUMED_SETS} counter sets, got {len(takes)}")
        for name, cs in takes:
            if name not in sets:
                v.fail(f"{iw}.{name}", f"no counter set {name!r} of this driver on this node (counters: "
                                       f"{', '.join(sets) or 'none'})")
            for c, _ in cs:
                if c not in dict(sets[name]):
                    v.fail(f"{iw}.{name}.{c}", f"counter set {name!r} has no counter {c!r} (it has "
                                               f"{', '.join(k for k, _ in sets[name])})")
        out.append(takes)
    return out


def _names(v: Validator, m: dict[str, Any], sw: str) -> list[str]:
    if "names" in m:
        if "name" in m:
            v.fail(f"{sw}.name", "give either 'name' (a prefix) or 'names' (each device's), not both")
        names = v.strings(m["names"], f"{sw}.names")
        if not names:
            v.fail(f"{sw}.names", "must list at least one device name")
        if "count" in m and v.whole(m["count"], f"{sw}.count") != len(names):
            v.fail(f"{sw}.count", f"is {m['count']} but 'names' lists {len(names)} devices")
        for j, n in enumerate(names):
            if not _DEVICE_NAME.match(n):
                v.fail(f"{sw}.names[{j}]", f"must be a device name (a DNS label), got {short(n)}")
        return names
    if "count" not in m:
        v.fail(sw, "needs its devices, 'count' (with 'name') or 'names', or only the pool's 'counters'")
    count = v.whole(m["count"], f"{sw}.count", minimum=1, maximum=MAX_DEVICES)
    prefix = m.get("name", "dev")
    if not isinstance(prefix, str) or not _DEVICE_NAME.match(f"{prefix}-{count - 1}"):
        v.fail(f"{sw}.name", f"must be a device name prefix (a DNS label with room for '-N'), got {short(prefix)}")
    return [f"{prefix}-{j}" for j in range(count)]


def _per_device(v: Validator, raw: Any, where: str, count: int, one: Any) -> list[list[Any]]:
    """For each named attribute (or capacity), one parsed value per device: a list is one each, else shared."""
    m = v.mapping(raw, where)
    out: list[list[Any]] = []
    for key, value in m.items():
        kw = f"{where}.{key}"
        attribute_name(v, str(key), kw)
        if isinstance(value, list):
            if len(value) != count:
                v.fail(kw, f"lists {len(value)} values for {count} devices (one per device, or one value for all)")
            out.append([one(v, str(key), x, f"{kw}[{j}]") for j, x in enumerate(value)])
        else:
            out.append([one(v, str(key), value, kw)] * count)
    return out


def _attribute(v: Validator, key: str, value: Any, where: str) -> tuple[str, str, Any]:
    if isinstance(value, bool):
        return key, "bool", value
    if isinstance(value, int):
        return key, "int", value
    if isinstance(value, str):
        if len(value) > 64:
            v.fail(where, f"a string attribute has at most 64 characters, got {len(value)}")
        return key, "string", value
    if isinstance(value, dict) and list(value) == ["version"] and isinstance(value["version"], str):
        return key, "version", value["version"]
    v.fail(where, f"must be a string, a whole number, true/false or {{version: X}}, got {short(value)}")


@dataclass(frozen=True)
class DeviceClassDef:
    """A DeviceClass the cluster makes: its name and manifest (as frozen JSON-ish text for equality)."""

    name: str
    manifest_text: str

    def manifest(self) -> dict[str, Any]:
        return dict(json.loads(self.manifest_text))


def parse_device_classes(v: Validator, raw: Any, where: str, base: Path) -> tuple[DeviceClassDef, ...]:
    """``deviceClasses:``: DeviceClass manifests, inline or by file (beside the definition, else shipped)."""
    if not isinstance(raw, list) or not raw:
        v.fail(where, f"must be a non-empty list of DeviceClass manifests or files, got {kind_of(raw)}")
    out: dict[str, DeviceClassDef] = {}
    for i, item in enumerate(raw):
        cw = f"{where}[{i}]"
        if isinstance(item, str):
            path = resolve_user_path(item, base) if item.strip() else None
            if path is None or not path.is_file():
                v.fail(cw, f"no such DeviceClass file {short(item)}")
            try:
                doc, lines = read_yaml(path, "DeviceClass", kinds=("DeviceClass",))
                _one_class(Validator(str(path), lines), doc, "", out)
            except DefinitionError as e:  # named by this entry, and by the class file's own field
                v.fail(cw, f"{e.path}: {e.field + ': ' if e.field else ''}{e.problem}")
        else:
            _one_class(v, item, cw, out)
    return tuple(out.values())


def _one_class(v: Validator, doc: Any, where: str, out: dict[str, DeviceClassDef]) -> None:
    m = v.mapping(doc, where, required=("apiVersion", "kind", "metadata"))
    if m["kind"] != "DeviceClass" or m["apiVersion"] != "resource.k8s.io/v1":
        v.fail(f"{where}.kind" if where else "kind",
               f"must be a DeviceClass of resource.k8s.io/v1, got {short(m['kind'])} of {short(m['apiVersion'])}")
    check_manifest(v, m, where)
    name = v.string(v.mapping(m["metadata"], f"{where}.metadata", required=("name",))["name"],
                    f"{where}.metadata.name")
    if name in out:
        v.fail(f"{where}.metadata.name" if where else "metadata.name", f"device class {name!r} is given twice")
    out[name] = DeviceClassDef(name, json.dumps(m, sort_keys=True))

