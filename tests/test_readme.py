"""The README documents every field a scenario file or cluster definition takes (a new step, outcome or
field without its row fails here)."""

from __future__ import annotations

from pathlib import Path

import pytest

import schedgate.scenarios.load  # noqa: F401  (registers every step and outcome)
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.parse import TEMPLATE_FIELDS
from schedgate.scenarios.steps import STEPS
from schedgate.spec.cluster import NODE_FIELDS

README = (Path(__file__).parent.parent / "README.md").read_text()


@pytest.mark.parametrize("name", sorted({*STEPS, *OUTCOMES, *TEMPLATE_FIELDS, *NODE_FIELDS}))
def test_every_scenario_and_cluster_field_is_in_the_readme(name):
    # Named in the text (`name`) or in an example (name: ...).
    assert f"`{name}" in README or f" {name}:" in README, f"README.md does not document `{name}`"
