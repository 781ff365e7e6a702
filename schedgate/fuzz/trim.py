"""The smallest failing document cut further, a step at a time, after Hypothesis has shrunk what it drew.

Hypothesis shrinks the drawn values, and an edit names its node or earlier pod by a number taken modulo
how many there are: taking a pod out of the drawing moves every later edit's target, so shrinking a failure
that needs an edit rarely keeps it failing. Here the cuts are made on the document, where every name stays:
a pod out (its step, a stop and start of its scheduler around it, its deletion, its name in the waits), an
edit out (with the wait before it; a node's later edits with the node), a restart out, a node of the cluster
out (with its edits), a pod's PriorityClass out (the classes' own steps with the last). A cut is kept while the
document still fails with the same rule (:func:`rule`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

EDITS = ("label", "untaint", "addNodes", "deletePods")


def rule(message: str) -> str:
    """What a failure broke, without names and numbers: ``missed fit``, ``resources``, ``after Ns neither ...``."""
    last = message.strip().splitlines()[-1].strip() if message.strip() else ""
    return re.sub(r"\d+", "N", last.split(":", 1)[0])


def _kind(step: dict[str, Any]) -> str:
    return next(iter(step))


def without_pod(doc: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    steps: list[dict[str, Any]] = out["steps"]
    at = next(i for i, s in enumerate(steps) if _kind(s) == "createPods" and s["createPods"]["name"] == name)
    drop = {at}
    if 0 < at < len(steps) - 1 and _kind(steps[at - 1]) == "stopScheduler" and _kind(steps[at + 1]) == "startScheduler":
        drop |= {at - 1, at + 1}
    kept = []
    for i, s in enumerate(steps):
        if i in drop or (_kind(s) == "deletePods" and s["deletePods"]["pods"] == name):
            continue
        if _kind(s) == "wait":
            names = [n for n in s["wait"]["pods"] if n != name]
            if not names:
                continue
            s = {"wait": {**s["wait"], "pods": names}}
        kept.append(s)
    out["steps"] = kept
    return out


def without_step(doc: dict[str, Any], at: int) -> dict[str, Any]:
    """Step ``at`` (an edit) out, with the wait right before it; an added node's later edits with it."""
    out = copy.deepcopy(doc)
    steps: list[dict[str, Any]] = out["steps"]
    step = steps[at]
    drop = {at} | ({at - 1} if at and _kind(steps[at - 1]) == "wait" else set())
    if _kind(step) == "addNodes":
        added = {n["name"] for n in step["addNodes"]["nodes"]}
        drop |= {i for i, s in enumerate(steps) if _kind(s) in ("label", "untaint")
                 and s[_kind(s)]["nodes"] in added}
    out["steps"] = [s for i, s in enumerate(steps) if i not in drop]
    return out


def without_node(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """The cluster's node ``name`` out, with every edit that names it (each with its wait)."""
    out = copy.deepcopy(doc)
    out["cluster"]["nodes"] = [n for n in out["cluster"]["nodes"] if n["name"] != name]
    steps: list[dict[str, Any]] = out["steps"]
    named = {i for i, s in enumerate(steps) if _kind(s) in ("label", "untaint") and s[_kind(s)]["nodes"] == name}
    drop = named | {i - 1 for i in named if i and _kind(steps[i - 1]) == "wait"}
    out["steps"] = [s for i, s in enumerate(steps) if i not in drop]
    return out


def without_class(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """Pod ``name`` without its PriorityClass; where no pod names one then, the classes' ``apply`` steps out."""
    out = copy.deepcopy(doc)
    for s in out["steps"]:
        if _kind(s) == "createPods" and s["createPods"]["name"] == name:
            s["createPods"].pop("priorityClass", None)
    if not any(_kind(s) == "createPods" and "priorityClass" in s["createPods"] for s in out["steps"]):
        out["steps"] = [s for s in out["steps"] if not (_kind(s) == "apply" and
                                                        s["apply"]["manifest"].get("kind") == "PriorityClass")]
    return out


def cuts(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Each smaller document one cut makes, the last steps' first (they depend on fewer others)."""
    steps = doc["steps"]
    for i in reversed(range(len(steps))):
        kind = _kind(steps[i])
        if kind == "createPods":
            yield without_pod(doc, steps[i]["createPods"]["name"])
        elif kind in EDITS:
            yield without_step(doc, i)
        elif kind == "stopScheduler" and i + 2 < len(steps) and _kind(steps[i + 2]) == "startScheduler":
            out = copy.deepcopy(doc)
            out["steps"] = [s for j, s in enumerate(steps) if j not in (i, i + 2)]
            yield out
    nodes = doc["cluster"]["nodes"]
    for node in reversed(nodes) if len(nodes) > 1 else ():  # a node an addNodes step copied stays: it is a step's
        yield without_node(doc, node["name"])
    for s in reversed(steps):
        if _kind(s) == "createPods" and "priorityClass" in s["createPods"]:
            yield without_class(doc, s["createPods"]["name"])
