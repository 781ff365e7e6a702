"""Older builds leave the cache: all but the current one and the one used last before it, never one used in
the last hour."""

from __future__ import annotations

import os
import time

from schedgate.runtime.prune import mark_used, prune_older


def test_all_but_the_current_and_the_last_used_go_unless_used_lately(tmp_path):
    hour = 3600
    ages = {"a": 5 * hour, "b": 2 * hour, "c": 3 * hour, "d": 60, "e": hour / 2, "cur": 10 * hour}
    for name, age in ages.items():
        folder = tmp_path / f"kubernetes-v1.37.2-{name}"
        folder.mkdir()
        mark_used(folder)
        os.utime(folder / ".used", (time.time() - age, time.time() - age))
    (tmp_path / "kubernetes-v1.36.3-old").mkdir()  # another version: not this pin's to prune
    os.utime(tmp_path / "kubernetes-v1.36.3-old", (0, 0))
    current = tmp_path / "kubernetes-v1.37.2-cur"
    removed = prune_older(tmp_path, "kubernetes-v1.37.2-", current)
    # d is the one used last (kept); e was used half an hour ago (spared); the current one stays whatever its age
    assert sorted(p.name for p in removed) == ["kubernetes-v1.37.2-a", "kubernetes-v1.37.2-b", "kubernetes-v1.37.2-c"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["kubernetes-v1.36.3-old", "kubernetes-v1.37.2-cur", "kubernetes-v1.37.2-d", "kubernetes-v1.37.2-e"]
