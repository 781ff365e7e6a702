"""The names and quantities of device fields, checked as the resource.k8s.io API checks them: a driver's
name, an attribute's or capacity's name (``memory``, ``gpu.schedgate.io/model``) and a device quantity."""

from __future__ import annotations

import re
from typing import Any

from schedgate.spec.validate import Validator, short

DRIVER = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i?|[mkMGTPE]|)$")


def attribute_name(v: Validator, key: str, where: str) -> None:
    """An attribute's, counter's or capacity's name: a C identifier, optionally after ``domain/``."""
    domain, slash, ident = key.rpartition("/")
    if not _IDENT.match(ident) or (slash and (len(domain) > 63 or not DRIVER.match(domain))):
        v.fail(where, f"{key!r} is not an attribute name (a C identifier of at most 32, optionally after "
                      "'domain/')")


def device_quantity(v: Validator, key: str, value: Any, where: str) -> tuple[str, str]:
    q = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    if not _QUANTITY.match(q):
        v.fail(where, f"must be a quantity (80Gi, 4, 500m), got {short(value)}")
    return key, q


def capacity_requests(v: Validator, raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    """A claim's ``capacity``: capacity name -> quantity (at least one)."""
    m = v.mapping(raw, where)
    if not m:
        v.fail(where, "must give at least one capacity: name -> quantity")
    for key in m:
        attribute_name(v, str(key), f"{where}.{key}")
    return tuple(device_quantity(v, str(k), x, f"{where}.{k}") for k, x in m.items())
