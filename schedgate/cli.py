"""``schedgate`` on the command line (also ``python -m schedgate``).

    schedgate down RUN_DIR    stop a cluster left running by --keep-cluster
    schedgate reap            remove what crashed runs left behind
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedgate.procs import RUN_PREFIX, reap_orphans, remove_run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="schedgate", description="schedgate's cluster housekeeping.")
    sub = ap.add_subparsers(dest="action", required=True)
    down = sub.add_parser("down", help="stop a cluster left running by --keep-cluster")
    down.add_argument("run_dir", type=Path, help="the run folder the summary printed")
    sub.add_parser("reap", help="remove processes and folders that crashed runs left behind")
    args = ap.parse_args(argv)
    if args.action == "down":
        run = args.run_dir.resolve()
        if not run.name.startswith(RUN_PREFIX) or not (run / "owner").exists():
            print(f"schedgate: {run}: not a schedgate run folder", file=sys.stderr)
            return 2
        done = remove_run(run)
    else:
        done = reap_orphans()
    for d in done:
        print(f"schedgate: removed {d}")
    return 0
