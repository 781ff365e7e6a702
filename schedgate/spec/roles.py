"""Scheduler configurations a run starts beside the one under test, by role.

One table serves the pytest options (``--slots-scheduler-config FILE``), the
scenario files (``startScheduler: {config: network-slots}``) and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Role:
    name: str        # what scenario files call it
    option: str      # the pytest option that replaces its file
    default: str     # the shipped file (relative to the project folder)
    help: str
    in_scenarios: bool = True  # startScheduler may name it
    profile: str = ""  # the schedulerName a black box standing in for it serves (default: its file's first)

    @property
    def dest(self) -> str:
        """The option's attribute name (``--slots-scheduler-config`` -> ``slots_scheduler_config``)."""
        return self.option.lstrip("-").replace("-", "_")


ROLES: tuple[Role, ...] = (
    Role("network-slots", "--slots-scheduler-config", "clusters/profiles/network-slots.yaml",
         "scheduler configuration enabling the NetworkSlots plugin with fault injection (profile gpu-network-slots)"),
    Role("shared-slots", "--shared-slots-scheduler-config", "clusters/profiles/shared-slots.yaml",
         "two NetworkSlots profiles sharing one slot pool, each run in its own process (gpu-slots-a, gpu-slots-b)",
         in_scenarios=False),
    Role("tenant-filter", "--tenant-scheduler-config", "clusters/profiles/tenant-filter.yaml",
         "scheduler configuration enabling the TenantFilter plugin (profile tenant-scheduler)"),
    Role("extender-hard", "--hard-extender-config", "clusters/profiles/extender-hard.yaml",
         "scheduler configuration whose extender is a hard filter (profile gpu-extender-hard)"),
    Role("extender-soft", "--soft-extender-config", "clusters/profiles/extender-soft.yaml",
         "scheduler configuration whose extender is a soft dependency (profile gpu-extender-soft)"),
    Role("gpu-quota", "--gpu-quota-scheduler-config", "clusters/profiles/gpu-quota.yaml",
         "scheduler configuration enabling the GPUQuota plugin, which reads GPUQuota objects (a CRD) "
         "(profile gpu-quota-scheduler)"),
    Role("gang", "--gang-scheduler-config", "clusters/profiles/gang.yaml",
         "scheduler configuration enabling the Gang plugin: groups admitted whole at Permit (profile gang-scheduler)"),
    Role("pool", "--pool-scheduler-config", "clusters/profiles/pool-scheduler.yaml",
         "the reference independent scheduler, a BlackBoxScheduler (profile pool-scheduler): what the pool-* "
         "scenario files run against", profile="pool-scheduler"),
    Role("conformance", "--conformance-scheduler-config", "clusters/profiles/conformance.yaml",
         "upstream's default plugins under profile conformance-scheduler, in the scheduler under test's binary: "
         "what e2e/conformance/ runs against"),
)
BY_NAME = {r.name: r for r in ROLES}
SCENARIO_ROLES = tuple(r.name for r in ROLES if r.in_scenarios)


def role(name: str) -> Role:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown scheduler role {name!r} (known: {', '.join(BY_NAME)})") from None
