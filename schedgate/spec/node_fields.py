"""The fields a node has besides its resources: taints and status conditions, parsed and validated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.spec.jsontypes import LABEL, STR
from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import LABEL_VALUE, TAINT_EFFECTS, Validator, kind_of, short


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def to_api(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""


CONDITION_STATUSES = ("True", "False", "Unknown")

CONDITION = Shape("condition", "a node's status condition (one of each type)", (
    Key("type", "Ready, MemoryPressure, ...", STR, required=True),
    Key("status", "quoted: \"True\"", {"enum": list(CONDITION_STATUSES)}, required=True),
    Key("reason", "", STR),
    Key("message", "", STR),
))
TAINT = Shape("taint", "a node's taint", (
    Key("key", "a label key", STR, required=True),
    Key("value", "a label value", LABEL),
    Key("effect", "", {"enum": list(TAINT_EFFECTS)}, required=True),
))


def parse_conditions(v: Validator, raw: Any, where: str) -> tuple[Condition, ...]:
    """A node's status conditions: ``type`` and ``status`` (True, False, Unknown), ``reason``, ``message``."""
    if not isinstance(raw, list) or not raw:
        v.fail(where, f"must be a non-empty list of conditions, got {kind_of(raw)}")
    out: dict[str, Condition] = {}
    for i, c in enumerate(raw):
        cw = f"{where}[{i}]"
        m = CONDITION.read(v, c, cw)
        ctype = v.string(m["type"], f"{cw}.type")
        if m["status"] not in CONDITION_STATUSES:
            v.fail(f"{cw}.status", f"must be one of {', '.join(CONDITION_STATUSES)} (quoted), got {short(m['status'])}")
        if ctype in out:
            v.fail(f"{cw}.type", f"condition {ctype!r} is given twice")
        out[ctype] = Condition(ctype, m["status"], str(m.get("reason") or ""), str(m.get("message") or ""))
    return tuple(out.values())


def parse_taints(v: Validator, raw: Any, where: str) -> tuple[Taint, ...]:
    if not isinstance(raw, list):
        v.fail(where, f"must be a list, got {kind_of(raw)}")
    out = []
    for i, t in enumerate(raw):
        tw = f"{where}[{i}]"
        m = TAINT.read(v, t, tw)
        v.label_key(str(m["key"]), f"{tw}.key")
        effect = v.taint_effect(m["effect"], f"{tw}.effect")
        value = m.get("value")
        value = "" if value is None else str(value)
        if value and not LABEL_VALUE.match(value):
            v.fail(f"{tw}.value", f"invalid taint value {value!r}")
        out.append(Taint(key=str(m["key"]), effect=effect, value=value))
    return tuple(out)
