"""Custom resources in scenario files: an ``apply`` of a CustomResourceDefinition makes the kinds it serves ones
the later steps may apply, each checked against that CRD's schema before anything starts, as the API server
checks it with strict field validation; ``apply: {files: [...]}`` takes a CRD release's YAML files as they are."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from schedgate.errors import DefinitionError
from schedgate.scenarios.load import load_scenario
from schedgate.spec.crds import json_schema, top_level

ROOT = Path(__file__).resolve().parents[3]

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: podgroups.scheduling.example.com}
spec:
  group: scheduling.example.com
  scope: Namespaced
  names: {kind: PodGroup, plural: podgroups, singular: podgroup, listKind: PodGroupList}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [minMember]
              properties:
                minMember: {type: integer, minimum: 1}
                minResources:
                  type: object
                  additionalProperties: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
                scheduleTimeoutSeconds: {type: integer, nullable: true}
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"""

GROUP = "{apiVersion: scheduling.example.com/v1alpha1, kind: PodGroup, metadata: {name: g}, spec: SPEC}"


def scenario(tmp_path: Path, steps: str) -> Path:
    path = tmp_path / "crd.scenario.yaml"
    path.write_text(f"apiVersion: schedgate.io/v1alpha1\nkind: Scenario\nname: crd\n"
                    f"cluster: {ROOT}/clusters/inference.yaml\nsteps:\n{steps}")
    return path


def crd_inline() -> str:
    return "  - apply:\n      manifest:\n" + "".join(f"        {line}\n" for line in CRD.splitlines())


def refused(path: Path) -> DefinitionError:
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert len(str(e.value).splitlines()) == 1, str(e.value)
    return e.value


def test_a_kind_a_crd_applied_earlier_serves_is_applied_and_checked_against_its_schema(tmp_path):
    good = GROUP.replace("SPEC", "{minMember: 3, minResources: {cpu: 2, memory: 4Gi}, scheduleTimeoutSeconds: null}")
    s = load_scenario(scenario(tmp_path, crd_inline() + f"  - apply: {{manifest: {good}}}\n"))
    assert [st.action.objects[0]["kind"] for st in s.steps] == ["CustomResourceDefinition", "PodGroup"]

    unknown = GROUP.replace("SPEC", "{minMember: 3, minMembers: 4}")
    e = refused(scenario(tmp_path, crd_inline() + f"  - apply: {{manifest: {unknown}}}\n"))
    assert e.field == "steps[1].apply.manifest.spec" and "'minMembers' was unexpected" in e.problem, str(e)
    assert "(line " in e.problem

    for spec, field, problem in [("{minMember: 0}", "steps[1].apply.manifest.spec.minMember", "less than the minimum"),
                                 ("{}", "steps[1].apply.manifest.spec", "'minMember' is a required property"),
                                 ("{minMember: 1, minResources: {cpu: [2]}}",
                                  "steps[1].apply.manifest.spec.minResources.cpu", "")]:
        e = refused(scenario(tmp_path, crd_inline() + f"  - apply: {{manifest: {GROUP.replace('SPEC', spec)}}}\n"))
        assert e.field == field and problem in e.problem, str(e)


def test_a_custom_kind_before_its_crd_or_of_a_version_it_does_not_serve_is_one_line(tmp_path):
    group = GROUP.replace("SPEC", "{minMember: 1}")
    e = refused(scenario(tmp_path, f"  - apply: {{manifest: {group}}}\n" + crd_inline()))
    assert e.field == "steps[0].apply.manifest.kind", str(e)
    assert "'PodGroup' of apiVersion 'scheduling.example.com/v1alpha1' is not a kind Kubernetes" in e.problem
    assert "nor does a CustomResourceDefinition an earlier step applies" in e.problem, str(e)
    e = refused(scenario(tmp_path, crd_inline() + f"  - apply: {{manifest: {group.replace('v1alpha1', 'v1')}}}\n"))
    assert e.field == "steps[1].apply.manifest.kind" and "'scheduling.example.com/v1'" in e.problem, str(e)


def test_a_crd_the_api_server_would_refuse_names_its_field(tmp_path):
    e = refused(scenario(tmp_path, crd_inline().replace("name: podgroups.scheduling", "name: groups.scheduling")))
    assert e.field == "steps[0].apply.manifest.metadata.name", str(e)
    assert "'podgroups.scheduling.example.com'" in e.problem, str(e)
    e = refused(scenario(tmp_path, crd_inline().replace("served: true", "served: false")))
    assert e.field == "steps[0].apply.manifest.spec.versions" and "serves no version" in e.problem, str(e)
    e = refused(scenario(tmp_path, crd_inline().replace("scope: Namespaced", "scopes: Namespaced")))
    assert e.field == "steps[0].apply.manifest.spec", str(e)


def test_files_are_applied_document_by_document_and_a_problem_names_the_file_document_and_line(tmp_path):
    (tmp_path / "crds").mkdir()
    release = tmp_path / "crds" / "release.yaml"
    release.write_text(f"---\n{CRD}---\napiVersion: scheduling.example.com/v1alpha1\nkind: PodGroup\n"
                       "metadata: {name: g}\nspec: {minMember: 2}\n")
    s = load_scenario(scenario(tmp_path, "  - apply: {files: [crds/release.yaml]}\n"))
    assert [o["kind"] for o in s.steps[0].action.objects] == ["CustomResourceDefinition", "PodGroup"]

    release.write_text(release.read_text().replace("spec: {minMember: 2}", "spec: {minMember: 2, extra: 1}"))
    e = refused(scenario(tmp_path, "  - apply: {files: [crds/release.yaml]}\n"))
    assert e.path == f"{release} (document 2 of 2)" and e.field == "spec", str(e)
    assert "'extra' was unexpected" in e.problem and f"(line {CRD.count(chr(10)) + 6})" in e.problem, str(e)

    e = refused(scenario(tmp_path, "  - apply: {files: [crds/missing.yaml]}\n"))
    assert e.field == "steps[0].apply.files[0]" and "no file 'crds/missing.yaml'" in e.problem, str(e)
    e = refused(scenario(tmp_path, "  - apply: {files: [crds/release.yaml], manifests: []}\n"))
    assert e.field == "steps[0].apply" and "needs one of" in e.problem, str(e)


def test_a_structural_schemas_own_words_read_as_the_api_server_reads_them():
    def ok(schema: dict, value: object) -> bool:
        return jsonschema.Draft202012Validator(json_schema(schema)).is_valid(value)

    assert ok({"x-kubernetes-int-or-string": True}, 3) and ok({"x-kubernetes-int-or-string": True}, "3")
    assert not ok({"x-kubernetes-int-or-string": True}, [3])
    assert ok({"type": "string", "nullable": True}, None) and not ok({"type": "string"}, None)
    assert not ok({"type": "object", "properties": {"a": {}}}, {"b": 1})  # pruned: unknown under Strict
    assert ok({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, {"b": 1})
    assert ok({"type": "object", "additionalProperties": {"type": "integer"}}, {"b": 1})
    assert not ok({"type": "integer", "minimum": 1, "exclusiveMinimum": True}, 1)
    assert ok({"type": "integer", "minimum": 1, "exclusiveMinimum": True}, 2)
    embedded = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {}}}
    assert ok(embedded, {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}})
    whole = jsonschema.Draft202012Validator(top_level({"type": "object", "properties": {"spec": {}}}))
    assert whole.is_valid({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "spec": {}})
    assert not whole.is_valid({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "sepc": {}})


def test_an_object_outcome_names_an_applied_object_of_an_api_group_and_one_of_equals_and_matches(tmp_path):
    group = "  - apply: {manifest: " + GROUP.replace("SPEC", "{minMember: 1}") + "}\n"
    expects = ("  - expect: {object: {kind: PodGroup, name: g, field: status.phase, equals: Running}}\n"
               "  - expect: {object: {kind: PodGroup, name: g, field: status.conditions.0.type, matches: '^Sched'}}\n")
    ok = load_scenario(scenario(tmp_path, crd_inline() + group + expects))
    first = ok.steps[2].action.outcome
    assert (first.api_version, first.field, first.equals, first.has_equals) == (
        "scheduling.example.com/v1alpha1", "status.phase", "Running", True)
    for outcome, field, problem in [
        ("{kind: PodGroup, name: h, field: status.phase, equals: Running}", "steps[2].expect.object.name",
         "no earlier apply step made PodGroup/h"),
        ("{kind: PodGroup, name: g, field: status.phase}", "steps[2].expect.object",
         "needs exactly one of equals and matches"),
        ("{kind: PodGroup, name: g, field: status.phase, equals: a, matches: b}", "steps[2].expect.object",
         "needs exactly one of equals and matches"),
        ("{kind: PodGroup, name: g, field: 'status..phase', equals: a}", "steps[2].expect.object.field",
         "must be a dotted path"),
        ("{kind: PodGroup, name: g, field: status.phase, matches: '('}", "steps[2].expect.object.matches", ""),
    ]:
        e = refused(scenario(tmp_path, crd_inline() + group + f"  - expect: {{object: {outcome}}}\n"))
        assert e.field == field and problem in e.problem, str(e)
    core = "  - apply: {manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}}\n"
    e = refused(scenario(tmp_path, core + "  - expect: {object: {kind: ConfigMap, name: c, field: data.a, "
                                          "equals: b}}\n"))
    assert e.field == "steps[1].expect.object.kind" and "core API" in e.problem, str(e)


def test_a_field_is_read_by_its_dotted_path_through_maps_and_lists():
    from schedgate.scenarios.object_outcomes import field_of

    obj = {"status": {"phase": "Running", "conditions": [{"type": "Scheduled", "status": "True"}], "used": 0}}
    assert field_of(obj, "status.phase") == (True, "Running")
    assert field_of(obj, "status.conditions.0.type") == (True, "Scheduled")
    assert field_of(obj, "status.used") == (True, 0)
    assert field_of(obj, "status.conditions.1.type") == (False, None)
    assert field_of(obj, "status.missing") == (False, None)
    assert field_of(obj, "status.phase.deeper") == (False, None)
