"""Field checks shared by every file users write, each failing in one line: ``FILE: FIELD: PROBLEM``.

With a line map (:func:`schedgate.spec.yamlfile.read_yaml`) the line of the
field, or of the nearest enclosing one, is added: ``... (line 12)``.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from schedgate.errors import DefinitionError
from schedgate.spec.pattern import check as check_pattern
from schedgate.spec.quantity import is_whole, quantity_value

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Resources a node or pod may name without a domain (and ``hugepages-<page size>``); everything else is
# an extended resource (a/b) — what the API's resource-name validation accepts.
NATIVE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
HUGEPAGES = "hugepages-"
MAX_SECONDS = 3600.0     # any timeout or latency
MAX_WHOLE = 1_000_000    # any other count (GPUs, slots)


def join(where: str, key: str) -> str:
    key = key or '""'  # an empty key is named too
    return f"{where}.{key}" if where else key


def kind_of(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def short(value: Any) -> str:
    """``repr(value)``, cut to 40 characters: a hostile value never floods the one line."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def is_resource_name(name: str) -> bool:
    """A resource name the API accepts on a node or in a container's requests."""
    if name in NATIVE_RESOURCES:
        return True
    if name.startswith(HUGEPAGES):
        try:
            quantity_value(name[len(HUGEPAGES):])
        except ValueError:
            return False
        return True
    prefix, slash, rest = name.partition("/")
    return bool(slash) and bool(_DNS_SUBDOMAIN.match(prefix)) and bool(_LABEL_NAME.match(rest)) \
        and len(prefix) <= 253 and len(rest) <= 63


class Validator:
    """Checks for one file (``source``); ``lines`` maps field paths to their line, if known."""

    def __init__(self, source: str, lines: dict[str, int] | None = None) -> None:
        self.source = source
        self.lines = lines

    def fail(self, where: str, problem: str) -> NoReturn:
        line = self.line(where) if self.lines is not None else None
        raise DefinitionError(self.source, where, problem + (f" (line {line})" if line else ""))

    def line(self, where: str) -> int | None:
        """The line of ``where``, else of the nearest field that holds it (dropping ``.key`` or ``[i]``)."""
        lines = self.lines or {}
        while where:
            if where in lines:
                return lines[where]
            parent = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", where)
            if parent == where:  # "document", "steps": nothing left to drop
                break
            where = parent
        return lines.get("")

    # -- containers -----------------------------------------------------------
    def mapping(self, value: Any, where: str, required: tuple[str, ...] = (),
                allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where or "document", f"must be a mapping, got {kind_of(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(where or "document", f"key {short(key)} must be a string")
            if allowed is not None and key not in allowed:
                self.fail(join(where, key), f"unknown field (allowed: {', '.join(allowed)})")
        for key in required:
            if key not in value or value[key] is None:
                self.fail(join(where, key), "required field is missing")
        return value

    def strings(self, value: Any, where: str) -> list[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            self.fail(where, f"must be a name or a non-empty list of names, got {kind_of(value)}")
        return [self.string(v, f"{where}[{i}]") for i, v in enumerate(items)]

    # -- scalars --------------------------------------------------------------
    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(where, f"must be a non-empty string, got {kind_of(value) if value != '' else 'an empty one'}")
        return value

    def whole(self, value: Any, where: str, minimum: int = 0, maximum: int = MAX_WHOLE) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.fail(where, f"must be a whole number from {minimum} to {maximum}, got {short(value)}")
        return value

    def number(self, value: Any, where: str, minimum: float = 0.0, maximum: float = MAX_SECONDS) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= maximum:
            self.fail(where, f"must be a number from {minimum:g} to {maximum:g}, got {short(value)}")
        return float(value)

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"must be true or false, got {short(value)}")
        return value

    def regex(self, value: Any, where: str) -> str:
        text = self.string(value, where)
        why = check_pattern(text)
        if why is not None:  # RE2's syntax: matched in linear time, no backreferences, no lookaround
            self.fail(where, f"not a regular expression RE2 accepts (no backreferences or lookaround; matched in "
                             f"time linear in the text): {why}")
        return text

    def dns_label(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not DNS_LABEL.match(value):
            self.fail(where, f"must be a DNS label (lowercase letters, digits, '-'), got {short(value)}")
        return value

    # -- Kubernetes vocabulary -------------------------------------------------
    def label_key(self, key: str, where: str) -> None:
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
            self.fail(where, f"invalid key prefix {short(prefix)}")
        if not name or len(name) > 63 or not _LABEL_NAME.match(name):
            self.fail(where, f"invalid key name {short(name)}")

    def labels(self, raw: Any, where: str) -> dict[str, str]:
        m = self.mapping(raw, where)
        out: dict[str, str] = {}
        for k, val in m.items():
            self.label_key(k, f"{where}.{k}")
            if isinstance(val, bool) or val is None:
                self.fail(f"{where}.{k}", f"label values are strings; quote it: \"{str(val).lower()}\"")
            val = str(val)
            if len(val) > 63 or not LABEL_VALUE.match(val):
                self.fail(f"{where}.{k}", f"invalid label value {short(val)}")
            out[k] = val
        return out

    def taint_effect(self, value: Any, where: str) -> str:
        if value not in TAINT_EFFECTS:
            self.fail(where, f"must be one of {', '.join(TAINT_EFFECTS)}, got {short(value)}")
        return str(value)

    def resources(self, raw: Any, where: str) -> dict[str, str]:
        """Resource name -> quantity text, each checked with the one quantity grammar."""
        m = self.mapping(raw, where)
        out: dict[str, str] = {}
        for k, val in m.items():
            rw = f"{where}.{k}"
            if not is_resource_name(k):
                self.fail(rw, "unknown resource; the names without a domain are "
                              f"{', '.join(NATIVE_RESOURCES)}, hugepages-<size>; others need one, e.g. nvidia.com/gpu")
            if isinstance(val, bool) or val is None:
                self.fail(rw, f"must be a quantity, got {short(val)}")
            if isinstance(val, (int, float)) and val < 0:
                self.fail(rw, f"must be >= 0, got {val}")
            text = str(val)
            try:
                quantity_value(text)
            except ValueError as e:
                problem = str(e) if "too large" in str(e) else \
                    f"must be a non-negative quantity like 8, 500m, 64Gi or 1e3, got {short(text)}"
                self.fail(rw, problem)
            if (k == "pods" or "/" in k) and not is_whole(text):
                self.fail(rw, f"must be a whole number >= 0, got {short(text)}")
            out[k] = text
        return out
