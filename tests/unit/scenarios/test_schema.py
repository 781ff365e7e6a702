"""The JSON Schemas editors check scenario and cluster files with: shipped as the loader generates them,
allowing exactly what the loader accepts (probed key by key here, not read from its messages), every
shipped file valid under them, and a misspelled step or field refused by both."""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from schedgate.cli import reference as cli_reference
from schedgate.cli.main import _schema
from schedgate.errors import DefinitionError
from schedgate.scenarios import reference, schema
from schedgate.scenarios.load import load_scenario
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.steps import STEPS
from schedgate.scenarios.template import TEMPLATE_FIELDS
from schedgate.spec.cluster import API_VERSION, load_definition, parse_definition
from schedgate.spec.cluster import NODE as NODE_SHAPE
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.validate import Validator, join

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted([*(ROOT / "e2e" / "scenarios").glob("*.scenario.yaml"),
                    *(ROOT / "e2e" / "conformance").glob("*.scenario.yaml")])
CLUSTERS = sorted((ROOT / "clusters").glob("*.yaml"))
Attempt = Callable[[Any], object]  # parses one body as the loader does; a problem raises DefinitionError
W = "steps[0]"
FILLER = "probe"     # a value for a required field: present, and wrong for nearly every field
POD = "probe-pod"    # the pod every probe's parser has created
_POOL: dict[str, Any] = {"name": "p", "count": 1, "capacity": {"cpu": "1", "memory": "1Gi", "pods": "1"}}
_CLUSTER: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Cluster", "name": "probe", "pools": [_POOL]}


def probe_parser() -> Parser:
    """A scenario's parser on a one-node cluster, with one pod (``POD``) created; it loads no files."""

    def no_files(path: Path) -> SchedulerConfig:
        raise DefinitionError(path, "", "a schema probe reads no files")

    p = Parser(path=Path("probe.scenario.yaml"), v=Validator("<schema probe>"),
               definition=parse_definition(_CLUSTER), load_config=no_files)
    p.create([POD], W)
    return p


def step_attempt(name: str) -> Attempt:
    return lambda body: STEPS[name](probe_parser(), body, f"{W}.{name}")


def outcome_attempt(name: str) -> Attempt:
    pods = {"pods": POD} if OUTCOMES[name].about_pods else {}
    return lambda body: STEPS["expect"](probe_parser(), {**pods, name: body}, f"{W}.expect")


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
    "requestPolicy": (lambda b: parse_definition({**_CLUSTER, "pools": [{**_POOL, "devices": [{
        "driver": "d", "count": 1, "allowMultipleAllocations": True, "capacity": {"memory": "8Gi"},
        "requestPolicy": {"memory": b}}]}]}), "pools[0].devices[0].requestPolicy.memory"),
}


def refused(name: str) -> tuple[str, ...]:
    """The keys a declared step takes only to refuse them (its class's REFUSED)."""
    return tuple(getattr(STEPS[name].__self__, "REFUSED", ()))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def scenario() -> dict[str, Any]:
    return schema.scenario_schema()


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    return schema.cluster_schema()


@pytest.fixture(scope="module")
def scenario_v(scenario) -> Draft202012Validator:
    return validator(scenario)


@pytest.fixture(scope="module")
def cluster_v(cluster) -> Draft202012Validator:
    return validator(cluster)


def validator(s: dict[str, Any]) -> Draft202012Validator:
    Draft202012Validator.check_schema(s)
    return Draft202012Validator(s)


def error(attempt: Attempt, body: Any) -> DefinitionError | None:
    try:
        attempt(body)
    except DefinitionError as e:
        return e
    return None


def accepted(attempt: Attempt, where: str, candidates: set[str]) -> set[str]:
    """The keys the loader takes at ``where``: those it does not refuse as unknown, each tried alone."""
    out = set()
    for key in candidates:
        e = error(attempt, {key: "probe"})
        if not (e is not None and e.field == join(where, key) and e.problem.startswith("unknown field")):
            out.add(key)
    return out


def _names(node: Any) -> set[str]:
    """Every field name a schema declares, at any depth."""
    if isinstance(node, list):
        return {n for x in node for n in _names(x)}
    if not isinstance(node, dict):
        return set()
    return set(node.get("properties") or {}) | {n for v in node.values() for n in _names(v)}


KNOWN = _names(schema.scenario_schema()) | _names(schema.cluster_schema()) | {f for n in STEPS for f in refused(n)}


def candidates(props: set[str]) -> set[str]:
    """The schema's fields, every field name the schemas know anywhere, and misspellings of them."""
    return props | KNOWN | {p + "x" for p in props} | {p[:-1] for p in props if len(p) > 1} | {"sleep", "Name"}


# -- (a) the shipped files ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(schema.FILES))
def test_the_shipped_schema_is_what_the_loader_generates_now(kind):
    shipped = schema.SCHEMAS / schema.FILES[kind]
    assert shipped.is_file(), f"{shipped} is missing: run `schedgate schema --write`"
    assert shipped.read_text(encoding="utf-8") == schema.render(kind), \
        f"{shipped.name} has drifted from the loader: run `schedgate schema --write` and commit the result"


def test_the_schemas_are_in_the_wheel():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "schedgate.schemas" in setuptools["packages"]
    assert setuptools["package-data"]["schedgate.schemas"] == ["*.json"]
    assert schema.SCHEMAS == ROOT / "schedgate" / "schemas"


def test_the_command_prints_writes_and_locates_them(tmp_path, monkeypatch):
    cli = [sys.executable, "-m", "schedgate", "schema"]
    printed = subprocess.run([*cli, "--kind", "cluster"], capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0 and json.loads(printed.stdout) == schema.cluster_schema(), printed.stderr
    where = subprocess.run([*cli, "--path"], capture_output=True, text=True, timeout=120)
    assert where.stdout.strip() == str(schema.SCHEMAS / "scenario.schema.json"), where.stderr
    monkeypatch.setattr(schema, "SCHEMAS", tmp_path)  # --write, into a copy of the package's folder
    monkeypatch.setattr(reference, "DOCS", tmp_path / "docs")  # and of the reference pages'
    assert _schema(argparse.Namespace(write=True, path=False, kind="scenario")) == 0
    for name in schema.FILES.values():
        assert (tmp_path / name).read_text() == (ROOT / "schedgate" / "schemas" / name).read_text()
    for name in [*reference.PAGES, *cli_reference.PAGES]:  # and the command line's pages beside them
        assert (tmp_path / "docs" / name).read_text() == (ROOT / "docs" / "reference" / name).read_text()


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_the_reference_pages_are_what_the_declarations_make_now(name):
    page = ROOT / "docs" / "reference" / name
    assert page.is_file(), f"{page} is missing: run `schedgate schema --write`"
    assert page.read_text(encoding="utf-8") == reference.render_page(name), \
        f"{page.name} has drifted from the declarations: run `schedgate schema --write` and commit the result"


# -- (b) schema and loader agree ------------------------------------------------------------------
def test_every_step_and_outcome_is_in_the_schema(scenario):
    steps = scenario["$defs"]["step"]
    assert set(steps["properties"]) == set(STEPS)
    assert steps["minProperties"] == steps["maxProperties"] == 1 and steps["additionalProperties"] is False
    expect = steps["properties"]["expect"]
    assert set(OUTCOMES) <= set(expect["properties"])
    assert [b["required"] for b in expect["oneOf"]] == [[o] for o in OUTCOMES]
    assert "Wait until every scheduler has seen every change" in steps["properties"]["sync"]["description"]


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_step_allows_exactly_what_the_loader_accepts(scenario, name):
    body = scenario["$defs"]["step"]["properties"][name]
    assert body["additionalProperties"] is False
    props, where, attempt = set(body["properties"]), f"{W}.{name}", step_attempt(name)
    assert accepted(attempt, where, candidates(props)) == props | set(refused(name))
    for key in refused(name):  # taken as a key, then refused with a pointer elsewhere
        e = error(attempt, {key: 1})
        assert e is not None and e.field.startswith(f"{where}") and "unknown field" not in e.problem
    required = body.get("required", [])
    for missing in required:  # left out of a body holding the others: missing, or the body refused as a whole
        e = error(attempt, {r: "probe" for r in required if r != missing})
        assert e is not None and ((e.field, e.problem) == (f"{where}.{missing}", "required field is missing")
                                  or e.field == where), (missing, e)
    assert (body["type"] == ["object", "null"]) == (error(attempt, {}) is None)


@pytest.mark.parametrize("name", list(OUTCOMES))
def test_each_outcome_body_allows_exactly_what_the_loader_accepts(scenario, name):
    body = scenario["$defs"]["step"]["properties"]["expect"]["properties"][name]
    # a mapping of named fields (a mapping keyed by the scenario's own names, as countsOn, has none)
    objects = [s for s in body.get("anyOf", [body]) if s.get("type") == "object" and "properties" in s]
    attempt = outcome_attempt(name)
    for s in objects:
        props = set(s["properties"])
        assert accepted(attempt, f"{W}.expect.{name}", candidates(props)) == props
    v = validator({"$defs": scenario["$defs"], "$ref": f"#/$defs/step/properties/expect/properties/{name}"})
    for value in (True, None, "p-1", ["p-1"], {}):  # each shape the loader takes is valid, and only those
        assert v.is_valid(value) == (error(attempt, value) is None), value


@pytest.mark.parametrize("context", sorted(NESTED))
def test_each_nested_mapping_allows_exactly_what_the_loader_accepts(scenario, context):
    attempt, where = NESTED[context]
    props = set(scenario["$defs"][context]["properties"])
    assert accepted(attempt, where, candidates(props)) == props


def _mappings(scenario: dict[str, Any]) -> dict[str, tuple[Attempt, str, dict[str, Any]]]:
    """Every declared mapping but expect's and the top levels': name -> (attempt, where, its schema)."""
    steps = scenario["$defs"]["step"]["properties"]
    expect = steps["expect"]["properties"]
    out = {f"step {n}": (step_attempt(n), f"{W}.{n}", b) for n, b in steps.items() if n != "expect"}
    out |= {f"outcome {n}": (outcome_attempt(n), f"{W}.expect.{n}", m) for n in OUTCOMES
            for m in expect[n].get("anyOf", [expect[n]]) if m.get("properties")}
    return out | {c: (a, w, scenario["$defs"][c]) for c, (a, w) in NESTED.items()}


def test_each_rule_over_several_fields_is_the_loaders(scenario):
    """A declared "one of these" (RULE, a Shape's rule) is what the loader refuses a body as a whole for: each
    alternative alone gets the body past it, none does not, and two do not where they exclude each other."""
    for name, (attempt, where, body) in _mappings(scenario).items():
        base = dict.fromkeys(body.get("required", ()), FILLER)

        def whole_refused(*more: str, attempt: Attempt = attempt, base: dict[str, Any] = base,
                          where: str = where) -> bool:
            e = error(attempt, {**base, **dict.fromkeys(more, FILLER)})
            return e is not None and e.field == where

        word = next((w for w in ("oneOf", "anyOf") if w in body), None)
        alternatives = [a["required"][0] for a in body.get(word, [])] if word else []
        assert whole_refused() == bool(alternatives), (name, "the loader has a rule the schema lacks, or not")
        for alt in alternatives:
            assert not whole_refused(alt), (name, alt)
        if word == "oneOf":
            assert whole_refused(*alternatives[:2]), (name, "exclusive in the schema, not in the loader")


def test_templates_nodes_and_clusters_are_the_loaders_field_lists(scenario, cluster):
    assert tuple(scenario["$defs"]["template"]["properties"]) == TEMPLATE_FIELDS
    assert tuple(cluster["$defs"]["node"]["properties"]) == NODE_SHAPE.allowed
    props = set(cluster["properties"])
    assert accepted(parse_definition, "", candidates(props)) == props
    assert scenario["$defs"]["cluster"]["properties"] == cluster["properties"]
    assert cluster["$defs"]["pool"]["properties"]["capacity"]["required"] == ["cpu", "memory", "pods"]


def test_every_field_has_a_type(scenario, cluster):
    """A field the loader gained but TYPES does not know comes out as {} (anything): that is a miss."""

    def untyped(node: Any, path: str) -> list[str]:
        if isinstance(node, list):
            return [u for i, x in enumerate(node) for u in untyped(x, f"{path}[{i}]")]
        if not isinstance(node, dict):
            return []
        out = [f"{path}.{k}" for k, v in node.get("properties", {}).items() if v == {}]
        return out + [u for k, v in node.items() for u in untyped(v, f"{path}.{k}")]

    assert untyped(scenario, "") + untyped(cluster, "") == []


# -- (c) every shipped file is valid --------------------------------------------------------------
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_scenario_file_is_valid(scenario_v, path):
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in scenario_v.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize("path", CLUSTERS, ids=lambda p: p.name)
def test_every_shipped_cluster_file_is_valid(cluster_v, path):
    errors = [e.message for e in cluster_v.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def test_there_are_files_to_check():
    assert len(SCENARIOS) >= 70 and CLUSTERS


# -- (d) a bad file fails both --------------------------------------------------------------------
NODE = {"name": "n1", "capacity": {"cpu": "4", "memory": "8Gi", "pods": 110}}
CLUSTER = {"apiVersion": API_VERSION, "kind": "Cluster", "name": "c", "nodes": [NODE]}
BASE = {"apiVersion": API_VERSION, "kind": "Scenario", "name": "t", "cluster": CLUSTER,
        "templates": {"small": {"cpu": 1}},
        "steps": [{"createPods": {"name": "a", "template": "small", "count": 2}},
                  {"expect": {"pods": "a-*", "scheduledOn": "n1", "distinctNodes": 1}}]}


def loads(tmp_path: Path, doc: dict[str, Any]) -> bool:
    p = tmp_path / "case.scenario.yaml"
    p.write_text(yaml.safe_dump(doc))
    try:
        load_scenario(p)
    except DefinitionError:
        return False
    return True


def changed(edit: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    edit(doc)
    return doc


GOOD_STEPS = [{"sync": None}, {"extender": {}}, {"wait": {"pods": "a-1", "until": "scheduled"}},
              {"startScheduler": {"config": "network-slots"}}, {"stopScheduler": {"profile": "x"}},
              {"setResources": {"nodes": "n1", "allocatable": {"cpu": "2"}}},
              {"expect": {"metric": {"scheduler": "x", "name": "m", "atLeast": 1}}},
              {"expect": {"pods": "a-1", "unschedulable": {"message": "too"}}},
              {"expect": {"pods": "a-2", "gone": True}}]


def test_a_good_file_is_valid_for_both(tmp_path, scenario_v):
    doc = changed(lambda d: d["steps"].extend(GOOD_STEPS))
    assert scenario_v.is_valid(doc) and loads(tmp_path, doc)


BAD = {
    "misspelled step": lambda d: d["steps"].append({"createPod": {"name": "b"}}),
    "misspelled step field": lambda d: d["steps"][0]["createPods"].update(cuont=2),
    "misspelled outcome": lambda d: d["steps"][1]["expect"].update(scheduleOn="n1"),
    "misspelled template field": lambda d: d["templates"]["small"].update(gpu=1),
    "misspelled top-level field": lambda d: d.update(step=[]),
    "misspelled node field": lambda d: d["cluster"]["nodes"][0].update(capacty={}),
    "misspelled outcome field": lambda d: d["steps"].append({"expect": {"pods": "a-1", "event": {"reasn": "x"}}}),
    "fixed sleep": lambda d: d["steps"].append({"wait": {"pods": "a-1", "until": "gone", "seconds": 3}}),
    "two outcomes": lambda d: d["steps"][1]["expect"].update(gone=True),
    "an extra without its outcome": lambda d: d["steps"].append({"expect": {"pods": "a-1", "gone": True,
                                                                            "never": "n1"}}),
    "pods on a metric": lambda d: d["steps"].append({"expect": {"pods": "a-1", "metric": {
        "scheduler": "x", "name": "m", "equals": 1}}}),
    "a metric without a bound": lambda d: d["steps"].append({"expect": {"metric": {"scheduler": "x", "name": "m"}}}),
    "start with both": lambda d: d["steps"].append({"startScheduler": {"profile": "x", "config": "network-slots"}}),
    "start with neither": lambda d: d["steps"].append({"startScheduler": None}),
    "stop a configuration": lambda d: d["steps"].append({"stopScheduler": {"config": "network-slots"}}),
    "apply nothing": lambda d: d["steps"].append({"apply": {}}),
    "set no resources": lambda d: d["steps"].append({"setResources": {"nodes": "n1"}}),
    "a step with two names": lambda d: d["steps"].append({"sync": None, "cordon": {"nodes": "n1"}}),
    "a cluster with no nodes": lambda d: d["cluster"].update(nodes=[]),
    "a missing required field": lambda d: d["steps"].append({"label": {"nodes": "n1", "key": "k"}}),
    "a number as a node set": lambda d: d["steps"].append({"cordon": {"nodes": 3}}),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_file_fails_the_schema_and_the_loader(tmp_path, scenario_v, case):
    doc = changed(BAD[case])
    assert not scenario_v.is_valid(doc), case
    assert not loads(tmp_path, doc), case


def test_a_misspelled_cluster_field_fails_the_cluster_schema_and_the_loader(tmp_path, cluster_v):
    path = tmp_path / "c.yaml"
    for doc in (CLUSTER, {**CLUSTER, "pools": [{"name": "p", "count": 1, "capacty": NODE["capacity"]}]}):
        path.write_text(yaml.safe_dump(doc))
        try:
            load_definition(path)
            loaded = True
        except DefinitionError:
            loaded = False
        assert cluster_v.is_valid(doc) == loaded == (doc is CLUSTER)
