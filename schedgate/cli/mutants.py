"""``make mutants``: the scenario suite against deliberately broken schedulers.

Each file in ``clusters/mutants/`` is a scheduler configuration with one
defect, described in its first comment line (``# mutant: ...``). It replaces
the profile under test (``--scheduler-config``) unless a ``# option: --NAME``
line names another option that takes a configuration file (for example
``--hard-extender-config``). A ``# binary: NAME`` line names a broken
kube-scheduler build (see ``MUTANT_BUILDS`` in :mod:`schedgate.toolchain`)
that runs as the scheduler under test. A ``# caught-by: FILE ...`` line
names the scenario files that must catch it: ``--focused`` (what CI runs)
runs the mutant against those alone. A *control* has a ``# passes: FILE ...``
line instead: a build that differs from the correct one in a way the suite
must accept (slower, but within a performance budget); it must pass those
files (``--focused``) or the suite. The suite runs
once with the correct configuration, which must pass, and once per mutant,
which must fail. A mutant counts as caught only when a scenario fails on an
assertion in its test body: a scheduler that refuses to start, or an error in
setup, is reported as such and counts as missed.

    schedgate mutants [--suite e2e] [--mutants clusters/mutants] [-- PYTEST_ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedgate.pytest_plugin.mutant_report import REPORT_ENV
from schedgate.runtime.toolchain import ensure_binaries
from schedgate.spec.shipped import shipped

RECORDER = "schedgate.pytest_plugin.mutant_report"


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
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return default


def describe(path: Path) -> str:
    return header(path, "mutant", "(no '# mutant:' line)")


def caught_by(path: Path) -> list[str]:
    """The scenario files a mutant's ``# caught-by:`` line (a control's ``# passes:``) names: what ``--focused``
    runs it against."""
    return (header(path, "caught-by", "") or header(path, "passes", "")).split()


def is_control(path: Path) -> bool:
    """A build the suite must accept (``# passes:``), not a defect it must catch."""
    return bool(header(path, "passes", ""))


def run_suite(config: Path, suite: str | list[str], extra: list[str]) -> Result:
    with tempfile.TemporaryDirectory(prefix="schedgate-mutant-") as tmp:
        report = Path(tmp) / "failures.jsonl"
        env = dict(os.environ, **{REPORT_ENV: str(report)})
        option = header(config, "option", "--scheduler-config")
        binary = header(config, "binary", "")
        if binary:  # a broken build: run it as the scheduler under test
            extra = [f"--scheduler-binary={ensure_binaries(None).path(binary)}", *extra]
        suites = [suite] if isinstance(suite, str) else suite
        cmd = [sys.executable, "-m", "pytest", *suites, f"{option}={config}", "-p", RECORDER, "-q",
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(prog="schedgate mutants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="e2e", help="scenario folder or file (default: e2e)")
    ap.add_argument("--mutants", default=str(shipped("clusters/mutants")), help="folder of broken configurations")
    ap.add_argument("--correct", default=str(shipped("clusters/profiles/gpu-packing-scheduler.yaml")),
                    help="the configuration that must pass")
    ap.add_argument("--only", action="append", default=[], help="run only this mutant (file stem); repeatable")
    ap.add_argument("--focused", action="store_true",
                    help="run each mutant only against the files its '# caught-by:' line names (the baseline "
                         "still runs the whole suite); fast enough for every CI run")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every test that caught each mutant")
    args = ap.parse_args(argv)

    mutants = sorted(Path(args.mutants).glob("*.yaml"))
    if args.only:
        mutants = [m for m in mutants if m.stem in args.only]
    if not mutants:
        print(f"schedgate: {args.mutants}: no mutant configurations (*.yaml)", file=sys.stderr)
        return 2
    baseline = run_suite(Path(args.correct), args.suite, extra)
    if baseline.exit_code != 0:
        print(f"baseline  FAILS  {args.correct} ({baseline.seconds:.0f}s): {baseline.why_missed()}")
        for f in baseline.failures:
            print(f"          {f['test']} ({f['when']}): {f['line']}")
        print("mutants not run: the correct configuration must pass first")
        return 1
    print(f"baseline  passes {args.correct} ({baseline.seconds:.0f}s)")
    caught = controls = accepted = 0
    for m in mutants:
        r = run_suite(m, (caught_by(m) or args.suite) if args.focused else args.suite, extra)
        if is_control(m):
            controls += 1
            if r.exit_code == 0:
                accepted += 1
                print(f"PASSES  {r.name:<26} a control that must pass: {r.description} ({r.seconds:.0f}s)")
            else:
                print(f"FLAGGED {r.name:<26} a control that must pass, failed: "
                      f"{(r.failures[0]['line'] if r.failures else r.output_tail)} ({r.seconds:.0f}s)")
            continue
        if r.caught:
            caught += 1
            more = f" (+{len(r.catching) - 1} more)" if len(r.catching) > 1 else ""
            print(f"CAUGHT  {r.name:<26} by {r.catching[0]}{more} ({r.seconds:.0f}s)")
            if args.verbose:
                for t in r.catching[1:]:
                    print(f"{'':<36} {t}")
        else:
            print(f"MISSED  {r.name:<26} {r.description}: {r.why_missed()} ({r.seconds:.0f}s)")
    defects = len(mutants) - controls
    print(f"mutants caught {caught}/{defects}" + (f"; controls passing {accepted}/{controls}" if controls else ""))
    return 0 if caught == defects and accepted == controls else 1

