"""A mapping of a file, declared once: each key's name, meaning, JSON type and whether it is required.

::

    TAINT = Shape("taint", "a taint: key, value and effect", (
        Key("key", "the taint's key", STR, required=True),
        Key("value", "", LABEL),
        Key("effect", "", {"enum": list(TAINT_EFFECTS)}, required=True),
    ))
    m = TAINT.read(v, raw, "pools[0].taints[0]")   # unknown or missing keys: the one line, as everywhere

The loader reads a mapping through its shape (:meth:`Shape.read`: exactly the keys declared, the required
ones present) and then each value with its own check; the JSON Schema (:mod:`schedgate.scenarios.schema`)
and the reference pages take the keys, their types, meanings and rules from the same declaration. A new key
of a cluster definition is one :class:`Key` and the code that reads its value.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from schedgate.spec.jsontypes import Schema, described
from schedgate.spec.validate import Validator


@dataclass(frozen=True)
class Key:
    name: str
    doc: str     # its meaning ("": its type's, in the schema and the reference)
    schema: Schema
    required: bool = False

    def json(self) -> Schema:
        return described(self.schema, self.doc) if self.doc else dict(self.schema)


@dataclass(frozen=True)
class Shape:
    """A mapping's keys, in the order the schema and the refusal of an unknown key list them."""

    name: str    # its name among the schema's definitions
    doc: str
    keys: tuple[Key, ...]
    rule: Schema = field(default_factory=dict)  # a rule over several keys ("one of these"), as JSON Schema

    @property
    def allowed(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys if k.required)

    def __iter__(self) -> Iterator[Key]:
        return iter(self.keys)

    def key(self, name: str) -> Key:
        return next(k for k in self.keys if k.name == name)

    def read(self, v: Validator, raw: Any, where: str) -> dict[str, Any]:
        """The mapping at ``where``: exactly the declared keys, the required ones present (their values are
        the caller's to check)."""
        return v.mapping(raw, where, required=self.required, allowed=self.allowed)

    def schema(self, **props: Schema) -> Schema:
        """The JSON Schema of the mapping (``props``: a key's type given by the caller, where it is the
        schema's to know: a capacity's required resources)."""
        out: Schema = {"type": "object", **({"description": self.doc} if self.doc else {}),
                       "properties": {k.name: props.get(k.name) or k.json() for k in self.keys},
                       "additionalProperties": False, **self.rule}
        required = [*self.required, *(r for r in self.rule.get("required", ()) if r not in self.required)]
        return {**out, "required": required} if required else out
