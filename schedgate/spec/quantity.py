"""Kubernetes resource quantities ("500m", "64", "512Gi", "1e3"): one grammar for checking and arithmetic.

The grammar is the API's own (``k8s.io/apimachinery/pkg/api/resource``)::

    quantity ::= number [ binarySI | decimalSI | exponent ]
    number   ::= digits [ "." [ digits ] ] | "." digits
    binarySI ::= Ki | Mi | Gi | Ti | Pi | Ei        decimalSI ::= m | k | M | G | T | P | E
    exponent ::= ( "e" | "E" ) [ "+" | "-" ] digits

Values are exact (:class:`~decimal.Decimal`); a definition may only hold
quantities whose milli-value fits in 63 bits, as the scheduler compares them.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_SUFFIX = {"": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
           "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
           "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
           "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60}
_QUANTITY = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                       r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)|[eE](?P<exp>[+-]?[0-9]{1,3}))?$")
# The largest value whose milli-value is an int64, as the scheduler's resource arithmetic needs.
MAX_VALUE = Decimal(2**63 - 1) / 1000


def quantity_value(text: str | int | float) -> Decimal:
    """The exact value of a non-negative quantity in base units (cores, bytes, devices).

    Raises ValueError naming what is wrong; a number (an unquoted YAML 8 or 0.5) is read as its text.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a quantity: {text!r}")
    s = str(text).strip()
    m = _QUANTITY.match(s)
    if not m:
        raise ValueError(f"not a quantity: {s[:40]!r}")
    try:
        value = Decimal(m.group("number"))
        if m.group("exp") is not None:
            value = value.scaleb(int(m.group("exp")))
        else:
            value *= _SUFFIX[m.group("suffix") or ""]
    except InvalidOperation:
        raise ValueError(f"not a quantity: {s[:40]!r}") from None
    if value > MAX_VALUE:
        raise ValueError(f"{s[:40]!r} is too large (at most {MAX_VALUE:.0f} in base units)")
    return value


def parse_quantity(text: str | int | float) -> float:
    """The value of a quantity in base units, as a float (for ratios and scaling)."""
    return float(quantity_value(text))


def is_whole(text: str | int | float) -> bool:
    """Whether the quantity is a whole number of base units (pods, GPUs and other extended resources)."""
    return quantity_value(text) == quantity_value(text).to_integral_value()


def scaled(text: str, factor: float, resource: str) -> str:
    """``text`` times ``factor``: cpu in whole millicores, memory in whole Ki (never below one unit)."""
    value = parse_quantity(text) * factor
    if resource == "cpu":
        return f"{max(1, math.ceil(value * 1000))}m"
    return f"{max(1, math.ceil(value / 1024))}Ki"
