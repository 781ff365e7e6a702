"""The programs schedgate links on demand beside the pinned commands: the deliberately broken builds of
`make mutants`, and tools a command needs (see :mod:`schedgate.runtime.toolchain`)."""

# Deliberately broken builds for `make mutants`: binary name -> (package, mutant name). The name is
# linked into MUTANT_VAR (each plugin defines its own with go/pkg/mutant: networkslots/mutant.go,
# gang/gang.go); the package compiles as in the correct build, so each mutant costs a link only.
MUTANT_BUILDS = {
    "kube-scheduler-leaky-unreserve": ("./cmd/kube-scheduler", "leaky-unreserve"),
    "kube-scheduler-blocking-permit": ("./cmd/kube-scheduler", "blocking-permit"),
    "kube-scheduler-prebind-no-recheck": ("./cmd/kube-scheduler", "prebind-no-recheck"),
    "kube-scheduler-memory-only-ledger": ("./cmd/kube-scheduler", "memory-only-ledger"),
    "kube-scheduler-gang-early-permit": ("./cmd/kube-scheduler", "gang-early-permit"),
    "kube-scheduler-gang-permit-never-times-out": ("./cmd/kube-scheduler", "gang-permit-never-times-out"),
    "kube-scheduler-gang-no-rollback": ("./cmd/kube-scheduler", "gang-no-rollback"),
    "kube-scheduler-slow-filter": ("./cmd/kube-scheduler", "slow-filter"),
    "kube-scheduler-prefilter-preload": ("./cmd/kube-scheduler", "prefilter-preload"),
    "kube-scheduler-serial-bind": ("./cmd/kube-scheduler", "serial-bind"),
    "kube-scheduler-busy-prefilter": ("./cmd/kube-scheduler", "busy-prefilter"),
    "kube-scheduler-gpu-quota-no-requeue": ("./cmd/kube-scheduler", "gpu-quota-no-requeue"),
    "kube-scheduler-gpu-quota-largest-wins": ("./cmd/kube-scheduler", "gpu-quota-largest-wins"),
    # The scheduler's own (go/cmd/kube-scheduler/main.go).
    "kube-scheduler-no-consumable-capacity": ("./cmd/kube-scheduler", "no-consumable-capacity"),
    "kube-scheduler-preempts-equal-priority": ("./cmd/kube-scheduler", "preempts-equal-priority"),
    "kube-scheduler-crash-after-unschedulable": ("./cmd/kube-scheduler", "crash-after-unschedulable"),
    "kube-scheduler-silent-preemption": ("./cmd/kube-scheduler", "silent-preemption"),
    "kube-scheduler-affinity-ignores-matchfields": ("./cmd/kube-scheduler", "affinity-ignores-matchfields"),
    "kube-scheduler-preemption-unmarked-victims": ("./cmd/kube-scheduler", "preemption-unmarked-victims"),
    # The reference independent scheduler (go/cmd/schedgate-pool-scheduler, go/pkg/poolscheduler/mutants.go).
    "schedgate-pool-scheduler-ignores-gpu-capacity": ("./cmd/schedgate-pool-scheduler", "pool-ignores-gpu-capacity"),
    "schedgate-pool-scheduler-bind-unchecked": ("./cmd/schedgate-pool-scheduler", "pool-bind-unchecked"),
    "schedgate-pool-scheduler-no-requeue": ("./cmd/schedgate-pool-scheduler", "pool-no-requeue"),
}
# Programs a command links when it first needs one (not with the commands): binary name -> package.
TOOL_BUILDS = {
    # judges placements with k8s.io/component-helpers of the pin (go/cmd/schedgate-oracle): `schedgate fuzz`
    "schedgate-oracle": "./cmd/schedgate-oracle",
}
