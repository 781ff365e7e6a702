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
