"""Which tests a black-box scheduler under test runs: those whose needs it meets; the rest skip, saying why."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from schedgate.spec.blackbox import CAPABILITIES
from schedgate.spec.schedconfig import SchedulerConfig

MARKER = "schedgate_requires"
MARKER_HELP = (f"{MARKER}(*capabilities): what a Python scenario needs of the scheduler under test beyond the "
               f"common ground ({', '.join(CAPABILITIES)}); without it a Python scenario is taken to need "
               "kube-scheduler and is skipped for a black box")


def skip_unmet(config: SchedulerConfig, needs: Mapping[str, str], what: str) -> None:
    """Skip the running test when ``config`` is a black box lacking one of ``needs`` (capability -> where)."""
    box = config.black_box
    if box is None:
        return
    lacking = box.lacks(needs)
    if lacking:
        cap, where = lacking[0]
        more = f" (and {', '.join(c for c, _ in lacking[1:])})" if len(lacking) > 1 else ""
        pytest.skip(f"schedgate: {what} needs {cap}{more}: it {CAPABILITIES[cap]} ({where}); the scheduler "
                    f"under test, {config.profile_names[0]}, is a black box ({box.source}) that does not provide it")


def marked_needs(item: pytest.Item) -> dict[str, str]:
    """A Python scenario's needs: its ``schedgate_requires`` marker's, or kube-scheduler itself without one."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return {"kube-scheduler": f"{item.nodeid} has no @pytest.mark.{MARKER}(...)"}
    unknown = [c for c in marker.args if c not in CAPABILITIES]
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER}: unknown capability {unknown[0]!r} "
                                f"(known: {', '.join(CAPABILITIES)})")
    return {c: f"@pytest.mark.{MARKER}" for c in marker.args}
