"""The README documents every step, outcome and node field a scenario file or cluster definition takes (a
new one without its row fails here); the pod fields' reference is made from their declarations
(docs/reference/pod-fields.md, tests/test_schema.py), and the README points to it."""

from __future__ import annotations

from pathlib import Path

import pytest

import schedgate.scenarios.load  # noqa: F401  (registers every step and outcome)
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.steps import STEPS
from schedgate.spec.cluster import NODE_FIELDS

README = (Path(__file__).parent.parent / "README.md").read_text()


@pytest.mark.parametrize("name", sorted({*STEPS, *OUTCOMES, *NODE_FIELDS}))
def test_every_scenario_and_cluster_field_is_in_the_readme(name):
    # Named in the text (`name`) or in an example (name: ...).
    assert f"`{name}" in README or f" {name}:" in README, f"README.md does not document `{name}`"


def test_the_readme_points_to_the_pod_fields_reference():
    assert "docs/reference/pod-fields.md" in README
