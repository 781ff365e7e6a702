"""Scenario steps that start and stop schedulers, and drive the fault-injecting extender."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from schedgate.faults.extender import Extender
from schedgate.scenarios.declare import Declared, arg, one_of, read_string
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.jsontypes import BOOL, CONFIG, STR, Schema, ref, whole
from schedgate.spec.roles import SCENARIO_ROLES
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.spec.shape import Key, Shape
from schedgate.spec.validate import MAX_SECONDS


def _read_config(p: Parser, raw: Any, w: str) -> str | SchedulerConfig:
    """A role's name (SCENARIO_ROLES), else the configuration file it names, loaded."""
    cfg = p.v.string(raw, w)
    return cfg if cfg in SCENARIO_ROLES else p.config(cfg)


@dataclass(frozen=True)
class SchedulerStep(Declared):
    """A scheduler named by exactly one of ``profile`` (a running one's) and ``config`` (a file or role)."""

    RULE: ClassVar[Schema] = {"oneOf": [{"required": ["profile"]}, {"required": ["config"]}]}

    profile: str | None = arg("profile", "the profile of a scheduler the run started", STR, read_string, default=None)
    config: str | SchedulerConfig | None = arg("config", CONFIG["description"],
                                               {**CONFIG, "examples": list(SCENARIO_ROLES)}, _read_config, default=None)

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> None:
        if ("profile" in m) == ("config" in m):
            p.v.fail(w, "needs exactly one of: profile (a running scheduler's profile), config (a file or role)")


@step("stopScheduler")
@dataclass(frozen=True)
class StopScheduler(SchedulerStep):
    """Stop a running scheduler (``profile``)."""

    REFUSED: ClassVar[Mapping[str, str]] = {
        "config": "stopScheduler takes a running scheduler's profile, not a configuration"}

    def run(self, r: Run) -> None:
        assert self.profile is not None  # the rule, with config refused
        r.cluster.scheduler(self.profile).stop()


@step("startScheduler")
@dataclass(frozen=True)
class StartScheduler(SchedulerStep):
    """A stopped scheduler again (``profile``), or another one: a role or a configuration file (``config``)."""

    def run(self, r: Run) -> None:
        if self.profile is not None:
            proc = r.cluster.scheduler(self.profile)
            if not proc.alive():
                proc.start()
            return
        assert self.config is not None  # the rule
        r.start_scheduler(r.role_config(self.config) if isinstance(self.config, str) else self.config)


EXTENDER_KINDS = ("hard", "soft")
FAULTS = Shape("faults", "the extender's faults (the rest off)", (
    Key("latency", "seconds before each answer", {"type": "number", "minimum": 0, "maximum": MAX_SECONDS}),
    Key("status", "an HTTP status to answer with", whole(100, 599)),
    Key("malformed", "answer with a body that is no JSON", BOOL),
    Key("drop", "nodes left out of its answer, without failing them", ref("nodeSet")),
    Key("down", "connection refused on its port (false: back on it)", BOOL),
))


@dataclass(frozen=True)
class ExtenderFaults:
    """The faults an extender step switches on (the rest off)."""

    latency: float = 0.0
    status: int | None = None
    malformed: bool = False
    drop: tuple[str, ...] = ()
    down: bool = False



def _read_slots(p: Parser, raw: Any, w: str) -> tuple[tuple[str, int], ...]:
    out: dict[str, int] = {}
    for n, c in p.v.mapping(raw, w).items():
        for node in p.node_set(n, f"{w}.{n}"):
            out[node] = p.v.whole(c, f"{w}.{n}")
    return tuple(out.items())


def _read_faults(p: Parser, raw: Any, w: str) -> ExtenderFaults:
    v = p.v
    f = FAULTS.read(v, raw or {}, w)
    return ExtenderFaults(
        latency=v.number(f["latency"], f"{w}.latency", maximum=MAX_SECONDS) if "latency" in f else 0.0,
        status=v.whole(f["status"], f"{w}.status", minimum=100, maximum=599) if "status" in f else None,
        malformed=v.flag(f["malformed"], f"{w}.malformed") if "malformed" in f else False,
        drop=tuple(p.node_set(f["drop"], f"{w}.drop")) if "drop" in f else (),
        down=v.flag(f["down"], f"{w}.down") if "down" in f else False)


@step("extender")
@dataclass(frozen=True)
class ExtenderStep(Declared):
    """Start the extender and its scheduler (``kind``), set its slots, switch its faults."""

    kind: str | None = arg("kind", "start the scheduler of role extender-hard or extender-soft (the first extender "
                                   "step needs it)", {"enum": list(EXTENDER_KINDS)}, one_of(EXTENDER_KINDS),
                           default=None)
    slots: tuple[tuple[str, int], ...] | None = arg(
        "slots", "node or pool -> free slots", {"type": "object", "additionalProperties": whole()}, _read_slots,
        default=None)
    faults: ExtenderFaults | None = arg("faults", "the faults to switch on; {} clears all",
                                        {"anyOf": [ref("faults"), {"type": "null"}]}, _read_faults, default=None)

    def run(self, r: Run) -> None:
        if r.extender is None:
            if self.kind is None:
                raise AssertionError("the first extender step must say its kind (hard or soft)")
            r.extender = Extender(host=r.cluster.backend.extender_host).up()
        ext = r.extender
        if self.slots is not None:
            ext.slots = dict(self.slots)
        if (f := self.faults) is not None:
            ext.faults.clear()
            ext.faults.latency = f.latency
            ext.faults.status = f.status
            ext.faults.malformed = f.malformed
            ext.faults.drop = set(f.drop)
            if f.down:
                ext.down()
            else:
                ext.up()
        if self.kind is not None:
            r.start_scheduler(r.role_config(f"extender-{self.kind}").with_extender(ext.url))
