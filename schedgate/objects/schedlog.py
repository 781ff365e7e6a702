"""What a kube-scheduler's own log says about each pod: its scheduling attempts, each node's score per
plugin, the plugins that rejected nodes, and the outcome — read from the klog text lines of any
kube-scheduler build run with :data:`LOG_FLAGS`, no plugin of ours needed.

kube-scheduler does not log which filter rejected which node (its filter loop stops at a node's first
failing plugin and keeps the status to itself); it logs the rejecting plugins of an attempt as a set,
the aggregate reasons, and a few plugins' own per-node lines (TaintToleration, PodTopologySpread).
:meth:`Attempt.rejected_by` says exactly what follows from those and no more.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

# The verbosity that makes the lines below appear: attempts (V3; a PodGroup's cycle, V3), scores (V10), the
# queue's rejecting plugins (V3), a plugin's own per-node filter lines (V4/V5), DynamicResources' claim
# written in PreBind (V5) — per file, so client-go stays quiet.
LOG_FLAGS = ("--v=2", "--vmodule=schedule_one=10,schedule_one_podgroup=3,scheduling_queue=3,active_queue=5,"
                      "backoff_queue=5,framework=4,taint_toleration=4,filtering=5,dynamicresources=5")

# Above this many nodes the per-node, per-plugin score lines (schedule_one V10) are left off: at 1,000
# nodes they cut a scheduler's throughput 2.6-3.1x (make bench-fleet). Attempts, binds and the rest stay.
SCORED_UP_TO = 200


def log_flags(nodes: int) -> tuple[str, ...]:
    """The flags for a scheduler of a cluster of ``nodes`` nodes: :data:`LOG_FLAGS`, without score lines
    above :data:`SCORED_UP_TO` nodes."""
    if nodes <= SCORED_UP_TO:
        return LOG_FLAGS
    return tuple(f.replace("schedule_one=10", "schedule_one=3") for f in LOG_FLAGS)


_LINE = re.compile(r'^[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+)\s+\d+ [^\]]+\] "((?:[^"\\]|\\.)*)"(.*)$')
DAY = 86400.0


def since(start: float, end: float) -> float:
    """Seconds from one klog time of day to a later one (a log line carries no date)."""
    return (end - start) % DAY
_KEY = re.compile(r"\s*([^=\s][^=]*?)=")


def _kv(rest: str) -> dict[str, object]:
    """klog's ``key=value`` pairs: Go-quoted strings, JSON objects and lists, bare numbers and words."""
    out: dict[str, object] = {}
    i = 0
    dec = json.JSONDecoder()
    while i < len(rest):
        m = _KEY.match(rest, i)
        if not m:
            break
        key, i = m.group(1), m.end()
        if i < len(rest) and rest[i] in '"{[':
            try:
                value, i = dec.raw_decode(rest, i)
            except ValueError:
                break
        else:
            j = rest.find(" ", i)
            j = len(rest) if j < 0 else j
            word = rest[i:j]
            value = int(word) if re.fullmatch(r"-?\d+", word) else word
            i = j
        out[key] = value
    return out


@dataclass
class Attempt:
    """One scheduling cycle of a pod."""

    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> plugin -> weighted score
    totals: dict[str, int] = field(default_factory=dict)              # node -> final score
    node_reasons: dict[str, str] = field(default_factory=dict)        # node -> a plugin's own filter line
    rejecting: tuple[str, ...] = ()                                    # the queue's "unschedulable plugins"
    bound_to: str | None = None
    failure: str | None = None                                         # the FitError (or error) text
    error: bool = False                                                # "Error scheduling pod; retrying"
    started: float | None = None                                       # klog time of day the cycle began
    claims_written: float | None = None                                # ... DynamicResources wrote its last claim
    feasible: int | None = None                                        # feasibleNodes of the bind line

    @property
    def open(self) -> bool:
        """Neither bound nor failed yet."""
        return self.bound_to is None and self.failure is None

    def rejected_by(self, node: str, ruled_out: frozenset[str] = frozenset()) -> str:
        """Why ``node`` was not feasible, as far as the log tells: a plugin's own line, the one plugin
        that rejected nodes, or the set it was one of (less ``ruled_out``: plugins that cannot reject it)."""
        if node in self.node_reasons:
            return self.node_reasons[node]
        rest = [p for p in self.rejecting if p not in ruled_out
                and not any(r.startswith(p + ":") for r in self.node_reasons.values())]
        if len(rest) == 1:
            return rest[0]
        if rest:
            return "one of " + ", ".join(rest)
        return "not feasible (the log does not say which filter)"


@dataclass
class PodLog:
    attempts: list[Attempt] = field(default_factory=list)
    cycles: int = 0  # "Attempting to schedule pod" lines: the scheduling cycles the pod had
    # (event, queue) of each move into the active or backoff queue: what the scheduling queue did on which
    # cluster event ("PodAdd" first; e.g. "NodeAllocatableChange", "AssignedPodDelete", "BackoffComplete")
    moves: list[tuple[str, str]] = field(default_factory=list)


def parse(lines: Iterable[str]) -> dict[str, PodLog]:
    """``namespace/name`` -> what the log says about that pod, attempt by attempt."""
    return _Reader().feed(lines)


class _Reader:
    """The pods of one log so far: lines are fed as they come, and each continues the pod it names."""

    def __init__(self) -> None:
        self.pods: dict[str, PodLog] = {}
        self.groups: dict[str, float] = {}  # PodGroup -> the start of its newest cycle

    def _current(self, pod: str) -> Attempt:
        log = self.pods.setdefault(pod, PodLog())
        if not log.attempts:
            log.attempts.append(Attempt())
        return log.attempts[-1]

    def _group_cycle(self, pod: str, group: object) -> None:
        """A member of a PodGroup is tried in its group's cycle, which logs no "Attempting to schedule pod":
        its first line in a newer group cycle starts its attempt, at the group cycle's start."""
        started = self.groups.get(str(group)) if group is not None else None
        if started is None:
            return
        log = self.pods.setdefault(pod, PodLog())
        if not log.attempts or (log.attempts[-1].started or 0.0) < started:
            log.attempts.append(Attempt(started=started))
            log.cycles += 1

    def feed(self, lines: Iterable[str]) -> dict[str, PodLog]:
        pods = self.pods
        for line in lines:
            m = _LINE.match(line)
            if not m:
                continue
            msg = m.group(4)
            if msg not in _WANTED:
                continue
            kv = _kv(m.group(5))
            at = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
            if msg == _GROUP_CYCLE:
                self.groups[str(kv.get("podGroup"))] = at
                continue
            pod = kv.get("pod") if msg != _MOVED else kv.get("entity") if str(kv.get("type")).lower() == "pod" else None
            if not isinstance(pod, str):
                continue
            if not (_binding(msg, kv) and pod in pods and pods[pod].attempts and pods[pod].attempts[-1].open):
                self._group_cycle(pod, kv.get("podGroup"))
            if msg == _MOVED:
                pods.setdefault(pod, PodLog()).moves.append((str(kv.get("event", "")), str(kv.get("queue", ""))))
                continue
            if msg == "Attempting to schedule pod":
                log = pods.setdefault(pod, PodLog())
                log.attempts.append(Attempt(started=at))
                log.cycles += 1
                continue
            a = self._current(pod)
            node = str(kv.get("node", ""))
            if msg == "Plugin scored node for pod":
                a.scores.setdefault(node, {})[str(kv.get("plugin"))] = int(str(kv.get("score", 0)))
            elif msg == "Calculated node's final score for pod":
                a.totals[node] = int(str(kv.get("score", 0)))
            elif msg == "Successfully bound pod to node":
                a.bound_to = node
                feasible = kv.get("feasibleNodes")
                a.feasible = feasible if isinstance(feasible, int) else None
            elif msg == "reserved" and "resourceclaim" in kv:  # PreBind: the claim's allocation and reservation written
                a.claims_written = at
            elif msg == "Unable to schedule pod; no fit; waiting":
                a.failure = str(kv.get("err", ""))
            elif msg == "Error scheduling pod; retrying":
                a.failure, a.error = str(kv.get("err", "")), True
            elif msg == "Pod moved to an internal scheduling queue":
                plugins = kv.get("unschedulable plugins")
                a.rejecting = tuple(sorted(plugins)) if isinstance(plugins, dict) else ()
            elif msg == "node had untolerated taints" and "FilterWithNominatedPods" in str(kv.get("logger", "")):
                t = kv.get("untoleratedTaint")
                taint = f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" if isinstance(t, dict) else str(t)
                a.node_reasons[node] = f"TaintToleration: untolerated taint {taint}"
            elif msg.startswith(("Node failed spreadConstraint", "Node doesn't have required topology")) \
                    and "FilterWithNominatedPods" in str(kv.get("logger", "")):
                a.node_reasons[node] = f"PodTopologySpread: {msg}"
        return pods


def _binding(msg: str, kv: dict[str, object]) -> bool:
    """A line of a pod's binding cycle, which runs on beside the scheduling cycles: a member's bind (or its
    PreBind's failure) may be logged after its group's next cycle began, and belongs to the cycle before
    (it opens a newer attempt only when the member's last one has ended)."""
    return msg in ("Successfully bound pod to node", "reserved") or (
        msg == "Error scheduling pod; retrying" and str(kv.get("err", "")).startswith(_BINDING_ERRORS))


_BINDING_ERRORS = ("running PreBind plugin", "running Bind plugin", "binding rejected")
_MOVED = "Entity moved to an internal scheduling queue"  # by a cluster event (active_queue, backoff_queue V5)
_GROUP_CYCLE = "Attempting to schedule pod group"  # a PodGroup's cycle (V3): its members' lines name it
_WANTED = frozenset({_MOVED, _GROUP_CYCLE,
    "Attempting to schedule pod", "Plugin scored node for pod", "Calculated node's final score for pod",
    "Successfully bound pod to node", "reserved", "Unable to schedule pod; no fit; waiting",
    "Error scheduling pod; retrying",
    "Pod moved to an internal scheduling queue", "node had untolerated taints",
    "Node failed spreadConstraint: matchNum + selfMatchNum - minMatchNum > maxSkew",
    "Node doesn't have required topology label for spread constraint"})


def read_logs(paths: Iterable[Path | None], namespaces: Collection[str] | None = None) -> dict[str, PodLog]:
    """Every pod's attempts across several schedulers' logs (a pod is one scheduler's, so they do not mix);
    with ``namespaces``, only the pods of those.

    Each log is read from where the last call stopped (a session's scheduler logs grow with every test,
    and reading them whole after each test, or in each poll of a wait, grew with the run)."""
    out: dict[str, PodLog] = {}
    with _FOLLOWED_LOCK:
        for gone in [p for p in _FOLLOWED if not p.exists()]:
            del _FOLLOWED[gone]
        for p in paths:
            if p is None:
                continue
            pods = _follow(p)
            for pod, log in pods.items():
                if namespaces is not None and pod.split("/", 1)[0] not in namespaces:
                    continue
                mine = out.setdefault(pod, PodLog())
                mine.attempts = mine.attempts + log.attempts
                mine.cycles += log.cycles
                mine.moves = mine.moves + log.moves
    return out


@dataclass
class _Followed:
    ino: int
    offset: int = 0
    reader: _Reader = field(default_factory=_Reader)


_FOLLOWED: dict[Path, _Followed] = {}
_FOLLOWED_LOCK = threading.Lock()


def _follow(path: Path) -> dict[str, PodLog]:
    """The pods of the log at ``path``, its new whole lines read; a log replaced or cut is read anew."""
    try:
        f = path.open("rb")
    except OSError:
        return {}
    with f:
        st = os.fstat(f.fileno())
        seen = _FOLLOWED.get(path)
        if seen is None or seen.ino != st.st_ino or st.st_size < seen.offset:
            seen = _FOLLOWED[path] = _Followed(ino=st.st_ino)
        f.seek(seen.offset)
        chunk = f.read()
    end = chunk.rfind(b"\n") + 1  # a line still being written waits for the next call
    if end:
        seen.reader.feed(chunk[:end].decode(errors="replace").splitlines())
        seen.offset += end
    return seen.reader.pods
