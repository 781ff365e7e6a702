"""Kubernetes manifests inside schedgate's files: a pod fragment merged over the shorthand fields, and
any object an ``apply`` step creates, each checked against the pinned version's API schema before
anything starts.

The schema is the pinned minor's (kubernetes-validate ships the published OpenAPI schemas per
version); a test keeps :data:`API_SCHEMA` equal to the minor ``go/go.mod`` pins. Checking is strict:
an unknown field is a mistake, as ``kubectl apply --validate=strict`` would say. Each kind's validator
is made once per process: ``kubernetes_validate.validate`` reads and parses the schema files on every
call (30 ms a pod; the check itself is 3 ms), and collecting the scenario files checks hundreds.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
import kubernetes_validate
from kubernetes_validate import utils as kv_files
from referencing import Registry, Resource

from schedgate.spec.validate import Validator, join, kind_of

API_SCHEMA = "1.37"  # the pinned minor (go/go.mod); tests/unit/scenarios/test_manifest.py checks they agree
# Lists of containers are merged by name, as a strategic merge patch would (the rest replace).
_BY_NAME = ("containers", "initContainers")


_API_VERSION = re.compile(r"(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+[a-z0-9]*")  # group/version, or v1


def check_manifest(v: Validator, manifest: Mapping[str, Any], where: str,
                   custom: Mapping[tuple[str, str], Any] | None = None) -> None:
    """Fail in one line (``where.FIELD: PROBLEM``) unless the pinned API's schema accepts ``manifest``, or the
    schema of a kind in ``custom`` (those CustomResourceDefinitions the file applied earlier serve)."""
    kind, api_version = manifest.get("kind"), manifest.get("apiVersion")
    check = None
    if isinstance(kind, str) and isinstance(api_version, str) and _API_VERSION.fullmatch(api_version):
        check = _validator(kind, api_version) or (custom or {}).get((api_version, kind))
    if check is None:
        also = ", nor does a CustomResourceDefinition an earlier step applies" if custom is not None else ""
        v.fail(f"{where}.kind" if where else "kind",
               f"{kind!r} of apiVersion {api_version!r} is not a kind Kubernetes {API_SCHEMA} serves{also}")
        return
    # The first by path (then message): iter_errors' own order can follow a set's, which changes with the
    # process's hash seed, and a file's two wrong fields must give the same line every run.
    error = min(check.iter_errors(dict(manifest)), key=lambda e: ([str(p) for p in e.absolute_path], e.message),
                default=None)
    if error is not None:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
        problem = error.message.splitlines()[0]
        v.fail(f"{where}{path}" if where else path.lstrip("."), _plain(problem))


@functools.cache
def _schema_dir() -> str:
    """The strict schemas of the newest version kubernetes-validate ships that is not newer than the pin."""
    versions = [x for x in kv_files.all_versions()
                if kv_files.major_minor(x) <= kv_files.major_minor(f"{API_SCHEMA}.0")]
    if not versions:
        raise kubernetes_validate.VersionNotSupportedError(version=API_SCHEMA)
    return f"v{versions[-1]}-local-strict"


@functools.cache
def _validator(kind: str, api_version: str) -> Any:
    """The pinned schema's validator of ``kind`` in ``api_version`` (None: no such kind), made once:
    the files and the rules kubernetes_validate.validate uses (file names: ``rbac.authorization.k8s.io/v1``
    is ``rbac-v1``)."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    folder = f"kubernetes-json-schema/{_schema_dir()}"
    try:
        schema = kv_files.schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", API_SCHEMA)
    except FileNotFoundError:
        return None
    definitions = kv_files.schema_contents(f"{folder}/_definitions.json", API_SCHEMA)
    registry: Registry[Any] = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@functools.cache
def served_api_versions(version: str) -> frozenset[str] | None:
    """The API group/versions (``scheduling.k8s.io/v1beta1``, core ``v1``) Kubernetes ``version``
    (``v1.37.2``) can serve, from its published schemas: every version of a kind; None when
    kubernetes-validate ships no schemas of that minor."""
    m = re.match(r"v?(\d+)\.(\d+)", version)
    if not m:
        return None
    minor = f"{m.group(1)}.{m.group(2)}"
    try:
        doc = kv_files.schema_contents(f"kubernetes-json-schema/v{minor}.0-local/_definitions.json", minor)
    except (FileNotFoundError, kv_files.VersionNotSupportedError):
        return None
    out: set[str] = set()
    for d in (doc.get("$defs") or {}).values():
        gvks = d.get("x-kubernetes-group-version-kind") or [] if isinstance(d, dict) else []
        if len(gvks) == 1:  # one kind's (options and watch events list every version)
            g = gvks[0]
            out.add(f"{g['group']}/{g['version']}" if g.get("group") else str(g["version"]))
    return frozenset(out)


def _plain(problem: str) -> str:
    """jsonschema's sentence without the schema's inner words, cut to one short line."""
    problem = problem.replace(", 'null'", "").replace("is not valid under any of the given schemas",
                                                      "is not a valid value here")
    return problem if len(problem) <= 200 else f"{problem[:197]}..."


def object_manifest(v: Validator, raw: Any, where: str,
                    custom: Mapping[tuple[str, str], Any] | None = None) -> dict[str, Any]:
    """A whole object (``apiVersion``, ``kind``, ``metadata.name``), schema-checked (``custom``: see
    :func:`check_manifest`)."""
    m = v.mapping(raw, where, required=("apiVersion", "kind", "metadata"))
    meta = v.mapping(m["metadata"], join(where, "metadata"), required=("name",))
    v.string(meta["name"], join(where, "metadata.name"))
    check_manifest(v, m, where, custom)
    return copy.deepcopy(m)


def merged(base: Mapping[str, Any], fragment: Mapping[str, Any]) -> dict[str, Any]:
    """``fragment`` over ``base``: mappings merge key by key, containers by name, other values replace.

    When the fragment names containers, the first one takes the place of ``base``'s first container (so
    the shorthand resources land in it unless the fragment sets its own)."""
    out = copy.deepcopy(dict(base))
    for key, value in fragment.items():
        have = out.get(key)
        if key in _BY_NAME and isinstance(value, list) and isinstance(have, list):
            out[key] = _merge_named(have, value, first_takes_over=key == "containers")
        elif isinstance(value, Mapping) and isinstance(have, Mapping):
            out[key] = merged(have, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_named(have: list[Any], given: list[Any], first_takes_over: bool) -> list[Any]:
    own = {c.get("name"): c for c in have if isinstance(c, Mapping)}
    out: list[Any] = []
    for i, c in enumerate(given):
        if not isinstance(c, Mapping):
            out.append(copy.deepcopy(c))
            continue
        base = own.get(c.get("name"))
        if base is None and i == 0 and first_takes_over and have and isinstance(have[0], Mapping):
            base = {k: x for k, x in have[0].items() if k != "name"}
        out.append(merged(base, c) if base is not None else copy.deepcopy(dict(c)))
    return out


def pod_fragment(v: Validator, raw: Any, where: str) -> dict[str, Any]:
    """A Pod manifest fragment (``metadata``, ``spec``); its name and namespace are the scenario's."""
    m = v.mapping(raw, where, allowed=("metadata", "spec"))
    meta = v.mapping(m.get("metadata") or {}, f"{where}.metadata")
    for key in ("name", "namespace", "generateName"):
        if key in meta:
            v.fail(f"{where}.metadata.{key}", "is the scenario's to set (the step's name; the run's namespace)")
    if "spec" in m and not isinstance(m["spec"], dict):
        v.fail(f"{where}.spec", f"must be a mapping, got {kind_of(m['spec'])}")
    return copy.deepcopy(m)


def describe(manifest: Mapping[str, Any]) -> str:
    """``PriorityClass/high`` for messages."""
    return f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
