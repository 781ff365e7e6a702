"""attempts.since: counting a pod's scheduling cycles from an earlier step's start — read from the file, a
later or the same step refused in one line, and the cycles counted from the step's time of day."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedgate.errors import DefinitionError
from schedgate.objects.schedlog import parse
from schedgate.scenarios.load import load_scenario
from schedgate.scenarios.log_outcomes import cycles_since

ROOT = Path(__file__).resolve().parents[3]
FILE = ROOT / "e2e/scenarios/queue-requeue-by-event.scenario.yaml"


def load(tmp_path: Path, text: str):
    path = tmp_path / "q.scenario.yaml"
    path.write_text(text.replace("../../clusters/", f"{ROOT}/clusters/"))
    return load_scenario(path)


def test_the_shipped_file_counts_from_the_gpu_change(tmp_path):
    outcome = load(tmp_path, FILE.read_text()).steps[8].action.outcome
    assert outcome.since == 5 and outcome.bounds == (("equals", 1),)


@pytest.mark.parametrize("since", [8, 9])
def test_since_must_name_an_earlier_step(tmp_path, since):
    with pytest.raises(DefinitionError) as e:
        load(tmp_path, FILE.read_text().replace("since: 5}", f"since: {since}}}"))
    assert str(e.value).count("\n") == 0
    assert f"steps[8].expect.attempts.since: must name an earlier step than this one (steps[8]), got {since}" \
        in str(e.value)


def test_cycles_begun_after_the_step_are_counted_across_midnight():
    lines = ['I1205 23:59:59.500000 1 schedule_one.go:117] "Attempting to schedule pod" pod="t/p"',
             'I1206 00:00:00.200000 1 schedule_one.go:117] "Attempting to schedule pod" pod="t/p"']
    attempts = parse(lines)["t/p"].attempts
    assert cycles_since(attempts, 23 * 3600 + 59 * 60 + 59.9) == 1  # the step began between the two
    assert cycles_since(attempts, 23 * 3600 + 59 * 60 + 59.0) == 2
    assert cycles_since(attempts, 0.5) == 0
