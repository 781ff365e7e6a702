"""Kubernetes resource quantities ("500m", "64", "512Gi") as numbers and back."""

from __future__ import annotations

import math
import re

_SUFFIX = {"": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_QUANTITY = re.compile(r"^([0-9.]+)(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$")


def parse_quantity(text: str | int | float) -> float:
    """The value of a quantity in base units (cores, bytes)."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        raise ValueError(f"not a quantity: {text!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2) or ""]


def scaled(text: str, factor: float, resource: str) -> str:
    """``text`` times ``factor``: cpu in whole millicores, memory in whole Ki (never below one unit)."""
    value = parse_quantity(text) * factor
    if resource == "cpu":
        return f"{max(1, math.ceil(value * 1000))}m"
    return f"{max(1, math.ceil(value / 1024))}Ki"
