"""JSON Schemas (draft 2020-12) of scenario files and cluster definitions, for editors; ``schedgate schema
--write`` regenerates the copies shipped in :mod:`schedgate.schemas`.

Every field comes from its declaration, the same one the loader reads the file with: a step's or outcome's
fields from its class (:mod:`.declare`: each :func:`~.declare.arg` and the class's ``RULE``, ``REFUSED``,
``MORE`` and ``SHORTHANDS``), the pod fields from :data:`~.template.POD_FIELDS`, ``expect``'s own keys from
:data:`~.outcomes.EXPECT`, and every other mapping (the top level, a cluster, pool, node, taint, condition,
device set, toleration, device request, the extender's faults) from its :class:`~schedgate.spec.shape.Shape`.
Descriptions: the declarations' meanings and the classes' docstrings (draft-07 safe).
``tests/unit/scenarios/test_schema.py`` holds the schema against the loader, key by key.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from schedgate.scenarios import load
from schedgate.scenarios.control_steps import FAULTS
from schedgate.scenarios.declare import (
    EXTRA,
    FIELD,
    Declared,
    DeclaredOutcome,
    args_of,
    declared_body,
    declared_schema,
)
from schedgate.scenarios.outcomes import EXPECT, OUTCOMES
from schedgate.scenarios.steps import STEPS
from schedgate.scenarios.template import DEVICE_REQUEST, TEMPLATE_FIELDS, TOLERATION, pod_schema
from schedgate.spec.capacity_policy import POLICY
from schedgate.spec.cluster import CLUSTER, NODE, POOL
from schedgate.spec.devices import DEVICE_SET
from schedgate.spec.jsontypes import LABEL, NAMES, RESOURCES_DOC, SCALAR, Schema, ref
from schedgate.spec.node_fields import CONDITION, TAINT

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"  # the package schedgate.schemas
FILES = {"scenario": "scenario.schema.json", "cluster": "cluster.schema.json"}
# The nested mappings.
SHAPES = (POOL, NODE, TAINT, TOLERATION, FAULTS, CONDITION, DEVICE_SET, POLICY, DEVICE_REQUEST)

# The types the declarations name by reference.
DEFS: dict[str, Schema] = {
    "nodeSet": {"description": "node and pool names (a pool: each of its nodes): one or a list", **NAMES},
    "podSet": {"description": "names or globs (infer-*) of pods earlier steps created: one or a list", **NAMES},
    "names": {"description": "one name or a list", **NAMES},
    "quantity": {"description": "a quantity: 8, 500m, 64Gi, 1e3", "type": ["string", "number"], "minimum": 0},
    "resources": {"type": "object", "additionalProperties": ref("quantity"), "description": RESOURCES_DOC},
    "labels": {"description": "label key -> value (quote \"true\")", "type": "object", "additionalProperties": LABEL},
    "annotations": {"description": "annotation key -> value", "type": "object", "additionalProperties": SCALAR},
}
_SHORTHAND: dict[Any, Schema] = {True: {"const": True}, None: {"type": "null"}}


def _md(text: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", " ".join(text.split()))


def _doc(cls: type) -> str | None:
    """A class's own docstring (not the signature a dataclass writes)."""
    doc = cls.__dict__.get("__doc__")
    return None if not doc or doc.startswith(f"{cls.__name__}(") else _md(doc)


def _declared_class(parse: Any) -> type[Declared]:
    cls = getattr(parse, "__self__", None)
    if not (isinstance(cls, type) and issubclass(cls, Declared)):
        raise TypeError(f"{parse!r} is not a declared step or outcome (scenarios.declare)")
    return cls


def _rule(cls: type[Declared], fields: list[str]) -> Schema:
    """The class's RULE, its alternatives cut to the fields it takes (a refused one is no alternative)."""
    for word in ("oneOf", "anyOf"):
        if word in cls.RULE:
            left = [alt for alt in cls.RULE[word] if all(k in fields for k in alt.get("required", ()))]
            return copy.deepcopy(left[0] if len(left) == 1 else {word: left})
    return copy.deepcopy(cls.RULE)


def _mapping(cls: type[Declared], doc: str | None = None, nullable: bool | None = None) -> Schema:
    """The mapping of a declared class's fields (and the pod fields it takes, MORE), less those it refuses."""
    declared = declared_schema(cls, FIELD)
    fields = [k for k in (*declared, *cls.MORE) if k not in cls.REFUSED]
    rule = _rule(cls, fields)
    required = [a.key for _, a in args_of(cls, FIELD) if a.required and a.key in fields]
    required += [k for k in rule.get("required", ()) if k not in required]
    rule.pop("required", None)
    if nullable is None:  # a body with nothing required may be left empty: `sync:`
        nullable = not required and not rule
    out: Schema = {"type": ["object", "null"] if nullable else "object", **({"description": doc} if doc else {}),
                   "properties": {k: declared.get(k) or pod_schema(k) for k in fields},
                   "additionalProperties": False, **rule}
    return {**out, "required": required} if required else out


def _outcome(name: str) -> Schema:
    """An outcome's body: the one value it declares whole, or its mapping and the shorthands it takes."""
    cls = _declared_class(OUTCOMES[name].parse)
    doc = _doc(cls)
    if (whole := declared_body(cls)) is not None:
        return {"description": doc, "anyOf": [whole]} if doc else whole
    shorthands = cls.SHORTHANDS if issubclass(cls, DeclaredOutcome) else ()
    shapes = [_SHORTHAND[s] for s in shorthands] + [_mapping(cls, nullable=False)]
    return {**({"description": doc} if doc else {}), **(shapes[0] if len(shapes) == 1 else {"anyOf": shapes})}


def _expect() -> Schema:
    """``expect``: exactly one outcome; ``pods`` where it is about pods; an extra only with its outcomes."""
    extras = {x: s for k in OUTCOMES.values() for x, s in declared_schema(_declared_class(k.parse), EXTRA).items()}
    props = {**{k.name: k.json() for k in EXPECT}, **dict(sorted(extras.items())), **{o: _outcome(o) for o in OUTCOMES}}
    doc = _doc(STEPS["expect"].__self__)  # type: ignore[attr-defined]
    body: Schema = {"type": "object", **({"description": doc} if doc else {}), "properties": props,
                    "additionalProperties": False, "oneOf": [{"required": [o]} for o in OUTCOMES], "allOf": []}
    for o, k in OUTCOMES.items():
        refused = [*(() if k.about_pods else ("pods",)), *sorted(set(extras) - set(k.extras))]
        then = {**({"required": ["pods"]} if k.about_pods else {}),
                **({"properties": dict.fromkeys(refused, False)} if refused else {})}
        body["allOf"].append({"if": {"required": [o]}, "then": then})
    return body


def _step() -> Schema:
    bodies = {name: _expect() if name == "expect" else _mapping(cls := _declared_class(STEPS[name]), _doc(cls))
              for name in sorted(STEPS)}
    return {"description": "one step: a mapping with exactly one step name", "type": "object",
            "minProperties": 1, "maxProperties": 1, "properties": bodies, "additionalProperties": False}


def _definitions() -> dict[str, Schema]:
    defs = {**DEFS, **{s.name: s.schema() for s in SHAPES}, "cluster": CLUSTER.schema()}
    defs["template"] = {"type": "object", "description": "pod fields a createPods step fills in",
                        "properties": {f: pod_schema(f) for f in TEMPLATE_FIELDS}, "additionalProperties": False}
    return defs


def _document(title: str, top: Schema, defs: dict[str, Schema]) -> Schema:
    """``top`` with the definitions it refers to, at any depth."""
    used: dict[str, Schema] = {}
    todo = [top]
    while todo:
        for name in re.findall(r'"#/\$defs/([^"]+)"', json.dumps(todo.pop())):
            if name not in used:
                todo.append(used.setdefault(name, defs[name]))
    return {"$schema": DRAFT, "title": title, **top, "$defs": dict(sorted(used.items()))}


def scenario_schema() -> Schema:
    """The schema of ``*.scenario.yaml`` files, from the declarations the loader reads them with."""
    defs = {**_definitions(), "step": _step()}
    return _document("schedgate scenario file", load.SCENARIO.schema(), defs)


def cluster_schema() -> Schema:
    """The schema of cluster definition files (``clusters/*.yaml``)."""
    defs = _definitions()
    return _document("schedgate cluster definition", defs.pop("cluster"), defs)


def render(kind: str) -> str:
    """The schema of ``kind`` (scenario or cluster) as the shipped file holds it."""
    schema = scenario_schema() if kind == "scenario" else cluster_schema()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path | None = None) -> list[Path]:
    """Regenerate the shipped schema files (in ``folder``, default the package's)."""
    for kind, name in FILES.items():
        ((folder or SCHEMAS) / name).write_text(render(kind), encoding="utf-8")
    return [(folder or SCHEMAS) / name for name in FILES.values()]
