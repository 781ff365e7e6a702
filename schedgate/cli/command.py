"""The ``schedgate`` command's parser: every subcommand, argument and option with its help, the one place
``schedgate --help`` and ``docs/reference/cli.md`` (:mod:`schedgate.cli.reference`) read them from.
``mutants`` and ``matrix`` parse their own arguments (:func:`schedgate.cli.mutants.parser`,
:func:`schedgate.cli.matrix.parser`); their entries here copy those parsers' arguments."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedgate.cli import bisect, fuzz, matrix, mutants, snapshot
from schedgate.pytest_plugin.options import add_cli_options
from schedgate.scenarios.schema import FILES

KUBECONFIG_HELP = ("the cluster an existing-provider run edited: its journaled edits are undone in this "
                   "cluster only, and only when the journal names this file (a run folder never chooses "
                   "the cluster written to); without it such a folder is kept and named")

EPILOG = """\
examples:
  schedgate up                                   # inference cluster + gpu-packing-scheduler profile
  export KUBECONFIG=...                          # as printed; kubectl get nodes, create pods...
  schedgate repro e2e/scenarios/hard-constraint.scenario.yaml
  schedgate repro my-bug.scenario.yaml --scheduler-binary ./kube-scheduler --keep-cluster
  schedgate down --all

Scenario files are described in docs/guides/scenario-files.md.
"""


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="schedgate", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Start Kubernetes clusters with a scheduler under test, and reproduce scheduling "
                    "situations written as scenario files.")
    sub = ap.add_subparsers(dest="action", required=True, metavar="COMMAND")
    up = sub.add_parser("up", help="start a cluster with the scheduler profile under test and leave it running",
                        description="Start a cluster and leave it running. Prints the KUBECONFIG to export and "
                                    "the command that stops it. Builds the pinned binaries first if they are "
                                    "not built yet (several minutes the first time), showing progress as it goes (the "
                                    "schedgate logger; under pytest it is captured with each test's setup). The "
                                    "options are pytest's, from the same table.")
    add_cli_options(up)
    sub.add_parser("status", help="list the clusters schedgate started and whether they are alive",
                   description="For each cluster schedgate started: its run folder, whether it is kept ('up', "
                               "--keep-cluster), in use by a run or orphaned, how many of its processes are alive, "
                               "its cluster, provider, Kubernetes version and scheduler profiles, and the "
                               "KUBECONFIG to export.")
    down = sub.add_parser("down", help="stop a cluster left running by 'up' or --keep-cluster",
                          description="Stop the processes of one run folder, or of every one, and remove it.")
    which = down.add_mutually_exclusive_group(required=True)
    which.add_argument("run_dir", nargs="?", type=Path, help="the run folder 'up' or 'status' printed")
    which.add_argument("--all", action="store_true", help="stop every cluster schedgate started")
    down.add_argument("--kubeconfig", type=Path, metavar="FILE", help=KUBECONFIG_HELP)
    repro = sub.add_parser(
        "repro", help="run one scenario file and keep its artifacts and placement picture",
        description="Validate a scenario file, run it (pytest under the hood) and write its artifacts "
                    "folder with placement.html whatever the outcome. Options after the file go to pytest "
                    "and schedgate, e.g. --scheduler-config FILE, --scheduler-binary FILE, --keep-cluster, "
                    "--artifacts DIR.")
    repro.add_argument("file", type=Path, help="a *.scenario.yaml file")
    repro.add_argument("options", nargs=argparse.REMAINDER, help="more pytest/schedgate options")
    check = sub.add_parser("check", help="validate scenario files, cluster definitions and scheduler "
                                         "configurations without starting anything",
                           description="Validate files without starting a cluster: a scenario (and the scheduler "
                                       "configuration it names), a cluster definition (kind: Cluster), a "
                                       "KubeSchedulerConfiguration. A scheduler configuration is also run "
                                       "through the pinned kube-scheduler's own validation (built first if it "
                                       "is not), so check and start agree.")
    check.add_argument("files", type=Path, nargs="+", metavar="FILE",
                       help="scenario files, cluster definitions and scheduler configurations, in any mix")
    check.add_argument("--scheduler-binary", type=Path, metavar="PATH",
                       help="the kube-scheduler that judges scheduler configurations, named by the version it "
                            "reports (default: schedgate's build of the pin, with its plugins)")
    check.add_argument("--scheduler-module", metavar="SOURCE",
                       help="an out-of-tree scheduler's Go module (a folder, or MODULE@VERSION[/cmd/path]), built as "
                            "a run with it would, judges them instead")
    check.add_argument("--kubernetes-version", metavar="VERSION",
                       help="the pin (1.36, v1.36.3) whose kube-scheduler judges them, as a run with it would "
                            "(default: $SCHEDGATE_KUBERNETES_VERSION, else go/go.mod's)")
    check.add_argument("--no-scheduler", action="store_true",
                       help="check the files' own fields only: do not run kube-scheduler")
    schema = sub.add_parser("schema", help="print the JSON Schema editors complete and check scenario files with",
                            description="Print the JSON Schema (draft 2020-12) of scenario files, or of cluster "
                                        "definitions, generated from the loader's own fields. Both are shipped: "
                                        "a file's header '# yaml-language-server: $schema=PATH' points an "
                                        "editor at one (--path prints it).")
    schema.add_argument("--kind", choices=tuple(FILES), default="scenario", help="which (default: scenario)")
    out = schema.add_mutually_exclusive_group()
    out.add_argument("--path", action="store_true", help="print where the shipped file is instead")
    out.add_argument("--write", action="store_true", help="regenerate both shipped files from the loader and, in a "
                     "checkout, the generated pages of docs/reference (steps, pod fields, this command, the "
                     "pytest options)")
    reap = sub.add_parser("reap", help="remove processes and folders that crashed runs left behind",
                          description="Stop the processes and remove the run folders of runs whose owner is gone "
                                      "and that were not kept; a kept cluster stays ('down' stops it). Only your "
                                      "own run folders (owned by you, mode 0700, no link) are read; another "
                                      "user's is named once and left alone. Nothing a folder holds is run: a kind "
                                      "cluster's containers are removed with your own docker.")
    reap.add_argument("--kubeconfig", type=Path, metavar="FILE", help=KUBECONFIG_HELP)
    tools = sub.add_parser("tools", help="build or locate the pinned Kubernetes binaries (what `make tools` runs)")
    tools.add_argument("what", choices=("build", "path", "version", "ldflags", "goflags", "pins", "kwok"), nargs="?",
                       default="build", help="build: build what the cache lacks; path: print the binaries' "
                       "folder; version: the pinned Kubernetes version; ldflags: the -ldflags they are built with; "
                       "goflags: the pin's -modfile and -tags, for a go build in go/; pins: every pin; kwok: the "
                       "node agent's binary (built if missing)")
    tools.add_argument("--kubernetes-version", metavar="VERSION", help="the pin (1.36, v1.36.3) to build or name; "
                       "default: $SCHEDGATE_KUBERNETES_VERSION, else go/go.mod's")
    new = sub.add_parser("init", help="write a repository of your own that tests your scheduler: a cluster, a "
                                      "profile, a scenario file, a Python scenario, a Makefile, a CI workflow")
    new.add_argument("folder", nargs="?", type=Path, default=Path("."), help="where (default: here)")
    new.add_argument("--schedgate", metavar="SOURCE", help="where its Makefile installs schedgate from "
                                                           "(default: this schedgate's checkout)")
    snapshot.add_parser(sub)
    fuzz.add_parser(sub)
    for own, what in ((mutants.parser(), "run the suite against each broken scheduler in clusters/mutants"),
                      (matrix.parser(), "run the suite once per pinned Kubernetes minor and print one table"),
                      (bisect.parser(), "find the released Kubernetes version where a file's verdict changes")):
        name = own.prog.split()[-1]  # main() hands its arguments to the module's own parser
        sub.add_parser(name, parents=[own], add_help=False, help=f"{what} (`schedgate {name} --help`)",
                       description=own.description, epilog=own.epilog)
    return ap
