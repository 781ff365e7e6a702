"""``schedgate bisect FILE --good V --bad V``: the first released Kubernetes version where a scenario's
verdict changes, building only the versions it runs.

The released patch versions between the two (each asked of the Go module proxy, of the minors schedgate
pins; a version the checkout does not pin is built on demand, :mod:`schedgate.runtime.patches`)
are searched by halves: each run is the file on the local provider at that version, in a cluster of its own.
Each run has ``--runxfail``: a file's known bug (``knownBug``) marks nothing, so a run fails or passes as
the file does, and a failure keeps its own message. ``--good`` must pass and ``--bad`` fail, in either order
of versions: the answer is the version on the ``--good`` side of the change, with the failure line of the
other.

    schedgate bisect e2e/bugs/k8s-138882-all-mode-counters.scenario.yaml --bad 1.36.0 --good 1.36.3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from schedgate.cli.matrix import finish, read_junit, split_at_dashes
from schedgate.errors import SchedgateError
from schedgate.runtime.patches import key, released, served
from schedgate.runtime.pins import PIN_ENV, RELEASE, Pin, select
from schedgate.runtime.toolchain import _go, ensure_binaries, go_module_dir

FAILS, PASSES = "fails", "passes"


def verdict(pin: Pin, file: Path, out: Path, extra: list[str]) -> tuple[str, str]:
    """``(fails | passes, the failure's first line)`` of ``file`` at ``pin``; a skip is refused."""
    os.environ[PIN_ENV] = pin.version
    say(f"{pin.version}: the binaries" + (" (built on demand: several minutes when cold)" if pin.on_demand else ""))
    ensure_binaries(sys.stderr)
    junit = out / f"junit-{pin.version}.xml"
    junit.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", str(file), "--provider", "local", "--kubernetes-version", pin.version,
           "--runxfail", "-q", "-p", "no:cacheprovider", "--junitxml", str(junit), "--artifacts",
           str(out / pin.version), *extra]  # --runxfail: a known bug's failure as it is, with its message
    say(f"{pin.version}: {' '.join(cmd[2:])}")
    finish(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, text=True))
    outcomes = read_junit(junit) if junit.exists() else {}
    if not outcomes:
        raise SchedgateError(f"{file} ran no test on {pin.version} (see {out / pin.version})")
    for outcome, reason in outcomes.values():
        if outcome == "skipped":
            raise SchedgateError(f"{file} skips on {pin.version}: {reason}")
    fails = [r for o, r in outcomes.values() if o == "failed"]
    return (FAILS, fails[0]) if fails else (PASSES, "")


def say(text: str) -> None:
    print(f"bisect: {text}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="schedgate bisect", description=__doc__.split("\n\n")[0],
                                 epilog="Arguments after -- go to pytest.")
    ap.add_argument("file", type=Path, help="a scenario file (or any pytest test file)")
    ap.add_argument("--good", required=True, help="a released version where the file passes (1.36.3)")
    ap.add_argument("--bad", required=True, help="a released version where it fails (1.36.0)")
    ap.add_argument("--out", type=Path, default=Path("artifacts/bisect"), help="junit files and artifacts")
    return ap


def _plan(args: argparse.Namespace) -> tuple[list[Pin], int, int]:
    """The pins from the older end to the newer, and the indices of --good and --bad among them."""
    if not args.file.is_file():
        raise SchedgateError(f"{args.file}: no such file")
    ends = {}
    for name in ("good", "bad"):
        m = RELEASE.match(str(getattr(args, name)).strip())
        if not m:
            raise SchedgateError(f"--{name} {getattr(args, name)}: not a release version like 1.36.2")
        ends[name] = m.group(1)
    if ends["good"] == ends["bad"]:
        raise SchedgateError(f"--good and --bad are both {ends['good']}: nothing lies between them")
    module, go = go_module_dir(), _go()
    for v in ends.values():
        select(module, v)  # a minor schedgate does not pin: one line, before anything is asked of the proxy
    for name, v in ends.items():
        if not served(go, module, v):
            raise SchedgateError(f"--{name} {v}: the Go module proxy does not serve k8s.io/kubernetes v{v}")
    low, high = sorted(ends.values(), key=key)
    span = released(go, module, low, high)
    missing = [v for v in ends.values() if v not in span]
    if missing:  # served, but past a patch the proxy does not serve
        raise SchedgateError(f"{missing[0]}: the Go module proxy serves it but not every patch before it")
    pins = [select(module, v) for v in span]
    return pins, span.index(ends["good"]), span.index(ends["bad"])


def main(argv: list[str] | None = None) -> int:
    own, extra = split_at_dashes(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(own)
    try:
        pins, good, bad = _plan(args)
    except SchedgateError as e:
        print(f"schedgate: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    started, seen = time.monotonic(), {}
    say(f"{len(pins)} released versions from {pins[0].version} to {pins[-1].version}")
    try:
        for i, want in ((good, PASSES), (bad, FAILS)):
            seen[i] = verdict(pins[i], args.file, args.out, extra)
            say(f"{pins[i].version}: {seen[i][0]}" + (f": {seen[i][1]}" if seen[i][1] else ""))
            if seen[i][0] != want:
                print(f"schedgate: --{'good' if i == good else 'bad'} {pins[i].version}: the file {seen[i][0]} "
                      f"there, not {want}; nothing to bisect", file=sys.stderr)
                return 2
        lo, hi = sorted((good, bad))
        while hi - lo > 1:
            mid = (lo + hi) // 2
            seen[mid] = verdict(pins[mid], args.file, args.out, extra)
            say(f"{pins[mid].version}: {seen[mid][0]}" + (f": {seen[mid][1]}" if seen[mid][1] else ""))
            lo, hi = (mid, hi) if seen[mid][0] == seen[lo][0] else (lo, mid)
    except SchedgateError as e:
        print(f"schedgate: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("schedgate: bisect interrupted; ran " + ", ".join(pins[i].version for i in sorted(seen)), file=sys.stderr)
        return 130
    failing = lo if seen[lo][0] == FAILS else hi
    change = "fixed in" if seen[hi][0] == PASSES else "broken in"
    print(f"{args.file}: {change} {pins[hi].version} (it {seen[lo][0]} on {pins[lo].version}, {seen[hi][0]} on "
          f"{pins[hi].version}); on {pins[failing].version}: {seen[failing][1]}")
    made = ", ".join(pins[i].version for i in sorted(seen) if pins[i].on_demand) or "none"
    print(f"ran {', '.join(pins[i].version for i in sorted(seen))} in {time.monotonic() - started:.0f}s; not pinned, "
          f"so made on demand: {made}")
    return 0
