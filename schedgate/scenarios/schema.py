"""JSON Schemas (draft 2020-12) of scenario files and cluster definitions, for editors; ``schedgate schema
--write`` regenerates the copies shipped in :mod:`schedgate.schemas`.

No field list is written here: the loader is probed for each. Every mapping it checks goes through
:meth:`~schedgate.spec.validate.Validator.mapping`, which refuses an unknown key with ``unknown field
(allowed: a, b, c)`` and a missing one with ``required field is missing``. So the loader's own code parses,
for each step, outcome and nested mapping (the top level, a cluster, pool, node, taint, condition,
toleration, the extender's faults), on a one-node in-memory cluster: a body with one unknown key (its
refusal lists the allowed fields); an empty one, adding each field reported missing (the required ones);
each field alone, to find those that get a body past a refusal of it as a whole ("needs one of ...").
An outcome's body is tried as ``true``, null, a node name and a mapping; templates take ``TEMPLATE_FIELDS``.
Written elsewhere is only each field's JSON type (:data:`TYPES`) and rules no probe reaches (:data:`RULES`);
a declared step (:mod:`.declare`) gives its fields' types and meanings and the keys it takes only to refuse
them (:data:`REFUSED`) on its class. Descriptions: the classes' docstrings (draft-07 safe).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from schedgate.errors import DefinitionError
from schedgate.scenarios import load
from schedgate.scenarios.declare import Declared, body_schema, declared_schema
from schedgate.scenarios.jsontypes import Schema, ref
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.schema_types import DEFS, RULES, TYPES
from schedgate.scenarios.steps import STEPS
from schedgate.scenarios.template import TEMPLATE_FIELDS, pod_schema
from schedgate.spec import cluster as cluster_module
from schedgate.spec.cluster import API_VERSION, parse_definition
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.validate import Validator, join

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"  # the package schedgate.schemas
FILES = {"scenario": "scenario.schema.json", "cluster": "cluster.schema.json"}
Attempt = Callable[[Any], object]  # parses one body as the loader does; a problem raises DefinitionError

PROBE = "__probe__"  # a key no file has
FILLER = "probe"     # a value for a required field: present, and wrong for nearly every field
POD = "probe-pod"    # the pod every probe's parser has created
W = "steps[0]"
_POOL: dict[str, Any] = {"name": "p", "count": 1, "capacity": {"cpu": "1", "memory": "1Gi", "pods": "1"}}
_CLUSTER: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Cluster", "name": "probe", "pools": [_POOL]}
_NODE = "p-1"        # the one node of _CLUSTER
POD_CONTEXTS = ("template", "createPods")  # where the pod fields are (scenarios.template declares them)
_UNKNOWN = re.compile(r"^unknown field \(allowed: (.*?)\)(?: \(line \d+\))?$")


def _error(attempt: Attempt, body: Any) -> DefinitionError | None:
    try:
        attempt(body)
        return None
    except DefinitionError as e:
        return e


def allowed_fields(attempt: Attempt, where: str) -> tuple[str, ...] | None:
    """The fields the mapping at ``where`` allows, read from the loader's refusal of an unknown one
    (None: the loader takes any key there, or no mapping at all)."""
    e = _error(attempt, {PROBE: FILLER})
    m = _UNKNOWN.match(e.problem) if e is not None and e.field == join(where, PROBE) else None
    return None if m is None else tuple(f for f in m.group(1).split(", ") if f)


def required_fields(attempt: Attempt, where: str, filler: Any = FILLER) -> tuple[str, ...]:
    """The fields the loader reports missing, one at a time, from an empty body at ``where`` up."""
    body: dict[str, Any] = {}
    while (e := _error(attempt, body)) is not None and e.problem.startswith("required field is missing"):
        name = e.field[len(where) + 1:] if where else e.field
        if e.field != join(where, name) or name in body or "." in name or "[" in name:
            break
        body[name] = filler
    return tuple(body)


def probe_parser() -> Parser:
    """A scenario's parser on the one-node cluster, with one pod (``POD``) created; it loads no files."""

    def no_files(path: Path) -> SchedulerConfig:
        raise DefinitionError(path, "", "a schema probe reads no files")

    p = Parser(path=Path("probe.scenario.yaml"), v=Validator("<schema probe>"),
               definition=parse_definition(_CLUSTER), load_config=no_files)
    p.create([POD], W)
    return p


def step_attempt(name: str) -> Attempt:
    def attempt(body: Any) -> object:
        return STEPS[name](probe_parser(), body, f"{W}.{name}")

    attempt.declared = getattr(STEPS[name], "__self__", None)  # type: ignore[attr-defined]
    return attempt


def outcome_attempt(name: str) -> Attempt:
    pods = {"pods": POD} if OUTCOMES[name].about_pods else {}
    return lambda body: STEPS["expect"](probe_parser(), {**pods, name: body}, f"{W}.expect")


def _scenario_file(body: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        (path := Path(d) / "probe.scenario.yaml").write_text(yaml.safe_dump(body))
        load.load_scenario(path)


_NAMED, _COND = {"name": "n", "capacity": _POOL["capacity"]}, "nodes[0].conditions[0]"
# The nested mappings: context -> (an attempt that parses one, where the loader names it).
NESTED: dict[str, tuple[Attempt, str]] = {
    "pool": (lambda b: parse_definition({**_CLUSTER, "pools": [b]}), "pools[0]"),
    "node": (lambda b: parse_definition({**_CLUSTER, "nodes": [b]}), "nodes[0]"),
    "taint": (lambda b: parse_definition({**_CLUSTER, "pools": [{**_POOL, "taints": [b]}]}), "pools[0].taints[0]"),
    "toleration": (lambda b: step_attempt("createPods")({"name": "p", "tolerations": [b]}),
                   f"{W}.createPods.tolerations[0]"),
    "faults": (lambda b: step_attempt("extender")({"faults": b}), f"{W}.extender.faults"),
    "condition": (lambda b: parse_definition({**_CLUSTER, "nodes": [{**_NAMED, "conditions": [b]}]}), _COND),
    "deviceSet": (lambda b: parse_definition({**_CLUSTER, "pools": [{**_POOL, "devices": [b]}]}),
                  "pools[0].devices[0]"),
    "deviceRequest": (lambda b: step_attempt("createPods")({"name": "p", "devices": b}), f"{W}.createPods.devices"),
}
# Capacities the loader requires resources of (probed with a valid quantity).
CAPACITY: dict[str, tuple[Attempt, str]] = {
    "pool": (lambda b: parse_definition({**_CLUSTER, "pools": [{**_POOL, "capacity": b}]}), "pools[0].capacity"),
    "node": (lambda b: parse_definition({**_CLUSTER, "nodes": [{"name": "n", "capacity": b}]}), "nodes[0].capacity"),
}


def _md(text: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", " ".join(text.split()))


def _doc(parse: Any) -> str | None:
    """The docstring of the class whose ``parse`` this is (not the signature a dataclass writes)."""
    cls = getattr(parse, "__self__", None)
    doc = cls.__dict__.get("__doc__") if isinstance(cls, type) else None
    return None if not doc or doc.startswith(f"{getattr(cls, '__name__', '')}(") else _md(doc)


def _refused_by(attempt: Attempt) -> tuple[str, ...]:
    """The keys a declared step takes only to refuse them (its class's REFUSED)."""
    cls = getattr(attempt, "declared", None)
    return tuple(cls.REFUSED) if isinstance(cls, type) and issubclass(cls, Declared) else ()


# The keys each declared step takes only to refuse them, as the steps registered at import declare them.
REFUSED: dict[str, tuple[str, ...]] = {n: r for n in STEPS if (r := _refused_by(step_attempt(n)))}


def _declared(parse: Any) -> dict[str, Schema] | None:
    """The types and meanings a step declares on its class (scenarios.declare), if it does."""
    cls = getattr(parse, "__self__", None)
    return declared_schema(cls) if isinstance(cls, type) and issubclass(cls, Declared) else None


def one_of(attempt: Attempt, where: str, fields: list[str], required: tuple[str, ...]) -> Schema:
    """A rule the loader states in prose ("needs one of ..."): the body, its required fields filled, is
    refused as a whole; the fields that each get it past that refusal, exclusive if two are refused again."""
    base = dict.fromkeys(required, FILLER)

    def passes(*more: str) -> bool:
        return (e := _error(attempt, {**base, **dict.fromkeys(more, FILLER)})) is None or e.field != where

    if passes() or not (ok := [f for f in fields if f not in base and passes(f)]):
        return {}
    return {"required": ok} if len(ok) == 1 else {"anyOf" if passes(*ok[:2]) else "oneOf": [
        {"required": [f]} for f in ok]}


def _object(context: str, attempt: Attempt | None = None, where: str = "", doc: str | None = None,
            props: dict[str, Schema] | None = None, nullable: bool = False,
            allowed: tuple[str, ...] | None = None) -> Schema:
    """A mapping of exactly the fields the loader allows at ``where`` (or ``allowed``) less those it refuses,
    those it requires, and its rules."""
    out: Schema = {"type": ["object", "null"] if nullable else "object", **({"description": doc} if doc else {})}
    allowed = allowed_fields(attempt, where) if attempt else allowed
    if allowed is None:  # the loader declares no fields here: any mapping (test_schema.py forbids it)
        return out
    refused = _refused_by(attempt) if attempt else ()
    fields = [f for f in allowed if f not in refused]
    required = required_fields(attempt, where) if attempt else ()
    out["properties"] = {f: (props or {}).get(f) or dict(TYPES.get(f"{context}.{f}") or (
        pod_schema(f) if context in POD_CONTEXTS and f in TEMPLATE_FIELDS else TYPES.get(f, {}))) for f in fields}
    out["additionalProperties"] = False
    rule = {**(one_of(attempt, where, fields, required) if attempt else {}), **RULES.get(context, {})}
    req = list(dict.fromkeys([*required, *rule.get("required", ())]))
    return {**out, **rule, **({"required": req} if req else {})}


def _outcome(name: str) -> Schema:
    """An outcome's body: each of ``true``, null, a node set and a mapping the loader takes."""
    attempt, doc, where = outcome_attempt(name), _doc(OUTCOMES[name].parse), f"{W}.expect.{name}"
    shapes: list[Schema] = [s for value, s in ((True, {"const": True}), (None, {"type": "null"}),
                                               (_NODE, ref("nodeSet"))) if _error(attempt, value) is None]
    shapes += [_object(name, attempt, where, props=_declared(OUTCOMES[name].parse))] \
        if allowed_fields(attempt, where) is not None else []
    shapes = shapes or [dict(TYPES[f"expect.{name}"])]  # a mapping of the scenario's own keys (node sets)
    shapes = [dict(body)] if (body := body_schema(getattr(OUTCOMES[name].parse, "__self__", None))) else shapes
    return {**({"description": doc} if doc else {}), **(shapes[0] if len(shapes) == 1 else {"anyOf": shapes})}


def _expect(attempt: Attempt) -> Schema:
    """``expect``: exactly one outcome; ``pods`` where it is about pods; an extra only with its outcomes."""
    body = _object("expect", attempt, f"{W}.expect", _doc(STEPS["expect"]), {o: _outcome(o) for o in OUTCOMES})
    extras = {x for k in OUTCOMES.values() for x in k.extras}
    body["allOf"] = []
    for o, k in OUTCOMES.items():
        refused = [*(() if k.about_pods else ("pods",)), *sorted(extras - set(k.extras))]
        then = {**({"required": ["pods"]} if k.about_pods else {}),
                **({"properties": dict.fromkeys(refused, False)} if refused else {})}
        body["allOf"].append({"if": {"required": [o]}, "then": then})
    return body


def _step() -> Schema:
    bodies = {name: _expect(a) if name == "expect" else  # a null body is the empty one: allowed if that is
              _object(name, a, f"{W}.{name}", _doc(STEPS[name]), nullable=_error(a, {}) is None,
                      props=_declared(STEPS[name]))
              for name, a in ((n, step_attempt(n)) for n in sorted(STEPS))}
    return {"description": "one step: a mapping with exactly one step name", "type": "object",
            "minProperties": 1, "maxProperties": 1, "properties": bodies, "additionalProperties": False}


def _definitions() -> dict[str, Schema]:
    defs = {**DEFS, **{c: _object(c, a, w) for c, (a, w) in NESTED.items()}}
    for context, (attempt, where) in CAPACITY.items():
        required = required_fields(attempt, where, filler="1")
        defs[context]["properties"]["capacity"] = {**DEFS["resources"], "required": list(required)}
    defs["cluster"] = _object("Cluster", parse_definition, "", _md((cluster_module.__doc__ or "").splitlines()[0]))
    defs["template"] = _object("template", doc="pod fields a createPods step fills in", allowed=TEMPLATE_FIELDS)
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
    """The schema of ``*.scenario.yaml`` files, from the loader's steps, outcomes and fields."""
    defs = {**_definitions(), "step": _step()}
    top = _object("Scenario", _scenario_file, "", doc=_md((load.__doc__ or "").splitlines()[0]))
    return _document("schedgate scenario file", top, defs)


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
