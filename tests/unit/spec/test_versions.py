"""Version ranges and a scenario file's known bug (spec.versions): what holds where, and one line for each
mistake, naming the file, the field and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.scenarios.load import load_scenario
from schedgate.spec.validate import Validator
from schedgate.spec.versions import parse_version, read_range

ROOT = Path(__file__).resolve().parents[3]
BUG = ROOT / "e2e/bugs/k8s-140053-group-claim-prebind.scenario.yaml"
PINNED = ("v1.35.4", "v1.36.3", "v1.37.2")


@pytest.mark.parametrize("text, version, holds", [
    (">=1.37.0", "v1.37.2", True), (">=1.37.0", "v1.36.3", False), (">=1.35.0 <1.37.0", "v1.36.3", True),
    (">=1.35.0 <1.37.0", "v1.37.0", False), ("==1.36.2", "1.36.2", True), ("<=1.36", "v1.36.1", False),
    (">1.36", "v1.36.1", True), (">=1.35", "not a version", False),
    *((">=1.35.0 <1.35.6 || >=1.36.0 <1.36.2", v, v in ("v1.35.4", "v1.36.1"))
      for v in ("v1.35.4", "v1.35.6", "v1.36.1", "v1.36.3", "v1.37.2")),
])
def test_a_range_holds_where_every_comparator_does(text, version, holds):
    assert read_range(Validator("f.yaml"), text, "knownBug.affects").holds(version) is holds


def test_versions_read_with_or_without_v_and_patch():
    assert parse_version("v1.37.2") == (1, 37, 2) and parse_version("1.36") == (1, 36, 0)
    assert parse_version("kubernetes") is None


def test_the_gallery_file_names_its_issue_and_where_it_shows():
    bug = load_scenario(BUG).known_bug
    assert bug is not None and bug.issue == "kubernetes/kubernetes#140053"
    assert bug.affects.holds("v1.37.2") and not bug.affects.holds("v1.36.3")
    assert "fixed here?" in bug.reason("v1.37.2")


def test_a_bug_found_here_is_unreported_and_a_race_is_expected_to_fail_not_always():
    bug = load_scenario(ROOT / "e2e/bugs/unreported-lost-bind-answer-overcommits.scenario.yaml").known_bug
    assert bug is not None and bug.issue == "unreported" and bug.race
    assert bug.name == "(not reported upstream yet)" and all(bug.affects.holds(v) for v in PINNED)
    assert "a race: it may not show on one run" in bug.reason("v1.37.2")
    assert "fixed here?" not in bug.reason("v1.37.2")


@pytest.mark.parametrize("old, new, problem", [
    ('affects: ">=1.37.0"', 'affects: "1.37+"',
     "knownBug.affects: '1.37+' is not a version comparator (>=, >, <=, < or == and a version such as 1.36 or "
     "1.36.2): e.g. '>=1.35.0 <1.37.0' (line 16)"),
    ("issue: kubernetes/kubernetes#140053", "issue: kubernetes#140053",
     "knownBug.issue: must name an upstream issue as owner/repo#number (kubernetes/kubernetes#140053) or be "
     "unreported, got 'kubernetes#140053' (line 15)"),
    ("failsWith: got allocated elsewhere in the meantime", "failsWith: x\n  race: sometimes",
     "knownBug.race: must be true or false, got 'sometimes' (line 18)"),
    ("failsWith: got allocated elsewhere in the meantime", "failsWith: '(unclosed'",
     "knownBug.failsWith: not a regular expression RE2 accepts (no backreferences or lookaround; matched in time "
     "linear in the text): missing ): (unclosed (line 17)"),
    ("failsWith: got allocated elsewhere in the meantime", "failsWith: '(a)\\1'",
     "knownBug.failsWith: not a regular expression RE2 accepts (no backreferences or lookaround; matched in time "
     "linear in the text): invalid escape sequence: \\1 (line 17)"),
    ('affects: ">=1.37.0"', 'affects: ">=9.0.0"',
     "knownBug.affects: '>=9.0.0' holds for no release of a minor schedgate builds (1.35, 1.36, 1.37) (line 16)"),
    ('affects: ">=1.37.0"', 'affects: ">=1.37.0 <1.36.0"', "'>=1.37.0 <1.36.0' holds for no release"),
    ('affects: ">=1.37.0"', 'affects: ">=1.35.0 <1.35.6 ||"',
     "knownBug.affects: has an empty alternative: give comparators on each side of '||' (line 16)"),
    ("failsWith: got allocated elsewhere in the meantime", "says: got allocated",
     "knownBug.says: unknown field (allowed: issue, affects, failsWith, race) (line 17)"),
])
def test_a_known_bug_written_wrong_is_one_line(tmp_path, old, new, problem):
    text = BUG.read_text().replace("../../clusters/", f"{ROOT}/clusters/")
    assert old in text
    path = tmp_path / "b.scenario.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert problem in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_requires_names_kubernetes_versions_and_a_version_outside_skips_naming_both():
    from schedgate.spec.features import skip_reason
    needs = {"kubernetes>=1.37": "requires[0]"}
    assert skip_reason(needs, "v1.37.2", "f.yaml") is None
    assert skip_reason(needs, "v1.36.3", "f.yaml") == (
        "schedgate: f.yaml needs Kubernetes >=1.37 (requires[0]); this cluster's is v1.36.3")
    assert skip_reason({"kubernetes >=1.35 <1.37": "requires[1]"}, "v1.37.2", "f.yaml").endswith(
        "needs Kubernetes >=1.35 <1.37 (requires[1]); this cluster's is v1.37.2")


@pytest.mark.parametrize("entry, problem", [
    ("kubernetes>=1.37", None),
    ("kubernetes=1.37", "requires[0]: Kubernetes versions: '=1.37' is not a version comparator"),
    ("kubernetes", "requires[0]: Kubernetes versions: is empty"),
])
def test_a_kubernetes_version_in_requires_is_checked_when_the_file_loads(tmp_path, entry, problem):
    text = BUG.read_text().replace("../../clusters/", f"{ROOT}/clusters/").replace(
        "requires: [GenericWorkload, DRAWorkloadResourceClaims]",
        f"requires: ['{entry}', GenericWorkload, DRAWorkloadResourceClaims]")
    path = tmp_path / "b.scenario.yaml"
    path.write_text(text)
    if problem is None:
        assert load_scenario(path).needs[entry] == "requires[0]"
        return
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert problem in str(e.value) and len(str(e.value).splitlines()) == 1


def test_a_feature_the_definition_turns_on_is_not_off_by_default_on_an_older_minor():
    from schedgate.spec.features import skip_reason
    needs = {"DRAPartitionableDevices": "nodes[0].devices[0].counters"}
    assert "has it off by default (on from 1.36)" in skip_reason(needs, "v1.35.4", "f.yaml")
    assert skip_reason(needs, "v1.35.4", "f.yaml", on={"DRAPartitionableDevices"}) is None


def test_a_catastrophic_pattern_is_matched_in_linear_time():
    """``(a+)+$`` against 30 ``a`` and a ``b``: Python's re takes minutes; a file's pattern is matched by RE2."""
    import time

    from schedgate.spec.pattern import compiled, search

    started = time.monotonic()
    assert not search(r"(a+)+$", "a" * 5000 + "b")
    assert compiled(r"(a+)+$").fullmatch("a" * 5000) is not None
    assert time.monotonic() - started < 1.0
    assert compiled(r"(?<=x)y").search("xy") is not None  # a Python scenario's own lookbehind: re matches it
