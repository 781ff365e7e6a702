"""schedgate fuzz: generated clusters and pods through the real scheduler, checked against what every
correct scheduler keeps, the smallest failure written as a scenario file that ``schedgate repro`` replays.

Exit 0: every example kept the invariants; 1: one did not (the file is written); 2: bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from schedgate.errors import SchedgateError
from schedgate.fuzz.bounds import FEATURES, Bounds
from schedgate.objects.groups import PLUGIN as GANG_PLUGIN
from schedgate.providers import start_cluster
from schedgate.providers.base import ClusterRequest, binaries
from schedgate.pytest_plugin.options import DEFAULT_SCHEDULER_CONFIG, project_path, stand_in
from schedgate.scenarios.perf_steps import BASELINES, baseline_from
from schedgate.spec.cluster import parse_definition
from schedgate.spec.schedconfig import load_scheduler_config

# The cluster the control plane starts with; each example's nodes replace it.
FIRST = {"apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": "fuzz",
         "nodes": [{"name": "node-0", "capacity": {"cpu": "2", "memory": "4Gi", "pods": 110}}]}


def add_parser(sub: Any) -> None:
    d = Bounds()
    p = sub.add_parser("fuzz", help="generated clusters and pods through the real scheduler; the smallest failure "
                                    "written as a scenario file", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0, help="the examples' seed: the same seed draws the same examples")
    p.add_argument("--examples", type=int, default=d.examples, help=f"examples to draw (default {d.examples})")
    p.add_argument("--max-nodes", type=int, default=d.max_nodes, help=f"nodes an example has at most ({d.max_nodes})")
    p.add_argument("--max-pods", type=int, default=d.max_pods, help=f"pods an example makes at most ({d.max_pods})")
    p.add_argument("--budget", type=int, default=d.budget, metavar="SECONDS",
                   help=f"seconds for drawing and shrinking together (default {d.budget})")
    p.add_argument("--without", default="", metavar="FEATURE,...",
                   help=f"leave these out of the examples, for a scheduler that does not claim them: "
                        f"{', '.join(FEATURES)} (gangs are drawn only where the profile enables schedgate's "
                        f"{GANG_PLUGIN} plugin)")
    p.add_argument("--scheduler-config", type=Path, help=f"the configuration under test ({DEFAULT_SCHEDULER_CONFIG})")
    p.add_argument("--profile", help="the profile the pods name (default: the configuration's first profile other "
                                     "than default-scheduler)")
    p.add_argument("--scheduler-binary", type=Path, help="the kube-scheduler build to run the configuration with")
    p.add_argument("--baseline", choices=BASELINES, help="differential: ask a baseline about every pod the "
                   "scheduler under test refuses, in the same state (in-tree: the profile without out-of-tree "
                   "plugins; same: the profile itself, for another binary)")
    p.add_argument("--baseline-scheduler-config", type=Path, help="the baseline's configuration (with --baseline)")
    p.add_argument("--baseline-scheduler-binary", type=Path, help="the kube-scheduler build that runs the baseline "
                                                                  "(with --baseline; default: the pinned one)")
    p.add_argument("-o", "--output", type=Path, default=Path("artifacts/fuzz"),
                   help="where the smallest failure is written (default artifacts/fuzz)")


def run(args: argparse.Namespace) -> int:
    from schedgate.fuzz.run import Fuzzer, write  # the generator and Hypothesis: only for a fuzz run

    if args.seed < 0:
        raise SchedgateError(f"--seed: must be 0 or more, got {args.seed}")
    without = frozenset(f for f in args.without.split(",") if f)
    Bounds(without=without)  # a feature named wrong is said before the configuration is read
    config_file = project_path(args.scheduler_config or DEFAULT_SCHEDULER_CONFIG)
    config = stand_in(load_scheduler_config(config_file), DEFAULT_SCHEDULER_CONFIG)
    names = config.profile_names
    profile = args.profile or next((n for n in names if n != "default-scheduler"), names[0])
    if profile not in names:
        raise SchedgateError(f"--profile {profile!r}: not a profile of {config_file} ({', '.join(names)})")
    if config.enabled_args(profile, GANG_PLUGIN) is None:  # gangs only for a profile that admits them
        without |= {"gangs"}
    bounds = Bounds(examples=args.examples, max_nodes=args.max_nodes, max_pods=args.max_pods, budget=args.budget,
                    without=without)
    for option in ("scheduler_binary", "baseline_scheduler_binary"):
        if (path := getattr(args, option)) is not None and not path.is_file():
            raise SchedgateError(f"--{option.replace('_', '-')} {path}: no such file")
    if args.baseline is None and (args.baseline_scheduler_config or args.baseline_scheduler_binary):
        raise SchedgateError("--baseline-scheduler-config/--baseline-scheduler-binary: only with --baseline")
    given = (load_scheduler_config(project_path(args.baseline_scheduler_config))
             if args.baseline_scheduler_config else None)
    req = ClusterRequest(provider="local", definition=parse_definition(FIRST, "schedgate fuzz"),
                         scheduler_config=config, scheduler_binary=args.scheduler_binary)
    started = start_cluster(req, out=sys.stderr)
    fuzzer = Fuzzer(cluster=started.cluster, config=config, config_file=config_file, profile=profile, bounds=bounds,
                    seed=args.seed, differential=args.baseline,
                    baseline=baseline_from(given, args.baseline_scheduler_binary,
                                           lambda: binaries(None).kube_scheduler))
    try:
        found = fuzzer.search()
        if found is None:
            print(f"schedgate: fuzz --seed {args.seed}: {fuzzer.ran} examples run, every invariant kept",
                  file=sys.stderr)
            return 0
        said = without - {"gangs"} if config.enabled_args(profile, GANG_PLUGIN) is None else without
        path = write(found, args.output, args.seed, config_file, fuzzer.run_file,
                     f" --without {','.join(sorted(said))}" if said else "")
        print(f"schedgate: fuzz --seed {args.seed}: an invariant broken ({fuzzer.ran} examples run, shrinking "
              "included):\n"
              f"{found.message}\nschedgate: the smallest failing example: {path}\n"
              f"schedgate: replay it: schedgate repro {path} --scheduler-config {config_file}", file=sys.stderr)
        return 1
    finally:
        fuzzer.close()
        started.stop()
