"""The JSON Schema pieces a field declaration names its type with (draft 2020-12, draft-07 safe): shared by the
declarations of steps and outcomes (:mod:`schedgate.scenarios.declare`), the pod fields
(:mod:`schedgate.scenarios.template`) and every other mapping's keys (:mod:`schedgate.spec.shape`)."""

from __future__ import annotations

from typing import Any

from schedgate.spec.roles import SCENARIO_ROLES
from schedgate.spec.validate import DNS_LABEL, LABEL_VALUE

Schema = dict[str, Any]
STR: Schema = {"type": "string", "minLength": 1}
DNS: Schema = {"type": "string", "pattern": DNS_LABEL.pattern}
BOOL: Schema = {"type": "boolean"}
LABEL: Schema = {"type": ["string", "number"], "pattern": LABEL_VALUE.pattern, "maxLength": 63}
SCALAR: Schema = {"type": ["string", "number", "boolean", "null"]}
NAMES: Schema = {"anyOf": [STR, {"type": "array", "minItems": 1, "items": STR}]}
CONFIG: Schema = {**STR, "description": "a scheduler configuration file, or a role: " + ", ".join(SCENARIO_ROLES)}
RESOURCES_DOC = ("resource name (cpu, memory, pods, ephemeral-storage, hugepages-<size>, or domain/name: "
                 "nvidia.com/gpu) -> quantity")
NODE_OR_MANIFEST: Schema = {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "object", "properties": {"kind": {
    "const": "Node"}}, "required": ["kind"], "description": "a Node manifest, checked against the pinned API"}]}


def ref(name: str) -> Schema:
    """A type of the document's ``$defs``."""
    return {"$ref": f"#/$defs/{name}"}


def whole(minimum: int = 0, maximum: int = 1_000_000) -> Schema:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def listing(item: Schema, minimum: int = 0) -> Schema:
    return {"type": "array", "items": item, **({"minItems": minimum} if minimum else {})}


def described(schema: Schema, doc: str) -> Schema:
    """``schema`` with ``doc`` as its description (a ``$ref`` beside a description is draft-07 safe in
    editors: they show the description and follow the reference)."""
    return {**schema, "description": doc}
