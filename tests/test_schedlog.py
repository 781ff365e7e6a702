"""A scheduler's log read as it grows: each call reads on from where the last stopped, and gives what a
whole read would."""

from __future__ import annotations

import os
from pathlib import Path

from schedgate.objects.schedlog import parse, read_logs

LOG = (Path(__file__).parent / "data" / "kube-scheduler-explain.log").read_text().splitlines(keepends=True)


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
