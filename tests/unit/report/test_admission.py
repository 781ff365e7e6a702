"""Claim allocation and gang admission figures: from the scheduler's own log lines and the pods' timings."""

from __future__ import annotations

import pytest
from support import DATA

from schedgate.objects.groups import group_of
from schedgate.objects.schedlog import parse, since
from schedgate.report.admission import admission, claim_allocations, gang_admissions
from schedgate.report.timing import PodTiming

LOG = (DATA / "kube-scheduler-claims.log").read_text()


def timing(pod: str, born: float | None = 100.0, bound_at: float | None = None, group: tuple[str, int] | None = None,
           claims: bool = False) -> PodTiming:
    return PodTiming(pod=pod, scheduler="s", node="n" if bound_at else "", create_to_scheduled=None,
                     scheduled_to_ready=None, attempts=1, state="bound" if bound_at else "pending: Unschedulable",
                     born=born, bound_at=bound_at, group=group, has_claims=claims)


def test_the_claim_written_in_prebind_is_read_from_its_multi_line_log_entry():
    (attempt,) = parse(LOG.splitlines())["t/first"].attempts
    assert attempt.bound_to == "a"
    assert attempt.started == pytest.approx(59 * 60 + 48.331923)
    assert attempt.claims_written == pytest.approx(59 * 60 + 48.357298)
    logs = parse(LOG.splitlines())
    (lat,) = claim_allocations("t", [timing("first", bound_at=101.0, claims=True)], logs)
    assert lat == pytest.approx(0.025375)


def test_no_figure_without_the_prebind_line_or_for_a_pod_without_claims():
    logs = parse(LOG.splitlines())
    assert claim_allocations("t", [timing("first", bound_at=101.0)], logs) == []  # no claims
    assert claim_allocations("t", [timing("first", claims=True)], logs) == []  # not bound
    cut = parse([line for line in LOG.splitlines() if '"reserved"' not in line])
    assert claim_allocations("t", [timing("first", bound_at=101.0, claims=True)], cut) == []


def test_a_time_of_day_across_midnight():
    assert since(86399.5, 0.25) == pytest.approx(0.75)


def test_a_group_counts_once_all_its_members_are_bound_from_first_created_to_last_bound():
    whole = [timing(f"a-{i}", born=10.0 + i, bound_at=20.0 + i, group=("a", 3)) for i in range(3)]
    assert gang_admissions(whole) == [pytest.approx(12.0)]
    short = [timing("b-0", bound_at=30.0, group=("b", 2)), timing("b-1", group=("b", 2))]
    assert gang_admissions(short) == []
    below_min = [timing("c-0", bound_at=30.0, group=("c", 2))]
    assert gang_admissions(below_min) == []


def test_a_test_without_claims_or_gangs_has_no_row():
    assert admission({"t": [timing("p", bound_at=101.0)]}, {}) is None
    row = admission({"t": [timing("first", bound_at=101.0, claims=True)]}, parse(LOG.splitlines()))
    assert row is not None and row.row() == ("1", "0.025", "0.025", "0", "-", "-")


def test_a_pod_of_a_native_podgroup_is_a_gang_member_too():
    assert group_of({"spec": {"schedulingGroup": {"podGroupName": "train"}}}) == ("PodGroup/train", 0)
    assert group_of({"metadata": {"labels": {"schedgate.io/gang": "g", "schedgate.io/gang-min": "4"}}}) == ("g", 4)
    assert group_of({"spec": {}}) is None
    native = [timing(f"t-{i}", born=10.0 + i, bound_at=15.0, group=("PodGroup/train", 0)) for i in range(2)]
    assert gang_admissions(native) == [pytest.approx(5.0)]
