"""``schedgate`` on the command line (also ``python -m schedgate``).

    schedgate up [--cluster FILE] [--scheduler-config FILE]   start a cluster and leave it running
    schedgate status                                          list clusters schedgate started
    schedgate down RUN_DIR | --all                            stop one (or every) cluster
    schedgate repro FILE.scenario.yaml [PYTEST_OPTIONS...]    run one scenario file, keep its artifacts
    schedgate check FILE.scenario.yaml...                     validate scenario files, start nothing
    schedgate reap                                            remove what crashed runs left behind
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from schedgate.errors import SchedgateError
from schedgate.procs import RUN_PREFIX, cmdline_of, reap_orphans, remove_run, run_dirs, run_pids

EPILOG = """\
examples:
  schedgate up                                   # inference cluster + gpu-packing-scheduler profile
  export KUBECONFIG=...                          # as printed; kubectl get nodes, create pods...
  schedgate repro e2e/scenarios/hard-constraint.scenario.yaml
  schedgate repro my-bug.scenario.yaml --scheduler-binary ./kube-scheduler --keep-cluster
  schedgate down --all

Scenario files are described in the README ("Reproducing a bug as a scenario file").
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="schedgate", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Start Kubernetes clusters with a scheduler under test, and reproduce scheduling "
                    "situations written as scenario files.")
    sub = ap.add_subparsers(dest="action", required=True, metavar="COMMAND")
    up = sub.add_parser("up", help="start a cluster with the scheduler profile under test and leave it running",
                        description="Start a cluster (local provider: etcd, kube-apiserver and schedulers as "
                                    "processes on 127.0.0.1) and leave it running. Prints the KUBECONFIG to "
                                    "export and the command that stops it. Builds the pinned binaries first "
                                    "if they are not built yet (several minutes the first time).")
    up.add_argument("--cluster", metavar="FILE", default="clusters/inference.yaml",
                    help="cluster definition (default: clusters/inference.yaml)")
    up.add_argument("--scheduler-config", metavar="FILE", default="clusters/profiles/gpu-packing-scheduler.yaml",
                    help="scheduler configuration under test (default: the gpu-packing-scheduler profile)")
    up.add_argument("--scheduler-binary", metavar="FILE", help="kube-scheduler to run (default: the pinned build)")
    up.add_argument("--bin-dir", metavar="DIR", help="prebuilt etcd, kube-apiserver, ... (default: build them)")
    up.add_argument("--provider", default="local", help="where the cluster runs (default: local)")
    sub.add_parser("status", help="list the clusters schedgate started and whether they are alive")
    down = sub.add_parser("down", help="stop a cluster left running by 'up' or --keep-cluster")
    which = down.add_mutually_exclusive_group(required=True)
    which.add_argument("run_dir", nargs="?", type=Path, help="the run folder 'up' or 'status' printed")
    which.add_argument("--all", action="store_true", help="stop every cluster schedgate started")
    repro = sub.add_parser(
        "repro", help="run one scenario file and keep its artifacts and placement picture",
        description="Validate a scenario file, run it (pytest under the hood) and write its artifacts "
                    "folder with placement.html whatever the outcome. Options after the file go to pytest "
                    "and schedgate, e.g. --scheduler-config FILE, --scheduler-binary FILE, --keep-cluster, "
                    "--artifacts DIR.")
    repro.add_argument("file", type=Path, help="a *.scenario.yaml file")
    repro.add_argument("options", nargs=argparse.REMAINDER, help="more pytest/schedgate options")
    check = sub.add_parser("check", help="validate scenario files without starting anything")
    check.add_argument("files", type=Path, nargs="+")
    sub.add_parser("reap", help="remove processes and folders that crashed runs left behind")
    args = ap.parse_args(argv)
    try:
        return int(ACTIONS[args.action](args))
    except SchedgateError as e:
        print(f"schedgate: {e}", file=sys.stderr)
        return 2


def _up(args: argparse.Namespace) -> int:
    from schedgate.options import make_request, project_path
    from schedgate.providers import start_cluster

    req = make_request(project_path(args.cluster), project_path(args.scheduler_config), provider=args.provider,
                       binary=args.scheduler_binary, bin_dir=args.bin_dir, keep=True)
    started = start_cluster(req, out=sys.stderr)
    c = started.cluster
    print(f"schedgate: cluster {req.definition.name!r} is up on {req.provider} "
          f"(Kubernetes {c.kubernetes_version}) in {c.timings.get('total', 0):.1f}s; "
          f"profiles: {', '.join(sorted(c.schedulers))}", file=sys.stderr)
    print(f"export KUBECONFIG={c.kubeconfig}")
    print(f"# stop it with: schedgate down {started.run_dir}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from schedgate.providers import read_info

    runs = run_dirs()
    if not runs:
        print("schedgate: no clusters running")
        return 0
    for run in runs:
        info = read_info(run)
        pids = run_pids(run)
        alive = [name for pid, name in pids if str(run) in cmdline_of(pid)]
        state = "kept" if (run / "keep").exists() else "in use by a run" if _owner_alive(run) else "orphaned"
        print(f"{run}  [{state}]  {len(alive)}/{len(pids)} processes alive")
        if info:
            print(f"  cluster {info.get('cluster')} ({info.get('definition')}) on {info.get('provider')}, "
                  f"Kubernetes {info.get('kubernetes')}, started {info.get('started')}")
            print(f"  scheduler config {info.get('scheduler_config')}: profiles {', '.join(info.get('profiles', []))}")
            print(f"  export KUBECONFIG={info.get('kubeconfig')}")
    return 0


def _owner_alive(run: Path) -> bool:
    try:
        pid = int((run / "owner").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return pid != os.getpid() and Path(f"/proc/{pid}").exists()


def _down(args: argparse.Namespace) -> int:
    runs = run_dirs() if args.all else [args.run_dir.resolve()]
    for run in runs:
        if not run.name.startswith(RUN_PREFIX) or not (run / "owner").exists():
            print(f"schedgate: {run}: not a schedgate run folder", file=sys.stderr)
            return 2
        for d in remove_run(run):
            print(f"schedgate: removed {d}")
    if args.all and not runs:
        print("schedgate: no clusters running")
    return 0


def _reap(args: argparse.Namespace) -> int:
    for d in reap_orphans():
        print(f"schedgate: removed {d}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from schedgate.scenario import load_scenario

    for f in args.files:
        sc = load_scenario(f)
        print(f"{f}: ok — scenario {sc.name}, {len(sc.steps)} steps, {len(sc.pods)} pods, "
              f"cluster {sc.definition.name}")
    return 0


def _repro(args: argparse.Namespace) -> int:
    import pytest

    from schedgate.scenario import load_scenario

    load_scenario(args.file)  # a bad file: one line, exit 2, nothing started
    sc_doc = _scenario_refs(args.file)
    opts = list(args.options)
    if opts[:1] == ["--"]:
        opts = opts[1:]
    pytest_args = [str(args.file), "-p", "no:cacheprovider", "--artifacts-on", "always",
                   "-W", "ignore::pytest.PytestAssertRewriteWarning", *sc_doc, *opts]
    return int(pytest.main(pytest_args))


def _scenario_refs(path: Path) -> list[str]:
    """The file's cluster and scheduler as the run's defaults, so the session cluster is the scenario's."""
    from schedgate.scenario import referenced_files

    cluster, scheduler = referenced_files(path)
    out = []
    if cluster is not None:
        out += ["-o", f"schedgate_cluster={cluster}"]
    if scheduler is not None:
        out += ["-o", f"schedgate_scheduler_config={scheduler}"]
    return out


ACTIONS = {"up": _up, "status": _status, "down": _down, "repro": _repro, "check": _check, "reap": _reap}
