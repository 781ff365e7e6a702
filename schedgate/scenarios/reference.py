"""The reference pages made from the field declarations: ``docs/reference/pod-fields.md`` from
:data:`schedgate.scenarios.template.POD_FIELDS`. ``schedgate schema --write`` writes them beside the JSON
Schemas; ``tests/test_schema.py`` fails when a page is not what the declarations make now."""

from __future__ import annotations

from pathlib import Path

from schedgate.scenarios.jsontypes import Schema
from schedgate.scenarios.template import POD_FIELDS
from schedgate.spec.shipped import ROOT

DOCS = ROOT / "docs" / "reference"
PAGES = {"pod-fields.md": "pod fields"}


def type_text(schema: Schema) -> str:
    """A field's JSON type in a few words."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(type_text(s) for s in schema["anyOf"])
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


def render_page(name: str) -> str:
    if name == "pod-fields.md":
        return pod_fields_page()
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
