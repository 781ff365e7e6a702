"""Scenario steps that start and stop schedulers, and drive the fault-injecting extender."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.faults.extender import Extender
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.roles import SCENARIO_ROLES
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.validate import MAX_SECONDS, short


def _scheduler_target(p: Parser, raw: Any, w: str) -> tuple[str | None, str | None, SchedulerConfig | None]:
    """(profile, role, config): exactly one of a running profile, a role, or a configuration file."""
    v = p.v
    m = v.mapping(raw, w, allowed=("profile", "config"))
    if ("profile" in m) == ("config" in m):
        v.fail(w, "needs exactly one of: profile (a running scheduler's profile), config (a file or role)")
    if "profile" in m:
        return v.string(m["profile"], f"{w}.profile"), None, None
    cfg = v.string(m["config"], f"{w}.config")
    if cfg in SCENARIO_ROLES:
        return None, cfg, None
    return None, None, p.config(cfg)


@step("stopScheduler")
@dataclass(frozen=True)
class StopScheduler:
    profile: str

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> StopScheduler:
        profile, _, _ = _scheduler_target(p, raw, w)
        if profile is None:
            p.v.fail(f"{w}.config", "stopScheduler takes a running scheduler's profile, not a configuration")
        return cls(profile=profile)

    def run(self, r: Run) -> None:
        r.cluster.scheduler(self.profile).stop()


@step("startScheduler")
@dataclass(frozen=True)
class StartScheduler:
    """A stopped scheduler again (``profile``), or another one: a role or a configuration file (``config``)."""

    profile: str | None
    role: str | None
    config: SchedulerConfig | None

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> StartScheduler:
        return cls(*_scheduler_target(p, raw, w))

    def run(self, r: Run) -> None:
        if self.profile is not None:
            proc = r.cluster.scheduler(self.profile)
            if not proc.alive():
                proc.start()
            return
        r.start_scheduler(r.role_config(self.role) if self.role else self._config())

    def _config(self) -> SchedulerConfig:
        assert self.config is not None
        return self.config


EXTENDER_KINDS = ("hard", "soft")
FAULTS = ("latency", "status", "malformed", "drop", "down")


@step("extender")
@dataclass(frozen=True)
class ExtenderStep:
    """Start the extender and its scheduler (``kind``), set its slots, switch its faults."""

    kind: str | None = None
    slots: tuple[tuple[str, int], ...] | None = None
    latency: float = 0.0
    status: int | None = None
    malformed: bool = False
    drop: tuple[str, ...] = ()
    down: bool = False
    faults: bool = False  # whether the step sets faults at all

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> ExtenderStep:
        v = p.v
        m = v.mapping(raw, w, allowed=("kind", "slots", "faults"))
        kind = None
        if "kind" in m:
            if m["kind"] not in EXTENDER_KINDS:
                v.fail(f"{w}.kind", f"must be one of {', '.join(EXTENDER_KINDS)}, got {short(m['kind'])}")
            kind = str(m["kind"])
        slots = None
        if "slots" in m:
            out: dict[str, int] = {}
            for n, c in v.mapping(m["slots"], f"{w}.slots").items():
                for node in p.node_set(n, f"{w}.slots.{n}"):
                    out[node] = v.whole(c, f"{w}.slots.{n}")
            slots = tuple(out.items())
        if "faults" not in m:
            return cls(kind=kind, slots=slots)
        f = v.mapping(m["faults"] or {}, f"{w}.faults", allowed=FAULTS)
        fw = f"{w}.faults"
        return cls(kind=kind, slots=slots, faults=True,
                   latency=v.number(f["latency"], f"{fw}.latency", maximum=MAX_SECONDS) if "latency" in f else 0.0,
                   status=v.whole(f["status"], f"{fw}.status", minimum=100, maximum=599) if "status" in f else None,
                   malformed=v.flag(f["malformed"], f"{fw}.malformed") if "malformed" in f else False,
                   drop=tuple(p.node_set(f["drop"], f"{fw}.drop")) if "drop" in f else (),
                   down=v.flag(f["down"], f"{fw}.down") if "down" in f else False)

    def run(self, r: Run) -> None:
        if r.extender is None:
            if self.kind is None:
                raise AssertionError("the first extender step must say its kind (hard or soft)")
            r.extender = Extender(host=r.cluster.extender_host).up()
        ext = r.extender
        if self.slots is not None:
            ext.slots = dict(self.slots)
        if self.faults:
            ext.faults.clear()
            ext.faults.latency = self.latency
            ext.faults.status = self.status
            ext.faults.malformed = self.malformed
            ext.faults.drop = set(self.drop)
            if self.down:
                ext.down()
            else:
                ext.up()
        if self.kind is not None:
            r.start_scheduler(r.role_config(f"extender-{self.kind}").with_extender(ext.url))
