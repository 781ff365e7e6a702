"""The suite, N times in a row: per-test pass counts and the slowest runs of each test.

    make soak N=20                    # local provider
    make soak N=5 PROVIDER=kind       # real kubelets

A flake this finds is fixed at its cause, never retried away: the runs are
plain pytest runs (no reruns), each with its own JUnit report, read back here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(suite: str, provider: str, junit: Path, extra: list[str]) -> tuple[int, float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", suite, "-p", "no:cacheprovider", "-q",
                           "--provider", provider, f"--junitxml={junit}", *extra], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    junit.with_suffix(".log").write_text(proc.stdout)  # the whole output: warnings are not in the JUnit report
    lines = [x for x in proc.stdout.splitlines() if x.strip()]
    tail = lines[-1:] or ["(no output)"]
    took = time.monotonic() - started
    print(f"  exit {proc.returncode} in {took:.0f}s: {tail[0]}", flush=True)
    for w in (x.strip() for x in lines if "Warning:" in x or "warnings.warn" in x):
        print(f"    {w[:200]}", flush=True)
    return proc.returncode, took


def read_junit(path: Path) -> list[tuple[str, str, float, str]]:
    """(test id, outcome, seconds, first failure line) of every test case in a JUnit report."""
    out = []
    if not path.exists():
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, why = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                why = (el.get("message") or "").splitlines()[0][:160] if el.get("message") else ""
                break
        out.append((name, outcome, float(case.get("time") or 0), why))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--provider", default="local")
    ap.add_argument("--suite", default="e2e")
    ap.add_argument("--slowest", type=int, default=10, help="how many of the slowest tests to list")
    args, extra = ap.parse_known_args()
    results: dict[str, list[tuple[str, float, str]]] = defaultdict(list)
    exits, walls = [], []
    with tempfile.TemporaryDirectory(prefix="schedgate-soak-") as tmp:
        for i in range(1, args.runs + 1):
            print(f"run {i}/{args.runs} ({args.provider})", flush=True)
            junit = Path(tmp) / f"run-{i}.xml"
            code, took = run_once(args.suite, args.provider, junit, extra)
            exits.append(code)
            walls.append(took)
            for name, outcome, seconds, why in read_junit(junit):
                results[name].append((outcome, seconds, why))
    print(f"\n{args.runs} runs on {args.provider}: {exits.count(0)} passed whole, "
          f"wall median {statistics.median(walls):.0f}s (min {min(walls):.0f}s, max {max(walls):.0f}s)")
    width = max((len(n) for n in results), default=10)
    print(f"\n{'test':<{width}}  passed  other  median s  max s")
    flaky = 0
    for name, rs in sorted(results.items()):
        passed = sum(1 for o, _, _ in rs if o in ("passed", "skipped"))
        secs = [s for _, s, _ in rs]
        print(f"{name:<{width}}  {passed:>6}  {len(rs) - passed:>5}  {statistics.median(secs):>8.2f}  "
              f"{max(secs):>5.2f}")
        if passed != len(rs):
            flaky += 1
            for o, s, why in rs:
                if o not in ("passed", "skipped"):
                    print(f"{'':<{width}}    {o} after {s:.1f}s: {why}")
    print(f"\nslowest {args.slowest} (max seconds over the runs):")
    for name, rs in sorted(results.items(), key=lambda kv: -max(s for _, s, _ in kv[1]))[:args.slowest]:
        print(f"  {max(s for _, s, _ in rs):7.2f}  {name}")
    print(f"\ntests that did not pass every run: {flaky}")
    return 0 if flaky == 0 and all(c == 0 for c in exits) else 1


if __name__ == "__main__":
    sys.exit(main())
