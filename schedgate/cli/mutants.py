"""``make mutants``: the scenario suite against deliberately broken schedulers.

Each file in ``clusters/mutants/`` is a scheduler configuration with one
defect, described in its first comment line (``# mutant: ...``). It replaces
the profile under test (``--scheduler-config``) unless a ``# option: --NAME``
line names another option that takes a configuration file (for example
``--hard-extender-config``). A ``# binary: NAME`` line names a broken
kube-scheduler build (see ``MUTANT_BUILDS`` in :mod:`schedgate.toolchain`)
that runs as the scheduler under test; a ``# module: SOURCE`` line, an out-of-tree scheduler built from
its Go module (``--scheduler-module``), for the files of that scheduler (the baseline of those files runs
the same module with the files' own configuration). A ``# caught-by: FILE ...`` line
names the scenario files that must catch it: ``--focused`` (what CI runs)
runs the mutant against those alone. A *control* has a ``# passes: FILE ...``
line instead: a build that differs from the correct one in a way the suite
must accept (slower, but within a performance budget); it must pass those
files (``--focused``) or the suite. The suite runs
once with the correct configuration, which must pass, and once per mutant,
which must fail. A mutant counts as caught only when a scenario fails on an
assertion in its test body: a scheduler that refuses to start, or an error in
setup, is reported as such and counts as missed.

The baseline need not run again: ``--baseline-junit FILE`` takes the JUnit
report of a run of the correct configuration that just passed (``make test``'s
``artifacts/junit.xml``, same options) as the baseline for every file it ran
with no failure, and runs only the files it did not cover. ``--jobs 2`` runs
two mutants at a time; a mutant whose files measure performance, a control, or
one with a ``# runs-alone: WHY`` line runs with nothing beside it. ``--first-catch`` ends each mutant's run at
the first test that catches it: a mutant the suite misses still runs every file (so does a control).

    schedgate mutants [--suite e2e] [--mutants clusters/mutants] [--focused] [--baseline-junit FILE]
                      [--jobs N] [--first-catch] [-- PYTEST_ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgate.errors import SchedgateError
from schedgate.pytest_plugin.mutant_report import FIRST_CATCH_ENV, REPORT_ENV
from schedgate.runtime.builds import MUTANT_BUILDS
from schedgate.runtime.toolchain import ensure_mutant
from schedgate.spec.files import read_bounded, read_text
from schedgate.spec.shipped import shipped
from schedgate.spec.yamlfile import MAX_BYTES

RECORDER = "schedgate.pytest_plugin.mutant_report"
# Plugins a mutant's run of scenario files never uses, not loaded: a run is one short pytest process of dozens, and
# loading them took 1.4 s of its 5.2 s to collect one file (farm-bench, median of 5 pairs, 2026-12-07).
UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:pytest-kubernetes", "-p", "no:xdist.looponfail")


# -- the runner --
@dataclass
class Result:
    name: str
    description: str
    exit_code: int
    seconds: float
    failures: list[dict[str, Any]] = field(default_factory=list)
    output_tail: str = ""

    @property
    def catching(self) -> list[str]:
        return [f["test"] for f in self.failures if f["when"] == "call" and f["assertion"]]

    @property
    def caught(self) -> bool:
        return bool(self.catching)

    def why_missed(self) -> str:
        if self.exit_code == 0:
            return "every scenario passed"
        if self.exit_code == 4:
            return f"the run stopped before any scenario: {self.output_tail}"
        other = [f for f in self.failures if not (f["when"] == "call" and f["assertion"])]
        if other:
            return f"only non-assertion failures, e.g. {other[0]['test']} ({other[0]['when']}): {other[0]['line']}"
        return f"pytest exited {self.exit_code}: {self.output_tail}"


def header(path: Path, key: str, default: str) -> str:
    for line in read_text(path, "mutant", MAX_BYTES).splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return default


def describe(path: Path) -> str:
    return header(path, "mutant", "(no '# mutant:' line)")


def caught_by(path: Path) -> list[str]:
    """The scenario files a mutant's ``# caught-by:`` line (a control's ``# passes:``) names: what ``--focused``
    runs it against."""
    return (header(path, "caught-by", "") or header(path, "passes", "")).split()


def builds(path: Path) -> list[str]:
    """The broken binaries the mutant runs: its ``# binary:`` line, or a black box command naming one."""
    text = read_text(path, "mutant", MAX_BYTES)
    return [b for b in MUTANT_BUILDS if re.search(rf"(?<![\w-]){re.escape(b)}(?![\w-])", text)]


def is_control(path: Path) -> bool:
    """A build the suite must accept (``# passes:``), not a defect it must catch."""
    return bool(header(path, "passes", ""))


def module_of(path: Path) -> str:
    """The out-of-tree scheduler a mutant's files run (its ``# module:`` line), or ''."""
    return header(path, "module", "")


def run_suite(config: Path, suite: str | list[str], extra: list[str], first_catch: bool = False,
              module: str = "", own_config: bool = False) -> Result:
    """pytest on ``suite`` with ``config`` under test (with ``own_config``, the files' own ``scheduler:``: a
    module's baseline), the mutant's build or ``module`` as its scheduler."""
    with tempfile.TemporaryDirectory(prefix="schedgate-mutant-") as tmp:
        report = Path(tmp) / "failures.jsonl"
        env = dict(os.environ, **{REPORT_ENV: str(report)})
        env.pop(FIRST_CATCH_ENV, None)
        if first_catch:
            env[FIRST_CATCH_ENV] = "1"
        option = header(config, "option", "--scheduler-config")
        binary = header(config, "binary", "")
        if binary:  # a broken build: run it as the scheduler under test
            extra = [f"--scheduler-binary={ensure_mutant(binary)}", *extra]
        if module:
            extra = [f"--scheduler-module={module}", *extra]
        suites = [suite] if isinstance(suite, str) else suite
        cmd = [sys.executable, "-m", "pytest", *suites, *([] if own_config else [f"{option}={config}"]),
               "-p", RECORDER, "-q", *UNUSED_PLUGINS,
               "-p", "no:cacheprovider", "--no-header", "--artifacts-on", "never", *extra]
        started = time.monotonic()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        failures = [json.loads(x) for x in report.read_text().splitlines()] if report.exists() else []
    lines = [x for x in (proc.stdout + proc.stderr).strip().splitlines() if x.strip()]
    tail = lines[-1] if lines else ""
    for x in lines:
        if "schedgate:" in x and ("Exit" in x or "ERROR" in x):
            tail = x.strip()
            break
    return Result(config.stem, describe(config) if config.parent.name == "mutants" else "correct configuration",
                  proc.returncode, seconds, failures, tail[:400])


JUNIT_BYTES = 256 * 1024 * 1024  # the whole suite's report, a few MiB today


def junit_passed(report: Path, files: list[str]) -> tuple[list[str], list[str]]:
    """Of ``files`` (test files or scenario files, as a ``# caught-by:`` line names them), those the JUnit
    ``report`` ran with no failure or error, and the rest; a file all of whose tests were skipped there
    was not shown to pass (an xfail, a known bug failing as its file says, was: that is its verdict)."""
    ran: dict[str, list[str]] = {}
    try:
        root = ET.fromstring(read_bounded(report, "JUnit report", JUNIT_BYTES))
    except ET.ParseError as e:
        raise SchedgateError(f"--baseline-junit {report}: not a JUnit XML report (line {e.position[0]})") from None
    for case in root.iter("testcase"):
        outcome = next(("xfailed" if c.get("type") == "pytest.xfail" else c.tag  # a known bug, failing as it does
                        for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        ran.setdefault(case.get("classname") or "", []).append(outcome)
    passed: list[str] = []
    rest: list[str] = []
    for f in files:
        module = (f[:-3] if f.endswith(".py") else f).replace("/", ".")
        outcomes = [o for cls, got in ran.items() if cls == module or cls.startswith(module + ".") for o in got]
        ok = bool({"passed", "xfailed"} & set(outcomes)) and not {"failure", "error"} & set(outcomes)
        (passed if ok else rest).append(f)
    return passed, rest


def runs_alone(mutant: Path) -> bool:
    """A control, a mutant caught by a performance measurement, or one whose ``# runs-alone:`` line says
    why: timing is what it is judged by, so nothing may run beside it (under ``pytest -n`` the suite gives
    performance files the machine alone too)."""
    if is_control(mutant) or header(mutant, "runs-alone", ""):
        return True
    for f in caught_by(mutant):
        path = Path(f) if Path(f).exists() else shipped(f)
        text = read_text(path, "scenario", MAX_BYTES) if path.is_file() else ""
        if "measurePerformance" in text or "schedgate_exclusive" in text:
            return True
    return False


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="schedgate mutants", description=__doc__.split("\n\n")[0],
        epilog="Arguments after -- go to pytest: `schedgate mutants --focused -- -x`.")
    ap.add_argument("--suite", default="e2e", help="scenario folder or file (default: e2e)")
    ap.add_argument("--mutants", default=str(shipped("clusters/mutants")), help="folder of broken configurations")
    ap.add_argument("--correct", default=str(shipped("clusters/profiles/gpu-packing-scheduler.yaml")),
                    help="the configuration that must pass")
    ap.add_argument("--only", action="append", default=[], help="run only this mutant (file stem); repeatable")
    ap.add_argument("--focused", action="store_true",
                    help="run each mutant only against the files its '# caught-by:' line names (the baseline "
                         "still runs the whole suite); fast enough for every CI run")
    ap.add_argument("--baseline-junit", type=Path, metavar="FILE",
                    help="with --focused: the JUnit report of a passing run of the correct configuration (same "
                         "options) stands for the baseline of the files it ran; only the others run again")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="mutants run at a time (default 1); performance ones and controls always run alone")
    ap.add_argument("--first-catch", action="store_true",
                    help="end a mutant's run at the first test that catches it (what CI needs: that it is caught, "
                         "not every test that would catch it); controls and the baseline still run whole")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every test that caught each mutant")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = parser()
    args = ap.parse_args(argv)
    if args.baseline_junit is not None and not args.focused:
        ap.error("--baseline-junit goes with --focused (the whole suite's baseline is the suite)")
    if args.baseline_junit is not None and not args.baseline_junit.is_file():
        ap.error(f"--baseline-junit {args.baseline_junit}: no such file")
    if args.first_catch and args.verbose:
        ap.error("--first-catch and -v disagree: -v lists every test that catches a mutant, --first-catch stops at one")
    if args.jobs < 1:
        ap.error("--jobs takes a whole number of at least 1")

    mutants = sorted(Path(args.mutants).glob("*.yaml"))
    if args.only:
        mutants = [m for m in mutants if m.stem in args.only]
    if not mutants:
        print(f"schedgate: {args.mutants}: no mutant configurations (*.yaml)", file=sys.stderr)
        return 2
    suite: str | list[str] = args.suite
    modules = {f: module_of(m) for m in mutants for f in caught_by(m) if module_of(m)}  # run by their module
    todo = sorted(modules)
    if args.baseline_junit is not None:
        files = sorted({f for m in mutants for f in caught_by(m) or [args.suite]})
        covered, rest = junit_passed(args.baseline_junit, files)
        print(f"baseline  {len(covered)} of {len(files)} files passed in {args.baseline_junit}"
              + (f"; running the other {len(rest)}" if rest else ""), flush=True)
        suite, todo = [f for f in rest if f not in modules], [f for f in rest if f in modules]
    for module in sorted({modules[f] for f in todo}):  # a module's files with the scheduler built from it
        own = [f for f in todo if modules[f] == module]
        if not _baseline_passes(run_suite(Path(args.correct), own, extra, module=module, own_config=True),
                                f"{module} with its files' own profile"):
            return 1
    if suite and not _baseline_passes(run_suite(Path(args.correct), suite, extra), args.correct):
        return 1

    needed = sorted({b for m in mutants for b in builds(m)})
    if needed:  # linked now, not inside a test's deadline (a black box resolves its program as it starts)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as links:  # --jobs links at a time, as it runs
            list(links.map(ensure_mutant, needed))
        print(f"builds    {len(needed)} broken binaries ready ({time.monotonic() - started:.0f}s)", flush=True)

    def one(m: Path) -> tuple[Path, Result]:
        return m, run_suite(m, (caught_by(m) or args.suite) if args.focused or module_of(m) else args.suite, extra,
                            first_catch=args.first_catch and not is_control(m), module=module_of(m))

    tally = Tally(verbose=args.verbose)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # each line printed as its mutant ends
        for done in as_completed([pool.submit(one, m) for m in mutants if not runs_alone(m)]):
            tally.add(*done.result())
    for m in mutants:
        if runs_alone(m):
            tally.add(*one(m))
    defects = len(mutants) - tally.controls
    print(f"mutants caught {tally.caught}/{defects}"
          + (f"; controls passing {tally.accepted}/{tally.controls}" if tally.controls else ""), flush=True)
    return 0 if tally.caught == defects and tally.accepted == tally.controls else 1


def _baseline_passes(baseline: Result, what: object) -> bool:
    if baseline.exit_code != 0:
        print(f"baseline  FAILS  {what} ({baseline.seconds:.0f}s): {baseline.why_missed()}")
        for f in baseline.failures:
            print(f"          {f['test']} ({f['when']}): {f['line']}")
        print("mutants not run: the correct configuration must pass first")
        return False
    print(f"baseline  passes {what} ({baseline.seconds:.0f}s)", flush=True)
    return True


@dataclass
class Tally:
    """Mutants caught, controls passing: one line per result, printed as it comes."""

    verbose: bool = False
    caught: int = 0
    controls: int = 0
    accepted: int = 0

    def add(self, m: Path, r: Result) -> None:
        if is_control(m):
            self.controls += 1
            if r.exit_code == 0:
                self.accepted += 1
                print(f"PASSES  {r.name:<26} a control that must pass: {r.description} ({r.seconds:.0f}s)", flush=True)
            else:
                print(f"FLAGGED {r.name:<26} a control that must pass, failed: "
                      f"{(r.failures[0]['line'] if r.failures else r.output_tail)} ({r.seconds:.0f}s)", flush=True)
            return
        if r.caught:
            self.caught += 1
            more = f" (+{len(r.catching) - 1} more)" if len(r.catching) > 1 else ""
            print(f"CAUGHT  {r.name:<26} by {r.catching[0]}{more} ({r.seconds:.0f}s)", flush=True)
            if self.verbose:
                for t in r.catching[1:]:
                    print(f"{'':<36} {t}", flush=True)
        else:
            print(f"MISSED  {r.name:<26} {r.description}: {r.why_missed()} ({r.seconds:.0f}s)", flush=True)
