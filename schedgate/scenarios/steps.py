"""The scenario steps: one class each, which parses its own fields and runs itself.

A step class registers under its name with :func:`step`; it is a frozen
dataclass of its validated arguments, with ``parse(parser, raw, where)`` (every
problem one line naming file, field and line) and ``run(run)``. Adding a step
is one class; the loader reads the registry. A step whose fields each stand alone
declares them on the class (:mod:`.declare`): its ``parse``, schema and reference
entry come from the declarations. Pod steps and sequencing waits are
here, node edits in :mod:`.node_steps`, schedulers and the extender in
:mod:`.control_steps`, ``expect`` and its outcomes in :mod:`.outcomes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from schedgate.kube.watch import Matcher, wait_for
from schedgate.objects.matchers import bound, decided, gone, scheduling_error, unschedulable
from schedgate.scenarios.declare import (
    TIMEOUT,
    Declared,
    arg,
    one_of,
    read_annotations,
    read_first,
    read_pods,
    read_timeout,
)
from schedgate.scenarios.parse import DEFAULT_TIMEOUT, MAX_PODS, Parser
from schedgate.scenarios.run import Action, Run
from schedgate.scenarios.template import TEMPLATE_FIELDS, Template
from schedgate.spec.jsontypes import BOOL, DNS, STR, listing, ref, whole

Parse = Callable[[Parser, Any, str], Action]
STEPS: dict[str, Parse] = {}
A = TypeVar("A", bound=type)


def step(name: str) -> Callable[[A], A]:
    """Register a step class under ``name`` (its ``parse`` classmethod builds it from the file)."""

    def register(cls: A) -> A:
        STEPS[name] = cls.parse  # type: ignore[attr-defined]
        return cls

    return register


# -- pods ----------------------------------------------------------------------------
def _read_template(p: Parser, raw: Any, w: str) -> Template:
    """A template of the file, by name."""
    t = p.v.string(raw, w)
    if t not in p.templates:
        p.v.fail(w, f"unknown template {t!r} (templates: {', '.join(p.templates) or 'none'})")
    return p.templates[t]


def _read_cycle(p: Parser, raw: Any, w: str) -> tuple[int, ...]:
    if not isinstance(raw, list) or not raw:
        p.v.fail(w, "must be a non-empty list of GPU counts, e.g. [1, 1, 4, 1, 1]")
    return tuple(p.v.whole(g, f"{w}[{i}]") for i, g in enumerate(raw))


def pod_names(name: str, count: int) -> tuple[str, ...]:
    """1: ``name``; N: ``name-1`` .. ``name-N``."""
    return (name,) if count == 1 else tuple(f"{name}-{n}" for n in range(1, count + 1))


@step("createPods")
@dataclass(frozen=True, kw_only=True)
class CreatePods(Declared):
    """``name``, ``count`` (``name-1..name-N``), ``template`` and any template field, ``oneAtATime``,
    ``gpuCycle`` (pod i asks for the list's i-th GPU count, cycling: an arrival sequence). Beyond what the
    fields say, schedgate writes four things into each pod, each replaced by ``pod:`` where the file gives it
    (and each in the artifacts' ``pods.yaml``): ``terminationGracePeriodSeconds: 0`` (a victim or a deleted
    pod goes at once; give ``pod: {spec: {terminationGracePeriodSeconds: 30}}`` for a real cluster's timing,
    which the node agent then keeps), ``automountServiceAccountToken: false``, the label
    ``app.kubernetes.io/managed-by: schedgate``, and one container ``main`` of the placeholder image."""

    MORE: ClassVar[tuple[str, ...]] = TEMPLATE_FIELDS  # the pod fields (scenarios.template), over the template's

    name: str = arg("name", "the pod's name; with count, the names' prefix", DNS, lambda p, x, w: p.v.dns_label(x, w))
    count: int = arg("count", "1: name; N: name-1..name-N", whole(1, MAX_PODS),
                     lambda p, x, w: p.v.whole(x, w, minimum=1, maximum=MAX_PODS), default=1)
    template: Template = arg("template", "a template of the file; the step's pod fields go over its",
                             STR, _read_template, default=Template())
    one_at_a_time: bool = arg("oneAtATime", "wait until each pod is bound or refused before the next", BOOL,
                              lambda p, x, w: p.v.flag(x, w), default=False)
    timeout: float = arg("timeout", "seconds (default 30)", TIMEOUT, read_timeout, default=DEFAULT_TIMEOUT)
    gpu_cycle: tuple[int, ...] = arg("gpuCycle", "pod i asks for the i-th count, cycling", listing(whole(), 1),
                                     _read_cycle, default=())

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """In the order they were read before they were declared: the template with the step's pod fields over
        it, the name and count (the pods created, each in its group), gpuCycle (not with gpus)."""
        base = read_first(cls, p, m, w, ("template",)).get("template", Template())
        template = base.merged(p.template(m, w))
        p.check_pod(template, w)
        values = {**read_first(cls, p, m, w, ("name", "count")), "template": template}
        names = list(pod_names(values["name"], values.get("count", 1)))
        p.create(names, w)
        values["template"] = p.join_group(template, names, w)  # members use their group's claim
        if "gpuCycle" in m and "gpus" in m:
            p.v.fail(f"{w}.gpuCycle", "gives each pod's GPUs; remove 'gpus'")
        return {**values, **read_first(cls, p, m, w, ("gpu_cycle",))}

    @property
    def names(self) -> tuple[str, ...]:
        return pod_names(self.name, self.count)

    def template_for(self, i: int) -> Template:
        """The i-th pod's template (its turn of ``gpuCycle``)."""
        return self.template.with_value("gpus", self.gpu_cycle[i % len(self.gpu_cycle)]) if self.gpu_cycle \
            else self.template

    def run(self, r: Run) -> None:
        for i, name in enumerate(self.names):
            pod = self.template_for(i).builder(name).create(r.ns)
            r.pods[name] = pod
            if self.one_at_a_time:
                wait_for(pod, decided(), timeout=self.timeout)


@step("deletePods")
@dataclass(frozen=True)
class DeletePods(Declared):
    """Delete pods at once (grace 0), as a node's eviction or a user's delete."""

    pods: tuple[str, ...] = arg("pods", "the pods to delete", ref("podSet"), read_pods)

    def run(self, r: Run) -> None:
        for name in self.pods:
            r.pod(name).delete()


@step("annotatePods")
@dataclass(frozen=True)
class AnnotatePods(Declared):
    """Set (or with null remove) annotations on live pods, e.g. to lift a NetworkSlots fault."""

    pods: tuple[str, ...] = arg("pods", "the pods to annotate", ref("podSet"), read_pods)
    annotations: tuple[tuple[str, str | None], ...] = arg("annotations", "key -> value; null removes it",
                                                          ref("annotations"), read_annotations)

    def run(self, r: Run) -> None:
        for name in self.pods:
            for k, val in self.annotations:
                r.pod(name).annotate(k, val)


@step("sync")
@dataclass(frozen=True)
class Sync(Declared):
    """Wait until every scheduler has seen every change so far (the cache barrier)."""

    def run(self, r: Run) -> None:
        r.cluster.sync_schedulers()


WAIT_UNTIL: dict[str, Callable[[], Matcher]] = {
    "scheduled": bound, "unschedulable": unschedulable, "schedulingError": scheduling_error,
    "decided": decided, "gone": gone}



@step("wait")
@dataclass(frozen=True)
class Wait(Declared):
    """A sequencing wait on a positive signal (never a fixed time)."""

    pods: tuple[str, ...] = arg("pods", "the pods to wait for", ref("podSet"), read_pods)
    until: str = arg("until", "the signal: " + ", ".join(WAIT_UNTIL), {"enum": list(WAIT_UNTIL)}, one_of(WAIT_UNTIL))
    timeout: float = arg("timeout", "seconds (default 30)", TIMEOUT, read_timeout, default=DEFAULT_TIMEOUT)
    REFUSED: ClassVar[Mapping[str, str]] = {
        "seconds": "fixed sleeps are not supported: wait for a signal ('until') or 'expect'"}

    def run(self, r: Run) -> None:
        r.each(list(self.pods), WAIT_UNTIL[self.until](), self.timeout)
