"""``schedgate`` on the command line (also ``python -m schedgate``).

    schedgate up [--cluster FILE] [--scheduler-config FILE] ...  start a cluster and leave it running
    schedgate status                                          list clusters schedgate started
    schedgate down RUN_DIR | --all                            stop one (or every) cluster
    schedgate repro FILE.scenario.yaml [PYTEST_OPTIONS...]    run one scenario file, keep its artifacts
    schedgate check FILE.scenario.yaml...                     validate scenario files, start nothing
    schedgate schema [--kind cluster] [--path | --write]      the JSON Schema editors check files with
    schedgate reap                                            remove what crashed runs left behind
    schedgate tools build|path|version|ldflags|goflags|pins   the pinned binaries (--kubernetes-version 1.36)
    schedgate mutants [--focused] [-- PYTEST_ARGS]            the suite against deliberately broken schedulers
    schedgate matrix [--versions 1.35,1.36] [-- PYTEST_ARGS]  the suite once per pinned minor, one table
    schedgate bisect FILE --good 1.36.3 --bad 1.36.0          the release where a file's verdict changes
    schedgate init [DIR]                                      a repository of your own that tests your scheduler
    schedgate snapshot --kubeconfig FILE -o FILE.scenario.yaml a live cluster as a scenario file replaying its verdicts
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from schedgate.cli import bisect, fuzz, matrix, mutants, snapshot
from schedgate.cli.command import parser
from schedgate.cli.init import init
from schedgate.errors import SchedgateError, ToolchainError
from schedgate.providers import read_info, start_cluster
from schedgate.pytest_plugin.options import (
    DEFAULT_CLUSTER,
    DEFAULT_SCHEDULER_CONFIG,
    check_kubernetes_version,
    existing_options,
    make_request,
    project_path,
)
from schedgate.runtime.binaries import reported_version
from schedgate.runtime.kwok import ensure_kwok
from schedgate.runtime.modbuild import ensure_scheduler_module
from schedgate.runtime.pins import pins
from schedgate.runtime.procs import RUN_PREFIX, cmdline_of
from schedgate.runtime.progress import show_on
from schedgate.runtime.reap import foreign, owner, owner_alive, reap_orphans, remove_run, run_dirs, run_pids
from schedgate.runtime.schedcheck import check_with_scheduler
from schedgate.runtime.toolchain import ensure_binaries, go_module_dir, ldflags, pinned_kubernetes_version, selected_pin
from schedgate.scenarios.load import load_scenario
from schedgate.scenarios.reference import write_pages
from schedgate.scenarios.schema import FILES, SCHEMAS, render, write_schemas
from schedgate.spec.cluster import load_definition
from schedgate.spec.gates import parse_gate_option
from schedgate.spec.schedconfig import SchedulerConfig, load_scheduler_config
from schedgate.spec.yamlfile import read_yaml


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # mutants, matrix and bisect parse their own options (and pytest's after --)
    own = {"mutants": mutants.main, "matrix": matrix.main, "bisect": bisect.main}
    action = argv[0] if argv[:1] and argv[0] in own else ""
    try:
        if action:
            return own[action](argv[1:])
        args = parser().parse_args(argv)
        action = args.action
        show_on(sys.stderr)
        return int(ACTIONS[action](args))
    except ToolchainError as e:
        print(f"schedgate: {e}", file=sys.stderr)
        return 1 if action == "tools" else 2
    except SchedgateError as e:
        print(f"schedgate: {e}", file=sys.stderr)
        return 2


def _up(args: argparse.Namespace) -> int:
    check_kubernetes_version(args.kubernetes_version)
    req = make_request(project_path(args.cluster or DEFAULT_CLUSTER),
                       project_path(args.scheduler_config or DEFAULT_SCHEDULER_CONFIG),
                       provider=args.provider or "local", binary=args.scheduler_binary, bin_dir=args.bin_dir, keep=True,
                       module=args.scheduler_module)
    started = start_cluster(replace(req, scheduler_image=args.scheduler_image, reuse=args.reuse_cluster,
                                    feature_gates=parse_gate_option(args.feature_gates) if args.feature_gates else (),
                                    **existing_options(lambda dest: getattr(args, dest))))
    c = started.cluster
    print(f"schedgate: cluster {req.definition.name!r} is up on {req.provider} "
          f"(Kubernetes {c.kubernetes_version}) in {c.timings.get('total', 0):.1f}s; "
          f"profiles: {', '.join(sorted(c.schedulers))}", file=sys.stderr)
    print(f"export KUBECONFIG={c.kubeconfig}")
    mine = started.cluster.kubeconfig if req.provider == "existing" else None  # the journal's cluster
    also = f" --kubeconfig {mine}" if mine else ""
    print(f"# stop it with: schedgate down {started.run_dir}{also}")
    return 0


def _status(args: argparse.Namespace) -> int:
    runs = run_dirs()
    if not runs:
        print("schedgate: no clusters running")
        return 0
    for run in runs:
        info = read_info(run)
        pids = run_pids(run)
        alive = [name for pid, name in pids if str(run) in cmdline_of(pid)]
        in_use = owner_alive(run) and (owner(run) or (0, ""))[0] != os.getpid()
        state = "kept" if (run / "keep").exists() else "in use by a run" if in_use else "orphaned"
        print(f"{run}  [{state}]  {len(alive)}/{len(pids)} processes alive")
        if info:
            print(f"  cluster {info.get('cluster')} ({info.get('definition')}) on {info.get('provider')}, "
                  f"Kubernetes {info.get('kubernetes')}, started {info.get('started')}")
            print(f"  scheduler config {info.get('scheduler_config')}: profiles {', '.join(info.get('profiles', []))}")
            print(f"  export KUBECONFIG={info.get('kubeconfig')}")
    return 0


def _down(args: argparse.Namespace) -> int:
    runs = run_dirs() if args.all else [args.run_dir.absolute()]
    for run in runs:
        if not run.name.startswith(RUN_PREFIX) or foreign(run) is None and owner(run) is None:
            print(f"schedgate: {run}: not a schedgate run folder", file=sys.stderr)
            return 2
        for d in remove_run(run, args.kubeconfig):
            print(f"schedgate: removed {d}")
        if run.exists():  # a journal of another cluster's edits keeps it (remove_run said which)
            return 2
    if args.all and not runs:
        print("schedgate: no clusters running")
    return 0


def _reap(args: argparse.Namespace) -> int:
    for d in reap_orphans(kubeconfig=args.kubeconfig):
        print(f"schedgate: removed {d}")
    return 0


def _check(args: argparse.Namespace) -> int:
    """Every file judged, each in one line (a bad one on stderr, naming its file and field); exit 2 if any is bad."""
    check_kubernetes_version(args.kubernetes_version)
    if args.scheduler_binary and args.scheduler_module:
        raise SchedgateError("--scheduler-binary and --scheduler-module both name the scheduler that judges: give one")
    given = args.scheduler_binary or (ensure_scheduler_module(args.scheduler_module, sys.stderr)
                                      if args.scheduler_module and not args.no_scheduler else None)
    judged: dict[str, str] = {}
    binary: list[Path] = []
    version: list[str] = []

    def judge(config: SchedulerConfig) -> str:
        """What kube-scheduler said of ``config`` ('' when not asked); a refusal raises, in one line."""
        if args.no_scheduler or config.black_box is not None:
            return ""
        if not binary:  # the binary the run would start: the one given (its own version), else the pin's build
            binary.append(given or ensure_binaries(sys.stderr).kube_scheduler)
            version.append(reported_version(binary[0]) if given else pinned_kubernetes_version())
        key = json.dumps(config.doc, sort_keys=True)
        if key not in judged:
            said = check_with_scheduler(config, binary[0], version[0])
            shown = f" ({args.scheduler_module or binary[0]})" if given else ""
            judged[key] = f"kube-scheduler {version[0]}{shown} {said}"
        return judged[key]

    bad = 0
    for f in args.files:
        try:
            print(_checked(f, judge))
        except SchedgateError as e:
            print(f"schedgate: {e}", file=sys.stderr)
            bad += 1
    if bad and len(args.files) > 1:
        print(f"schedgate: {bad} of {len(args.files)} files refused", file=sys.stderr)
    return 2 if bad else 0


def _checked(f: Path, judge: Callable[[SchedulerConfig], str]) -> str:
    """One file's line: what it is, and what the scheduler that will run it says of its configuration."""
    doc, _ = read_yaml(f, "schedgate")
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind == "Cluster":
        d = load_definition(f)
        return f"{f}: ok — cluster {d.name}, {len(d.nodes())} nodes"
    if kind == "KubeSchedulerConfiguration":
        config = load_scheduler_config(f)
        said = judge(config)
        return f"{f}: ok — scheduler configuration, profiles {', '.join(config.profile_names)}" + \
            (f"; {said} it" if said else "")
    sc = load_scenario(f)
    said = judge(sc.scheduler) if sc.scheduler is not None else ""
    return (f"{f}: ok — scenario {sc.name}, {len(sc.steps)} steps, {len(sc.pods)} pods, cluster {sc.definition.name}"
            + (f"; {said} its scheduler configuration" if said else ""))


def _schema(args: argparse.Namespace) -> int:
    if args.write:
        from schedgate.cli import reference  # builds pytest's own parser: pytest only for this command

        for path in [*write_schemas(), *write_pages(), *reference.write_pages()]:
            print(f"schedgate: wrote {path}")
    elif args.path:
        print(SCHEMAS / FILES[args.kind])
    else:
        sys.stdout.write(render(args.kind))
    return 0


def _repro(args: argparse.Namespace) -> int:
    load_scenario(args.file)  # a bad file: one line, exit 2, nothing started
    opts = list(args.options)
    if opts[:1] == ["--"]:
        opts = opts[1:]
    pytest_args = [str(args.file), "-p", "no:cacheprovider", "--artifacts-on", "always",
                   "-W", "ignore::pytest.PytestAssertRewriteWarning", *_scenario_refs(args.file), *opts]
    import pytest  # half a second to import: only for the commands that run it

    return int(pytest.main(pytest_args))


def _scenario_refs(path: Path) -> list[str]:
    """The file's own cluster and scheduler (inline, a file or a role's) as the session's: its header names
    what runs, and the file runs on the session's cluster."""
    return ["-o", f"schedgate_scenario={path}"]


def _tools(args: argparse.Namespace) -> int:
    check_kubernetes_version(args.kubernetes_version)
    if args.what == "pins":
        for pin in pins(go_module_dir()).values():
            print(f"{pin.version} etcd {pin.etcd_version} {pin.modfile.relative_to(go_module_dir().parent)}"
                  + (" (default)" if pin.default else f" -tags {','.join(pin.tags)}"))
    elif args.what == "version":
        print(pinned_kubernetes_version())
    elif args.what == "ldflags":
        print(ldflags(pinned_kubernetes_version()))
    elif args.what == "goflags":  # the pin's -modfile and -tags, for a `go build` run in go/ (scripts/node-binaries)
        print(" ".join(selected_pin().go_flags()))
    elif args.what == "kwok":  # the node agent's binary (built from go/kwok/ if missing)
        print(ensure_kwok(sys.stderr))
    else:
        bins = ensure_binaries()
        if args.what == "path":
            print(bins.directory)
        else:
            print(f"schedgate: binaries for Kubernetes {bins.kubernetes_version} ready in {bins.directory}",
                  file=sys.stderr)
    return 0


def _init(args: argparse.Namespace) -> int:
    written = init(args.folder, args.schedgate)
    for path in written:
        print(f"schedgate: wrote {path}")
    print(f"schedgate: now: cd {args.folder} && make e2e")
    return 0


ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": _up, "status": _status, "down": _down, "repro": _repro, "check": _check, "reap": _reap, "tools": _tools,
    "init": _init, "snapshot": snapshot.run, "schema": _schema, "fuzz": fuzz.run}
