"""A scheduler's log read as it grows: each call reads on from where the last stopped, and gives what a
whole read would."""

from __future__ import annotations

import os

from support import DATA

from schedgate.objects.schedlog import parse, read_logs

LOG = (DATA / "kube-scheduler-explain.log").read_text().splitlines(keepends=True)


def as_dict(pods):
    return {k: (v.cycles, [(a.bound_to, a.failure, a.scores, a.totals, a.rejecting) for a in v.attempts])
            for k, v in pods.items()}


def test_a_growing_log_read_in_parts_gives_what_one_whole_read_gives(tmp_path):
    log = tmp_path / "kube-scheduler.log"
    whole = as_dict(parse(LOG))
    assert whole, "the sample log names pods"
    text = "".join(LOG)
    seen = []
    with log.open("w") as f:
        for cut in (len(text) // 3, len(text) // 3 + 7, 2 * len(text) // 3, len(text)):  # cuts mid-line too
            f.write(text[f.tell():cut])
            f.flush()
            seen.append(as_dict(read_logs([log])))
    assert seen[-1] == whole
    assert seen[0] != whole  # the first part did not yet have it all


def test_a_log_replaced_or_cut_is_read_again_from_its_start(tmp_path):
    log = tmp_path / "kube-scheduler.log"
    log.write_text("".join(LOG))
    assert as_dict(read_logs([log])) == as_dict(parse(LOG))
    first_pod = next(iter(parse(LOG)))
    ns = first_pod.split("/")[0]
    assert set(read_logs([log], namespaces={ns})) == {p for p in parse(LOG) if p.startswith(ns + "/")}
    assert read_logs([log], namespaces={"no-such-namespace"}) == {}
    half = LOG[: len(LOG) // 2]
    replaced = tmp_path / "new.log"
    replaced.write_text("".join(half))
    os.replace(replaced, log)  # another file at the same path
    assert as_dict(read_logs([log])) == as_dict(parse(half))
    log.write_text("")  # cut
    assert read_logs([log]) == {}


def test_queue_moves_are_read_by_pod_with_their_event_and_queue():
    lines = [
        'I1204 16:01:02.000001   77 active_queue.go:414] "Entity moved to an internal scheduling queue" type="pod" '
        'entity="ns-1/too-big" event="PodAdd" queue="Active"\n',
        'I1204 16:01:02.100001   77 schedule_one.go:117] "Attempting to schedule pod" pod="ns-1/too-big"\n',
        'I1204 16:01:09.000001   77 active_queue.go:414] "Entity moved to an internal scheduling queue" type="Pod" '
        'entity="ns-1/too-big" event="NodeUpdateNodeAllocatable" queue="Active"\n',
        'I1204 16:01:09.000002   77 backoff_queue.go:324] "Entity moved to an internal scheduling queue" '
        'type="podgroup" entity="ns-1/group" event="PodAdd" queue="Backoff"\n',
    ]
    pods = parse(lines)
    assert set(pods) == {"ns-1/too-big"}  # a pod group's move is not a pod's
    assert pods["ns-1/too-big"].moves == [("PodAdd", "Active"), ("NodeUpdateNodeAllocatable", "Active")]
    assert pods["ns-1/too-big"].cycles == 1


def test_queue_moves_come_through_a_followed_read(tmp_path):
    log = tmp_path / "kube-scheduler.log"
    log.write_text('I1204 16:01:09.000001   77 active_queue.go:414] "Entity moved to an internal scheduling queue" '
                   'type="pod" entity="ns-2/p" event="NodeUpdateNodeAllocatable" queue="Active"\n')
    assert read_logs([log], namespaces={"ns-2"})["ns-2/p"].moves == [("NodeUpdateNodeAllocatable", "Active")]


def test_a_pod_group_cycle_starts_an_attempt_for_each_member_with_the_claim_it_wrote():
    """A PodGroup's members are tried in their group's cycle, which logs no "Attempting to schedule pod"
    (v1.37.2): each member's attempt starts at its group's cycle, and a retry on its own is one more."""
    g = 'podGroupType="podgroup" podGroup="ns-1/a"'
    lines = [
        'I1205 04:11:24.900000   77 schedule_one_podgroup.go:126] "Attempting to schedule pod group" '
        'podGroupType="podgroup" podGroup="ns-1/a"\n',
        f'I1205 04:11:24.971081   77 schedule_one.go:984] "Plugin scored node for pod" {g} pod="ns-1/a-1" '
        'plugin="VolumeBinding" node="n-1" score=0\n',
        f'I1205 04:11:25.050000   77 dynamicresources.go:1964] "reserved" logger="PreBind.DynamicResources" {g} '
        'pod="ns-1/a-1" node="n-1" resourceclaim="ns-1/a-domain-x"\n',
        f'I1205 04:11:25.073377   77 schedule_one.go:483] "Successfully bound pod to node" {g} pod="ns-1/a-1" '
        'node="n-1" evaluatedNodes=3 feasibleNodes=2\n',
        f'E1205 04:11:25.074040   77 schedule_one.go:1198] "Error scheduling pod; retrying" err="running PreBind '
        f'plugin \\"DynamicResources\\": claim ns-1/a-domain-x got allocated elsewhere in the meantime" {g} '
        'pod="ns-1/a-2"\n',
        f'I1205 04:11:25.090000   77 schedule_one.go:117] "Attempting to schedule pod" {g} pod="ns-1/a-2"\n',
        f'I1205 04:11:25.100187   77 schedule_one.go:483] "Successfully bound pod to node" {g} pod="ns-1/a-2" '
        'node="n-1" evaluatedNodes=1 feasibleNodes=1\n',
    ]
    pods = parse(lines)
    first, = pods["ns-1/a-1"].attempts
    assert (first.started, first.claims_written, first.bound_to) == (4 * 3600 + 11 * 60 + 24.9,
                                                                      4 * 3600 + 11 * 60 + 25.05, "n-1")
    failed, retried = pods["ns-1/a-2"].attempts
    assert failed.started == first.started and failed.error and "allocated elsewhere" in failed.failure
    assert (retried.bound_to, pods["ns-1/a-2"].cycles) == ("n-1", 2)


def test_a_members_bind_logged_after_its_groups_next_cycle_began_stays_in_its_own_cycle():
    """The binding cycles run beside the scheduling cycles: a-2's PreBind failed and its group's next cycle
    began before a-1's bind was logged (CI, 2026-12-05). a-1 had one cycle, a-2 two: its bind, the first line
    it logs in the newer cycle, ends an attempt of its own (its attempt before had ended in the error)."""
    g = 'podGroupType="podgroup" podGroup="ns-1/a"'
    cycle = ('I1205 20:41:55.{}   77 schedule_one_podgroup.go:126] "Attempting to schedule pod group" '
             'podGroupType="podgroup" podGroup="ns-1/a"\n')
    lines = [
        cycle.format("480000"),
        f'I1205 20:41:55.485000   77 schedule_one.go:984] "Plugin scored node for pod" {g} pod="ns-1/a-1" '
        'plugin="VolumeBinding" node="n-1" score=0\n',
        f'I1205 20:41:55.486000   77 schedule_one.go:984] "Plugin scored node for pod" {g} pod="ns-1/a-2" '
        'plugin="VolumeBinding" node="n-1" score=0\n',
        f'E1205 20:41:55.491000   77 schedule_one.go:1198] "Error scheduling pod; retrying" err="running PreBind '
        f'plugin \\"DynamicResources\\": claim ns-1/a-x got allocated elsewhere in the meantime" {g} pod="ns-1/a-2"\n',
        cycle.format("492000"),
        f'I1205 20:41:55.493000   77 dynamicresources.go:1964] "reserved" logger="PreBind.DynamicResources" {g} '
        'pod="ns-1/a-1" node="n-1" resourceclaim="ns-1/a-x"\n',
        f'I1205 20:41:55.494000   77 schedule_one.go:483] "Successfully bound pod to node" {g} pod="ns-1/a-1" '
        'node="n-1" evaluatedNodes=2 feasibleNodes=1\n',
        f'I1205 20:41:55.505000   77 schedule_one.go:483] "Successfully bound pod to node" {g} pod="ns-1/a-2" '
        'node="n-1" evaluatedNodes=1 feasibleNodes=1\n',
    ]
    pods = parse(lines)
    only, = pods["ns-1/a-1"].attempts
    assert (pods["ns-1/a-1"].cycles, only.bound_to, only.claims_written) == (1, "n-1", 20 * 3600 + 41 * 60 + 55.493)
    failed, retried = pods["ns-1/a-2"].attempts
    assert failed.error and (retried.bound_to, pods["ns-1/a-2"].cycles) == ("n-1", 2)
