"""Kubernetes version ranges, and a scenario file's known bug: the upstream issue, the versions it affects
and the failure it causes there.

::

    knownBug:
      issue: kubernetes/kubernetes#140053
      affects: ">=1.37.0"               # comparators, all of which hold: >=, >, <=, <, ==; 1.37 is 1.37.0;
                                        # alternatives joined by ||: ">=1.35.0 <1.35.6 || >=1.36.0 <1.36.2"
      failsWith: "result=error"         # a regular expression the failure's message matches

On an affected version the file is expected to fail with that message (pytest's xfail, strict): a pass
there is reported as a failure that asks whether the bug is fixed, and a failure for another reason stays
a failure. On any other version the file must pass. A bug marked ``race: true`` shows on most runs of an
affected version, not all: a pass there is reported (xpass), not failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from schedgate.spec.jsontypes import BOOL, STR
from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import Validator

_COMPARATOR = re.compile(r"^(>=|<=|==|>|<)v?(\d+)\.(\d+)(?:\.(\d+))?$")
UNREPORTED = "unreported"  # a bug found here and not reported upstream yet: the file is the report to attach
_ISSUE = re.compile(rf"^([A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*#\d+|{UNREPORTED})$")
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
_CMPS = r"((>=|<=|==|>|<)v?\d+\.\d+(\.\d+)? *)+"  # a range's comparators, for the JSON Schema
RANGE_PATTERN = rf"{_CMPS}( *\|\| *{_CMPS})*"  # comparators, alternatives joined by ||

Version = tuple[int, int, int]


def parse_version(text: str) -> Version | None:
    """``v1.37.2``, ``1.37`` (patch 0) -> (1, 37, 2); None for what is not a version."""
    m = _VERSION.match(text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


@dataclass(frozen=True)
class VersionRange:
    """Alternatives (``||``), each comparators that all hold: ``>=1.35.0 <1.35.6 || >=1.36.0 <1.36.2``."""

    text: str
    alternatives: tuple[tuple[tuple[str, Version], ...], ...]

    def holds(self, version: str) -> bool:
        got = parse_version(version)
        if got is None:
            return False
        tests = {">=": got.__ge__, "<=": got.__le__, ">": got.__gt__, "<": got.__lt__, "==": got.__eq__}
        return any(all(tests[op](want) for op, want in each) for each in self.alternatives)

    def holds_in(self, minors: Iterable[str], patches: int = 100) -> bool:
        """It holds for some release of these minors (``1.37``), patch 0 up to ``patches``: a range no such
        release falls in (``>=9.0.0``, ``>=1.37.0 <1.36.0``) names nothing schedgate can run."""
        return any(self.holds(f"{minor}.{patch}") for minor in minors for patch in range(patches))


def parse_range(text: str) -> VersionRange:
    """``>=1.35.0 <1.37.0``, alternatives joined by ``||``; a ValueError saying what is wrong otherwise."""
    alternatives = []
    for alternative in text.split("||"):
        comparators = []
        for part in alternative.split():
            m = _COMPARATOR.match(part)
            if not m:
                raise ValueError(f"{part!r} is not a version comparator (>=, >, <=, < or == and a version such as "
                                 "1.36 or 1.36.2): e.g. '>=1.35.0 <1.37.0'")
            comparators.append((m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))))
        if not comparators:
            raise ValueError("is empty: give comparators such as '>=1.35.0 <1.37.0'" if "||" not in text else
                             "has an empty alternative: give comparators on each side of '||'")
        alternatives.append(tuple(comparators))
    return VersionRange(text.strip(), tuple(alternatives))


def read_range(v: Validator, raw: Any, where: str) -> VersionRange:
    text = v.string(raw, where)
    try:
        return parse_range(text)
    except ValueError as e:
        v.fail(where, str(e))


KUBERNETES = "kubernetes"  # a requires: entry naming versions: kubernetes>=1.37, "kubernetes >=1.35 <1.37"


def version_need(entry: str) -> VersionRange | None:
    """The range of a ``requires:`` entry that names Kubernetes versions, None for any other entry; a
    ValueError for one that starts so but is no range."""
    if not entry.startswith(KUBERNETES):
        return None
    return parse_range(entry[len(KUBERNETES):])


@dataclass(frozen=True)
class KnownBug:
    issue: str
    affects: VersionRange
    fails_with: str
    race: bool = False  # it shows on an affected version most times, not every time: a pass there is no failure

    @property
    def name(self) -> str:
        return "(not reported upstream yet)" if self.issue == UNREPORTED else self.issue

    def reason(self, version: str) -> str:
        return (f"known bug {self.name} on Kubernetes {version} (affects {self.affects.text}): expected to fail "
                f"with /{self.fails_with}/; " + ("a race: it may not show on one run" if self.race else
                                                  "a pass here means it is fixed here?"))


KNOWN_BUG = Shape("knownBug", "an upstream bug the file shows on some versions: there it must fail so (xfail, "
                              "strict)", (
    Key("issue", f"owner/repo#number (kubernetes/kubernetes#140053), or {UNREPORTED}: found here, the file is "
                 "the report", {**STR, "pattern": _ISSUE.pattern}, required=True),
    Key("affects", "the versions it affects: comparators, all of which hold ('>=1.35.0 <1.37.0'), alternatives "
                   "joined by '||'", STR, required=True),
    Key("failsWith", "a regular expression the failure's message matches there", STR, required=True),
    Key("race", "true: the failure is a race that shows on most runs of an affected version, not all; a pass "
                "there is reported (xpass), not failed", BOOL),
))


def read_known_bug(v: Validator, raw: Any, where: str = "knownBug") -> KnownBug:
    m = KNOWN_BUG.read(v, raw, where)
    issue = v.string(m["issue"], f"{where}.issue")
    if not _ISSUE.match(issue):
        v.fail(f"{where}.issue", f"must name an upstream issue as owner/repo#number "
                                 f"(kubernetes/kubernetes#140053) or be {UNREPORTED}, got {issue!r}")
    return KnownBug(issue, read_range(v, m["affects"], f"{where}.affects"),
                    v.regex(m["failsWith"], f"{where}.failsWith"),
                    v.flag(m["race"], f"{where}.race") if "race" in m else False)
