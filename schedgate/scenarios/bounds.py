"""The bounds an outcome's value is held to (``equals``, ``atLeast``, ``atMost``; one at least), declared
as three fields of a :class:`~schedgate.scenarios.declare.DeclaredOutcome` and read together as ``bounds``."""

from __future__ import annotations

from typing import Any

from schedgate.scenarios.parse import Parser
from schedgate.spec.jsontypes import Schema

BOUNDS = ("equals", "atLeast", "atMost")
BOUND_ATTRS = ("equals", "at_least", "at_most")  # their attributes on a declared outcome
NUMBER: Schema = {"type": "number"}
NEEDS_BOUND: Schema = {"anyOf": [{"required": [k]} for k in BOUNDS]}  # needs_bound, as JSON Schema


def needs_bound(p: Parser, m: dict[str, Any], w: str) -> None:
    if not any(k in m for k in BOUNDS):
        p.v.fail(w, "needs equals, atLeast or atMost")


def bounds_read(values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The bounds given, as (key, value), in the order of ``BOUNDS``."""
    return tuple((k, values[a]) for k, a in zip(BOUNDS, BOUND_ATTRS, strict=True) if a in values)


def read_bound(p: Parser, x: Any, w: str) -> float:
    """Any number (a metric's bound)."""
    return p.v.number(x, w, minimum=float("-inf"), maximum=float("inf"))


def read_count(p: Parser, x: Any, w: str) -> int:
    """A whole number (a count's bound)."""
    return p.v.whole(x, w)
