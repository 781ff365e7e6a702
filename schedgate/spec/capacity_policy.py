"""Devices several claims share (``DRAConsumableCapacity``): each claim takes part of a device's capacity.

A device set with ``allowMultipleAllocations: true`` publishes devices the scheduler may allocate to many
claims at once, as long as what they take of each capacity adds up to no more than the device has. A
``requestPolicy`` says how a request is rounded::

    devices:
      - driver: gpu.schedgate.io
        names: [gpu-0]
        allowMultipleAllocations: true
        capacity: {memory: 80Gi}
        requestPolicy:
          memory: {default: 80Gi, min: 10Gi, step: 10Gi}   # 25Gi is taken as 30Gi; no request: 80Gi

That is the API's ``capacity.<name>.requestPolicy`` (``default`` and ``validRange``), checked as its
validation does before anything starts. A pod asks with its ``devices`` request's ``capacity``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from schedgate.spec.jsontypes import ref
from schedgate.spec.quantity import quantity_value
from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import Validator, short

Policy = tuple[tuple[str, str], ...]  # (default | min | max | step, quantity), in that order
Policies = tuple[tuple[str, Policy], ...]  # capacity -> its policy

POLICY = Shape("requestPolicy", "how much of a shared device's capacity one claim takes", (
    Key("default", "what a claim that asks for none of it takes (default: all of it)", ref("quantity")),
    Key("min", "the least a claim takes: a smaller request takes this", ref("quantity")),
    Key("max", "the most a claim may ask for", ref("quantity")),
    Key("step", "a request is rounded up to min plus a multiple of this", ref("quantity")),
), rule={"anyOf": [{"required": [k]} for k in ("default", "min", "max", "step")]})


def _value(v: Validator, raw: Any, where: str) -> tuple[str, Decimal]:
    text = str(raw) if isinstance(raw, (int, str)) and not isinstance(raw, bool) else ""
    try:
        value = quantity_value(text)
    except ValueError:
        v.fail(where, f"must be a quantity (80Gi, 4, 500m), got {short(raw)}")
    if value < 0:
        v.fail(where, f"must be >= 0, got {text}")
    return text, value


def parse_policies(v: Validator, raw: Any, where: str, capacity: dict[str, Any], shared: bool) -> Policies:
    """``requestPolicy``: capacity -> policy, each capacity one the set gives (one value for every device)."""
    if not shared:
        v.fail(where, "is for devices several claims share: set allowMultipleAllocations: true")
    out = []
    for name, body in v.mapping(raw, where).items():
        pw = f"{where}.{name}"
        if name not in capacity:
            v.fail(pw, f"the set gives no capacity {name!r} (capacity: {', '.join(map(str, capacity)) or 'none'})")
        if isinstance(capacity[name], list):
            v.fail(pw, "a policy needs one capacity value for every device (the set lists one per device)")
        m = POLICY.read(v, body, pw)
        if not m:
            v.fail(pw, "must give default, min, max or step")
        vals = {k: _value(v, m[k], f"{pw}.{k}") for k in POLICY.allowed if k in m}
        whole = quantity_value(str(capacity[name]))
        if any(k in vals for k in ("max", "step")) and "min" not in vals:
            v.fail(pw, "max and step need min (the API's validRange)")
        if "min" in vals and "default" not in vals:
            v.fail(f"{pw}.default", "required field is missing (with min: the API's validRange needs it)")
        if "step" in vals and vals["step"][1] <= 0:
            v.fail(f"{pw}.step", f"must be more than 0, got {vals['step'][0]}")
        for k, (text, value) in vals.items():
            if value > whole:
                v.fail(f"{pw}.{k}", f"{text} is more than the device's {name} ({capacity[name]})")
        low, high = vals.get("min", ("", Decimal(0)))[1], vals.get("max", ("", whole))[1]
        if low > high:
            v.fail(f"{pw}.max", f"is less than min ({vals['min'][0]})")
        if "default" in vals and not low <= vals["default"][1] <= high:
            v.fail(f"{pw}.default", "must be within min and max")
        for k in ("default", "max") if "step" in vals else ():
            if k in vals and (vals[k][1] - low) % vals["step"][1]:
                v.fail(f"{pw}.{k}", f"must be min ({vals['min'][0]}) plus a multiple of step ({vals['step'][0]})")
        out.append((str(name), tuple((k, text) for k, (text, _) in vals.items())))
    return tuple(out)


def policy_api(policy: Policy) -> dict[str, Any]:
    """The API's ``requestPolicy`` of one capacity."""
    p = dict(policy)
    valid = {k: p[k] for k in ("min", "max", "step") if k in p}
    return {**({"default": p["default"]} if "default" in p else {}), **({"validRange": valid} if valid else {})}
