"""How long each test took on each provider, kept beside the suite, so that ``pytest -n N`` hands out the
longest work first.

xdist gives a worker its next unit of work when it is nearly out of tests. Handed out in collection order,
the longest files (the performance files, each with the machine to itself, and the 1,000-node fleet) came
last, and one worker ran them while the other had nothing left to do. With a record of past durations,
schedgate's distribution (:mod:`schedgate.pytest_plugin.distribute`) hands out the longest units first
(longest processing time first). A test the record does not know counts as the mean of those it does; a
provider the record does not know uses the local provider's figures.

The record is ``.schedgate-durations.json`` in the rootdir (``--durations-file`` names another): for each
provider, each test id's seconds (setup, call and teardown). ``--record-durations`` writes this run's
figures into it, keeping those of tests the run did not run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

FILE = ".schedgate-durations.json"
_RECORDER = "schedgate-durations"


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("schedgate")
    g.addoption("--durations-file", metavar="FILE", default=None,
                help=f"past durations per provider and test, read so that pytest -n hands out the longest work "
                     f"first (default: {FILE} in the rootdir)")
    g.addoption("--record-durations", action="store_true", default=False,
                help="write this run's durations into --durations-file (tests it did not run keep theirs)")


def path_of(config: pytest.Config) -> Path:
    named = config.getoption("durations_file", None)
    return Path(named) if named else Path(config.rootpath) / FILE


def provider_of(config: pytest.Config) -> str:
    return str(config.getoption("provider", None) or "local")


def read(path: Path) -> dict[str, dict[str, float]]:
    """The record, or nothing when there is none; a record that is not one is named in one line."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"schedgate: {path}: not a durations record ({e})") from None
    if not isinstance(data, dict) or not all(
            isinstance(v, dict) and all(isinstance(s, (int, float)) for s in v.values()) for v in data.values()):
        raise pytest.UsageError(f"schedgate: {path}: not a durations record (provider -> test id -> seconds)")
    return {p: {t: float(s) for t, s in v.items()} for p, v in data.items()}


def table(config: pytest.Config) -> dict[str, float]:
    record = read(path_of(config))
    return record.get(provider_of(config)) or record.get("local") or {}


def weigher(known: dict[str, float]) -> Any:
    """A unit of test ids' expected seconds: the sum of their recorded ones, the mean for an unknown test."""
    mean = sum(known.values()) / len(known) if known else 1.0

    def weigh(test_ids: Iterable[str]) -> float:
        return sum(known.get(t, mean) for t in test_ids)
    return weigh


def longest_first(units: dict[str, Any], weigh: Any, ahead: Any = lambda ids: False) -> list[tuple[str, Any]]:
    """``units`` (scope -> its tests) ordered by expected seconds, longest first, those ``ahead`` says so of
    before all others; equal ones keep their order."""
    return sorted(units.items(), key=lambda kv: (not ahead(kv[1]), -weigh(kv[1])))


class Recorder:
    """Sums each test's reported durations where reports arrive (xdist's controller, or the only process)
    and writes them into the record at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.seconds:
            return
        path = path_of(self.config)
        record = read(path)
        mine = record.setdefault(provider_of(self.config), {})
        mine.update({t: round(s, 1) for t, s in self.seconds.items()})
        record = {p: dict(sorted(v.items())) for p, v in sorted(record.items())}
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(path)


def register(config: pytest.Config) -> None:
    """Where the reports arrive (not on an xdist worker): the record is read once, so a broken one stops the run
    before anything starts; this run's durations are recorded when asked."""
    if hasattr(config, "workerinput"):
        return
    table(config)
    if config.getoption("record_durations", False) and config.pluginmanager.get_plugin(_RECORDER) is None:
        config.pluginmanager.register(Recorder(config), _RECORDER)
