"""The reference pages made from the field declarations: ``docs/reference/pod-fields.md`` from
:data:`schedgate.scenarios.template.POD_FIELDS`, ``docs/reference/steps.md`` from the scenario file's JSON
Schema (each step's and outcome's fields, their types, and the meanings steps declare,
:mod:`schedgate.scenarios.declare`), ``docs/reference/file-fields.md`` from every other mapping's
:class:`~schedgate.spec.shape.Shape`. ``schedgate schema --write`` writes them beside the JSON Schemas;
``tests/unit/scenarios/test_schema.py`` fails when a page is not what the declarations make now."""

from __future__ import annotations

from pathlib import Path

from schedgate.scenarios.load import SCENARIO
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.schema import DEFS, SHAPES, scenario_schema
from schedgate.scenarios.template import POD_FIELDS
from schedgate.spec.agent import AGENT
from schedgate.spec.cluster import CLUSTER
from schedgate.spec.jsontypes import DNS, Schema
from schedgate.spec.shape import Shape
from schedgate.spec.shipped import ROOT
from schedgate.spec.versions import KNOWN_BUG

DOCS = ROOT / "docs" / "reference"
PAGES = {"pod-fields.md": "pod fields", "steps.md": "steps and outcomes", "file-fields.md": "file fields"}


def type_text(schema: Schema) -> str:
    """A field's JSON type in a few words."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(type_text(s) for s in schema["anyOf"])
    if "const" in schema:
        return str(schema["const"]).lower() if isinstance(schema["const"], bool) else repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(str(x) for x in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {type_text(schema.get('items', {}))}"
    if kind == "integer":
        return f"whole number {schema.get('minimum', 0)}–{schema.get('maximum', '')}".rstrip("–")
    if kind == "object":
        return "mapping"
    if kind == "string":
        return "DNS label" if schema.get("pattern") == DNS["pattern"] else "text"
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return str(kind or "any")


def pod_fields_page() -> str:
    return "\n".join([
        "# Pod fields",
        "",
        "<!-- Made by `schedgate schema --write` from schedgate/scenarios/template.py; do not edit. -->",
        "",
        "A scenario file's `templates.<name>` and each `createPods` step take these fields (a step's over its",
        "template's). They are applied to the pod in this order, so a later one goes over an earlier one.",
        "",
        "| field | type | meaning |",
        "|---|---|---|",
        *(f"| `{f.key}` | {type_text(f.schema)} | {f.doc} |" for f in POD_FIELDS),
        "",
    ])


def _fields(body: Schema, defs: Schema, only: tuple[str, ...] | None = None) -> list[str]:
    """A table of ``body``'s fields (those in ``only``, if given); a field without a meaning of its own
    gets its type's."""
    props = {k: v for k, v in (body.get("properties") or {}).items() if only is None or k in only}
    if not props:
        return []
    required = set(body.get("required") or ())

    def meaning(v: Schema) -> str:
        own = v.get("description") or (defs.get(str(v.get("$ref", "")).rsplit("/", 1)[-1]) or {}).get("description")
        return _one_line(own or "")

    return ["", "| field | type | meaning |", "|---|---|---|",
            *(f"| `{k}`{' (required)' if k in required else ''} | {type_text(v)} | {meaning(v)} |"
              for k, v in props.items())]


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _mapping(body: Schema) -> Schema:
    """An outcome's mapping shape, where it takes one (else the body itself)."""
    for shape in body.get("anyOf") or []:
        if shape.get("properties"):
            return dict(shape)
    return body


def _takes(body: Schema) -> str:
    """An outcome's shapes, each with its meaning where it declares one (``true``: ...)."""
    shapes = body.get("anyOf") or [body]
    return " or ".join(type_text(s) + (f" ({_one_line(s['description'])})" if s is not body and s.get(
        "description") else "") for s in shapes)


def steps_page() -> str:
    schema = scenario_schema()
    defs, steps = schema["$defs"], schema["$defs"]["step"]["properties"]
    out = ["# Steps and outcomes", "",
           "<!-- Made by `schedgate schema --write` from the scenario file's schema; do not edit. -->", "",
           "A scenario file's `steps` is a list; each step is a mapping with exactly one of these names. An",
           "`expect` step names `pods` (where its outcome is about pods) and exactly one outcome.", ""]
    for name, body in steps.items():
        if name != "expect":
            out += [f"## `{name}`", "", _one_line(body.get("description", "")) or "(no description)",
                    *_fields(body, defs), ""]
    expect = steps["expect"]
    out += ["## `expect`", "", _one_line(expect.get("description", "")), *_fields(expect, defs, ("pods", "timeout")),
            ""]
    for name, kind in OUTCOMES.items():
        body = expect["properties"][name]
        out += [f"### `{name}`", "", _one_line(body.get("description", "")) or "(no description)", "",
                f"Takes: {_takes(body)}" + ("" if kind.about_pods else "; names no `pods`") + ".",
                *_fields(_mapping(body), defs)]
        out += _fields(expect, defs, kind.extras) if kind.extras else []
        out.append("")
    return "\n".join(out)


def _shape(shape: Shape, title: str) -> list[str]:
    """A section of a declared mapping's keys (:mod:`schedgate.spec.shape`)."""
    def meaning(schema: Schema, doc: str) -> str:
        own = doc or schema.get("description") or DEFS.get(str(schema.get("$ref", "")).rsplit("/", 1)[-1], {}).get(
            "description", "")
        return _one_line(own)

    return [f"## {title}", "", _one_line(shape.doc) or "(no description)", "",
            "| field | type | meaning |", "|---|---|---|",
            *(f"| `{k.name}`{' (required)' if k.required else ''} | {type_text(k.schema)} | "
              f"{meaning(k.schema, k.doc)} |" for k in shape), ""]


def file_fields_page() -> str:
    titles = {"pool": "`pools[]`", "node": "`nodes[]`", "taint": "`taints[]` (of a pool or node)",
              "toleration": "`tolerations[]` (a pod field)", "faults": "`faults` (of an `extender` step)",
              "condition": "`conditions[]` (of a node)", "deviceSet": "`devices[]` (of a pool or node)",
              "requestPolicy": "`requestPolicy.<capacity>` (of a device set)",
              "deviceRequest": "`devices` (a pod field: one request or a list)"}
    out = ["# Scenario and cluster file fields", "",
           "<!-- Made by `schedgate schema --write` from the declarations (schedgate.spec.shape); do not edit. -->", "",
           "Each mapping of a scenario file or a cluster definition that is not a step, an outcome or the pod",
           "fields ([steps and outcomes](steps.md), [pod fields](pod-fields.md)). The loader takes exactly these keys;",
           "an unknown or missing one is one line naming the file, the field and its line.", ""]
    out += _shape(SCENARIO, "A scenario file's top level") + _shape(KNOWN_BUG, "`knownBug`")
    out += _shape(CLUSTER, "A cluster definition's top level (or a scenario's inline `cluster`)")
    out += _shape(AGENT, "`nodeAgent`")
    for shape in SHAPES:
        out += _shape(shape, titles[shape.name])
    return "\n".join(out)


def render_page(name: str) -> str:
    if name == "pod-fields.md":
        return pod_fields_page()
    if name == "steps.md":
        return steps_page()
    if name == "file-fields.md":
        return file_fields_page()
    raise KeyError(name)


def write_pages(folder: Path | None = None) -> list[Path]:
    """Regenerate the reference pages (in ``folder``, default a checkout's ``docs/reference``; an installed
    schedgate has no docs folder to write)."""
    if folder is None and not (ROOT / "pyproject.toml").is_file():
        return []
    out = folder or DOCS
    out.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        (out / name).write_text(render_page(name), encoding="utf-8")
    return [out / name for name in PAGES]
