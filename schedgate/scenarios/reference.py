"""The reference pages made from the field declarations: ``docs/reference/pod-fields.md`` from
:data:`schedgate.scenarios.template.POD_FIELDS`, ``docs/reference/steps.md`` from the scenario file's JSON
Schema (each step's and outcome's fields, their types, and the meanings steps declare,
:mod:`schedgate.scenarios.declare`). ``schedgate schema --write`` writes them beside the JSON Schemas;
``tests/unit/scenarios/test_schema.py`` fails when a page is not what the declarations make now."""

from __future__ import annotations

from pathlib import Path

from schedgate.scenarios.jsontypes import Schema
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.schema import scenario_schema
from schedgate.scenarios.template import POD_FIELDS
from schedgate.spec.shipped import ROOT

DOCS = ROOT / "docs" / "reference"
PAGES = {"pod-fields.md": "pod fields", "steps.md": "steps and outcomes"}


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
        return "DNS label" if "pattern" in schema else "text"
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


def render_page(name: str) -> str:
    if name == "pod-fields.md":
        return pod_fields_page()
    if name == "steps.md":
        return steps_page()
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
