"""``make matrix``: the scenario suite once per pinned Kubernetes minor, and one table of the outcomes.

Each pin (``schedgate tools pins``: go/go.mod and go/pins/) is built if the cache lacks it, the Go
packages' tests run against it, then the suite runs with ``--kubernetes-version`` set to it: every
binary, the Go plugins compiled against that minor, the same scenario files. The table has a row
per test and a column per version (``pass``, ``FAIL``, ``skip``);
under it, every skip and failure with its reason, then each version's totals.

    schedgate matrix [--versions 1.35,1.36] [--suite e2e] [--out artifacts/matrix] [-- PYTEST_ARGS]

``--versions bugs`` (``make bugs``) is every pin and, for each known bug of the suite's files, the newest
release of each pinned minor it affects (built on demand): a gallery file then runs where it must fail and
where it must pass.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from schedgate.errors import SchedgateError
from schedgate.runtime.patches import key, released
from schedgate.runtime.pins import PIN_ENV, Pin, pins, select
from schedgate.runtime.toolchain import _go, ensure_binaries, go_module_dir
from schedgate.scenarios.load import SUFFIX, load_scenario

CELL = {"passed": "pass", "failed": "FAIL", "skipped": "skip", "xfailed": "xfail"}  # xfail: a known bug, shown


@dataclass
class Run:
    pin: Pin
    exit_code: int = 0
    seconds: float = 0.0
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)  # test -> (outcome, reason)

    def count(self, outcome: str) -> int:
        return sum(1 for o, _ in self.outcomes.values() if o == outcome)


def read_junit(path: Path) -> dict[str, tuple[str, str]]:
    """Each test case of a junit XML file: its outcome (passed, failed, skipped, xfailed) and, unless it passed,
    why."""
    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
        outcome, reason = "passed", ""
        for child in case:
            if child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
                reason = child.get("message") or ""
            elif child.tag in ("failure", "error"):
                outcome = "failed"
                reason = (child.get("message") or (child.text or "").strip()).splitlines()[0] if (
                    child.get("message") or child.text) else child.tag
        out[test] = (outcome, reason.strip())
    return out


GO_TESTS = "go test ./pkg/..."  # the plugins' own tests, compiled against the pin: the table's first row


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """``proc``'s exit code and output. On Ctrl-C it gets SIGINT too (a terminal sends it the same, a signal
    to this process alone does not) and is waited for: pytest stops its clusters, nothing is left running."""
    try:
        out, _ = proc.communicate()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        raise
    return proc.returncode, out or ""


def go_tests(pin: Pin) -> tuple[str, str]:
    """The Go packages' unit tests built against ``pin`` (its modfile and build tag)."""
    code, out = finish(subprocess.Popen(["go", "test", "-trimpath", *pin.go_flags(), "./pkg/..."],
                                        cwd=go_module_dir(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True))
    if code == 0:
        return "passed", ""
    failed = [x for x in out.splitlines() if x.startswith(("FAIL", "---", "#"))]
    return "failed", (failed or ["go test failed"])[0]


def run_pin(pin: Pin, suite: list[str], out: Path, extra: list[str]) -> Run:
    os.environ[PIN_ENV] = pin.version
    ensure_binaries(sys.stderr)
    print(f"matrix: Kubernetes {pin.version}: {' '.join(['go', 'test', *pin.go_flags(), './pkg/...'])}",
          file=sys.stderr, flush=True)
    unit = go_tests(pin)
    junit = out / f"junit-{pin.version}.xml"
    junit.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", *suite, "--provider", "local", "--kubernetes-version", pin.version,
           "-q", "-p", "no:cacheprovider", "--junitxml", str(junit), "--artifacts", str(out / pin.version), *extra]
    print(f"matrix: Kubernetes {pin.version}: {' '.join(cmd[2:])}", file=sys.stderr, flush=True)
    started = time.monotonic()
    code, _ = finish(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, text=True))
    run = Run(pin, code, time.monotonic() - started)
    run.outcomes = {GO_TESTS: unit, **(read_junit(junit) if junit.exists() else {})}
    if unit[0] != "passed":
        run.exit_code = run.exit_code or 1
    return run


def affected(module: Path, suite: list[str]) -> list[Pin]:
    """Every pin and, for each known bug of the suite's scenario files, the newest release of each pinned
    minor that it affects, oldest first."""
    every = pins(module)
    files = [f for s in suite for f in (sorted(Path(s).rglob(f"*{SUFFIX}")) if Path(s).is_dir() else [Path(s)])]
    bugs = [b for f in files if (b := load_scenario(f).known_bug) is not None]
    versions = {p.version.lstrip("v") for p in every.values()}
    for pin in every.values():
        if not any(b.affects.holds(pin.version) is False for b in bugs):
            continue
        span = released(_go(), module, f"{pin.minor}.0", pin.version.lstrip("v"))
        for bug in bugs:
            if not bug.affects.holds(pin.version) and (hit := [v for v in span if bug.affects.holds(v)]):
                versions.add(hit[-1])
    return [select(module, v) for v in sorted(versions, key=key)]


def table(runs: list[Run]) -> list[str]:
    tests = sorted({t for r in runs for t in r.outcomes}, key=lambda t: (t != GO_TESTS, t))
    width = max([len(t) for t in tests] + [8])
    cols = [r.pin.version for r in runs]
    lines = [f"{'scenario':<{width}}  " + "  ".join(f"{c:<7}" for c in cols)]
    for t in tests:
        cells = [CELL.get(r.outcomes.get(t, ("-", ""))[0], "-") for r in runs]
        lines.append(f"{t:<{width}}  " + "  ".join(f"{c:<7}" for c in cells))
    why = [f"  {r.pin.version} {t}: {CELL[o]}: {reason}" for r in runs for t, (o, reason) in sorted(r.outcomes.items())
           if o != "passed"]
    if why:
        lines += ["", "not passed, with the reason:", *why]
    lines.append("")
    for r in runs:
        ran = f"{r.count('passed')} passed, {r.count('failed')} failed, {r.count('skipped')} skipped"
        ran += f", {r.count('xfailed')} xfailed" if r.count("xfailed") else ""
        note = "" if len(r.outcomes) > 1 else f"; no junit report (pytest exited {r.exit_code})"
        lines.append(f"Kubernetes {r.pin.version} (etcd {r.pin.etcd_version}): {ran} in {r.seconds:.0f}s{note}")
    return lines


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="schedgate matrix", description=__doc__.split("\n\n")[0],
                                 epilog="Arguments after -- go to pytest: `schedgate matrix -- -k gang`.")
    ap.add_argument("--versions", help="comma-separated versions (1.35, v1.36.1: a patch of a pinned minor is "
                                       "built on demand), or bugs: the pins and each known bug's affected "
                                       "releases; default: every pin")
    ap.add_argument("--suite", action="append", help="scenario folder or file (repeatable; default: e2e)")
    ap.add_argument("--out", type=Path, default=Path("artifacts/matrix"), help="junit files and artifacts")
    return ap


def split_at_dashes(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own arguments, and pytest's: those after ``--``."""
    argv = list(argv)
    return (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])


def main(argv: list[str] | None = None) -> int:
    own, extra = split_at_dashes(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(own)
    module = go_module_dir()
    try:
        if args.versions == "bugs":
            chosen = affected(module, args.suite or ["e2e/bugs"])
        else:
            chosen = ([select(module, v) for v in args.versions.split(",")] if args.versions
                      else list(pins(module).values()))
    except SchedgateError as e:  # a version no pin has: one line, exit 2
        print(f"schedgate: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    try:
        for p in chosen:
            runs.append(run_pin(p, args.suite or ["e2e"], args.out, extra))
    except KeyboardInterrupt:
        done = ", ".join(r.pin.version for r in runs) or "none"
        print(f"schedgate: matrix interrupted; finished versions: {done}", file=sys.stderr)
        return 130
    for line in table(runs):
        print(line)
    return 0 if all(r.exit_code == 0 for r in runs) else 1
