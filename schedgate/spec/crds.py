"""Kinds a CustomResourceDefinition serves, for the steps of a file after the one that applies it.

An ``apply`` of a CRD (``apiextensions.k8s.io/v1``) makes each of its served versions a kind the file's later
``apply`` steps may use, checked before anything starts against that version's ``openAPIV3Schema`` as the API
server checks a custom resource with strict field validation (``kubectl apply --validate=strict``): a field
the schema does not declare is a mistake unless the schema preserves unknown fields there. The structural
schema's own words become JSON Schema: ``nullable``, ``x-kubernetes-int-or-string``,
``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-embedded-resource``, OpenAPI 3.0's boolean
``exclusiveMinimum``/``exclusiveMaximum``. Formats and CEL rules (``x-kubernetes-validations``) are left to
the API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from schedgate.spec.validate import Validator, join

CRD_API = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
# Words of a structural schema that mean the same in JSON Schema; each of the others is read below or left alone.
_SAME = frozenset({"type", "required", "enum", "pattern", "minimum", "maximum", "minLength", "maxLength",
                   "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "multipleOf"})
_OBJECT_META = ("apiVersion", "kind", "metadata")

CustomKinds = dict[tuple[str, str], Any]  # (apiVersion, kind) -> a jsonschema validator


def is_crd(manifest: Mapping[str, Any]) -> bool:
    return manifest.get("kind") == CRD_KIND and manifest.get("apiVersion") == CRD_API


def served_kinds(v: Validator, crd: Mapping[str, Any], where: str) -> CustomKinds:
    """The kinds ``crd`` (a CustomResourceDefinition the pinned schema has accepted) serves, each version with
    the validator of its schema; one line naming the field when the API server would refuse it."""
    spec, name = crd["spec"], crd["metadata"]["name"]
    group, names = spec["group"], spec["names"]
    if name != f"{names['plural']}.{group}":
        v.fail(join(where, "metadata.name"), f"must be spec.names.plural and spec.group: "
                                         f"'{names['plural']}.{group}', not {name!r}")
    out: CustomKinds = {}
    for i, version in enumerate(spec["versions"]):
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            v.fail(join(where, f"spec.versions[{i}].schema.openAPIV3Schema"), "is required: the schema its objects are "
                                                                          "checked against")
        if version.get("served"):
            out[(f"{group}/{version['name']}", str(names["kind"]))] = jsonschema.validators.Draft202012Validator(
                top_level(schema))
    if not out:
        v.fail(join(where, "spec.versions"), "serves no version (none has served: true)")
    return out


def top_level(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A custom resource's schema: its own, with ``apiVersion``, ``kind`` and ``metadata`` always allowed (the API
    server checks metadata as every object's)."""
    out = json_schema(schema)
    out["properties"] = {**out.get("properties", {}), "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                         "metadata": {"type": "object"}}
    return out


def json_schema(node: Any) -> dict[str, Any]:
    """One structural schema node as JSON Schema (Draft 2020-12)."""
    if not isinstance(node, Mapping):
        return {}
    out: dict[str, Any] = {k: node[k] for k in _SAME if k in node}
    if isinstance(node.get("properties"), Mapping):
        out["properties"] = {str(k): json_schema(s) for k, s in node["properties"].items()}
    if "items" in node:
        out["items"] = json_schema(node["items"])
    extra = node.get("additionalProperties")
    if isinstance(extra, bool):
        out["additionalProperties"] = extra
    elif isinstance(extra, Mapping):
        out["additionalProperties"] = json_schema(extra)
    for k in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(k), list):
            out[k] = [json_schema(s) for s in node[k]]
    if "not" in node:
        out["not"] = json_schema(node["not"])
    for bound in ("minimum", "maximum"):  # OpenAPI 3.0: a flag beside the bound
        exclusive = "exclusive" + bound.capitalize()
        if node.get(exclusive) is True and bound in node:
            out[exclusive] = out.pop(bound)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        either = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        out = {**out, "allOf": [*out.get("allOf", []), either]}
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-embedded-resource"):
        out["properties"] = {**out.get("properties", {}), **{k: {} for k in _OBJECT_META}}
    if out.get("type") in ("object", ["object", "null"]) and "additionalProperties" not in out \
            and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False  # pruned by the API server; an error under strict field validation
    return out
