"""Any mutation of a shipped example loads, or is refused in one line naming the file and the field.

Every valid example shipped — the Cluster definitions under clusters/, each profile and mutant
scheduler configuration, each scenario under e2e/scenarios/ — is parsed, changed in one to three
places, written back as YAML and loaded again. The changes: a wrong type at any path, a deleted
key, an added (unknown) key, a renamed key, huge numbers, odd unicode (bidi marks, control
characters, combining marks, emoji, very long strings), nesting within and beyond the 64 levels
the reader allows, empty containers, duplicated list items, a file cut short.

The property: loading returns, or raises DefinitionError whose text is one line without control
characters, ``FILE: FIELD: PROBLEM`` (a scenario's own problems end in ``(line N)``), where FILE is
the file written (or a file it names) and FIELD is a field path or, for YAML-level errors, a line.
Any other exception, or an example that takes more than a second of CPU, fails (CPU, not wall time:
on a loaded machine a wall-clock deadline measures the neighbours). One batch — mutated files with
heavy tails up to and past the 4 MiB cap, and the shapes found by reading (READ_SHAPES) — runs in a
child process under CPU and address-space limits; it must start no process and write nothing into
$TMPDIR (no ``schedgate-run-*`` folder). Every quantity a definition accepts is one the providers'
arithmetic reads (one grammar, :mod:`schedgate.spec.quantity`).

Runs are reproducible: derandomized, no example database. To search harder or afresh:

    SCHEDGATE_HYPOTHESIS_EXAMPLES=500 .venv/bin/pytest tests/unit/scenarios/test_bad_input_properties.py
    # (500 examples per example file)
    SCHEDGATE_HYPOTHESIS_RANDOM=1 ...   # a new random search each run; a failure prints its reproduction
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from schedgate.errors import DefinitionError
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition, parse_definition
from schedgate.spec.quantity import parse_quantity
from schedgate.spec.roles import BY_NAME as ROLES
from schedgate.spec.schedconfig import load_scheduler_config

ROOT = Path(__file__).resolve().parents[3]


def _kind_of_file(path: Path) -> Any:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc.get("kind") if isinstance(doc, dict) else None


CLUSTERS = [p for p in sorted((ROOT / "clusters").rglob("*.yaml")) if _kind_of_file(p) == "Cluster"]
CONFIGS = sorted([*(ROOT / "clusters" / "profiles").glob("*.yaml"), *(ROOT / "clusters" / "mutants").glob("*.yaml")])
SCENARIOS = sorted((ROOT / "e2e" / "scenarios").glob("*.scenario.yaml")) + [
    # Kubernetes' own language: pod manifest fragments, named nodes, an apply step.
    ROOT / "e2e" / "conformance" / "preemption-basic-victim-evicted.scenario.yaml"]
EXAMPLES = [("cluster", p) for p in CLUSTERS] + [("config", p) for p in CONFIGS] + [("scenario", p) for p in SCENARIOS]

LOADERS: dict[str, Callable[[Path], Any]] = {"cluster": load_definition, "config": load_scheduler_config,
                                             "scenario": load_scenario}
FILE_NAMES = {"cluster": "case.yaml", "config": "case.yaml", "scenario": "case.scenario.yaml"}

# -- how hard to search ---------------------------------------------------------------------------
# Examples per example file: 1 cluster definition, 22 configurations (small, one loader path),
# 7 scenarios (the most fields); files in the batch (each up to a few MiB, so at most 200). The
# defaults keep the whole file under a minute on 2 shared cores.
_RAISED = int(os.environ.get("SCHEDGATE_HYPOTHESIS_EXAMPLES", "0"))
BUDGET = {kind: _RAISED or n for kind, n in {"cluster": 150, "config": 6, "scenario": 40}.items()}
BATCH = min(_RAISED, 200) or 40
settings.register_profile(
    "schedgate-bad-input",
    deadline=None,  # wall time measures the machine's load; CPU_SECONDS bounds the work instead
    derandomize=os.environ.get("SCHEDGATE_HYPOTHESIS_RANDOM") != "1",
    database=None,  # nothing written into the checkout; a clean CI run tests what the last one did
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("schedgate-bad-input")


# -- the examples, as documents -------------------------------------------------------------------
def _file_refs(doc: Any) -> Iterator[tuple[dict[Any, Any], str]]:
    """(mapping, key) of each value the scenario loader reads as a file name."""
    if not isinstance(doc, dict):
        return
    for key in ("cluster", "scheduler"):
        if isinstance(doc.get(key), str) and not (key == "scheduler" and doc[key] in ROLES):
            yield doc, key
    classes = doc["cluster"].get("deviceClasses") if isinstance(doc.get("cluster"), dict) else None
    for i, entry in enumerate(classes if isinstance(classes, list) else []):
        if isinstance(entry, str):
            yield classes, i  # type: ignore[misc]  (a list, indexed like a mapping)
    steps = doc.get("steps")
    for step in steps if isinstance(steps, list) else []:
        for kind in ("startScheduler", "stopScheduler"):
            body = step.get(kind) if isinstance(step, dict) else None
            if isinstance(body, dict) and isinstance(body.get("config"), str) and body["config"] not in ROLES:
                yield body, "config"
        applied = step.get("apply") if isinstance(step, dict) else None
        files = applied.get("files") if isinstance(applied, dict) else None
        for i, entry in enumerate(files if isinstance(files, list) else []):
            if isinstance(entry, str):
                yield files, i  # type: ignore[misc]  (a list, indexed like a mapping)


def _base(kind: str, path: Path) -> Any:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if kind == "scenario":  # the copy lives in a temp folder: name its files absolutely
        for mapping, key in _file_refs(doc):
            mapping[key] = str((path.parent / mapping[key]).resolve())
    return doc


BASES = {path: _base(kind, path) for kind, path in EXAMPLES}


def _walk(doc: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield here, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _walk(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _walk(v, (*here, i))


def _keys_and_strings() -> tuple[list[Any], list[str]]:
    keys: set[str] = set()
    strings: set[str] = set()
    for doc in BASES.values():
        for _, node in _walk(doc):
            if isinstance(node, dict):
                keys.update(k for k in node if isinstance(k, str))
            elif isinstance(node, str):
                strings.add(node)
    return sorted(keys), sorted(strings)


KNOWN_KEYS, KNOWN_STRINGS = _keys_and_strings()
# Whole subtrees of every example (a step, a pool, a profile, a whole cluster definition): valid
# pieces in the wrong place, and the inline cluster or scheduler a scenario may hold.
SUBTREES = {kind: [node for k, p in EXAMPLES if k == kind for _, node in _walk(BASES[p])
                   if isinstance(node, (dict, list))] for kind in LOADERS}
SUBTREES["scenario"] += [BASES[p] for _, p in EXAMPLES[:2]] + [BASES[p] for p in CONFIGS[:2]]

# -- values ---------------------------------------------------------------------------------------
ODD_CHARS = [
    "\u200f", "\u200e", "\u202e", "\u2067", "\u2069", "\u061c",      # bidi marks and overrides
    "\u0301", "\u0336", "\u20dd", "\u200d", "\ufeff", "\u00a0", "\u3000",  # combining, joiners, spaces
    "\U0001f600", "\U0001f469\u200d\U0001f4bb", "\U0001f1fa\U0001f1f8",   # emoji, a ZWJ sequence, a flag
    "\x01", "\x07", "\x08", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029",  # controls, line breaks
    "\t", "\n", "\r", "\x0b", "\x0c", "\x00", "\ufffd", "\uffff",
    "a", "Z", "0", "9", "-", "_", ".", "/", ":", "#", " ", "'", '"', "\\", "{", "}", "[", "]", "*", "&",
    "!", "%", "@", "`", "|", ">", "?", ",", "=", "é", "ß", "İ", "ﬁ", "硬", "ا",
]
SPECIAL_STRINGS = [
    "", " ", "~", "null", "true", "no", "1e3", "1E3", "1e400", "0x1F", "0o17", ".inf", ".nan", "500m", "64Gi",
    "1.5", "-1", "+1", "08", "1_000", "2001-12-14", "<<", "*", "/", ".", "..", "-", "a-", "-a", "A",
    "a" * 63, "a" * 64, "a" * 253, "a" * 254, "x." * 127 + "x", "a/b/c", "/a", "a/",
    "a{99999999999}", "(" * 1000 + ")" * 1000, "[", "(?P<", "\\", "*?[", "(?", "x{2,1}",
    "NoSchedule", "Normal", "Warning", "scheduled", "hard", "soft", "default-scheduler",
    "network-slots", "tenant-filter", "extender-hard",
]
LONG_UNITS = ["x", "é", "\u200f", "\U0001f600", "a-", "\u0301", "\n", "- "]
LONG_SIZES = [63, 64, 254, 256, 1025, 4097, 20_000]
NUMBERS = [0, 1, -1, 2, 8, 63, 64, 100, 599, 600, 1000, 1001, 10_000, 10_001, 1_000_000, 1_000_001,
           2**31, 2**63, -(2**63) - 1, 10**30, -(10**30), 10**300,
           0.0, -0.0, 0.05, 0.1, 0.5, 1.5, 3600.0, 3600.5, 1e300, 1e308, -1e308, 5e-324,
           math.inf, -math.inf, math.nan]
DEPTHS = [1, 2, 30, 61, 62, 63, 64, 65, 66, 100, 200]
MUTATIONS = ["replace", "delete", "add", "rename", "duplicate", "nest", "empty", "restring", "renumber"]


def texts() -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(st.sampled_from(ODD_CHARS), max_size=12).map("".join),
        st.sampled_from(SPECIAL_STRINGS),
        st.sampled_from(KNOWN_STRINGS),
        st.builds(lambda s, odd, at: s[:at] + odd + s[at:], st.sampled_from(KNOWN_STRINGS),
                  st.sampled_from(ODD_CHARS), st.integers(0, 40)),
        st.builds(lambda unit, n: unit * (n // len(unit)), st.sampled_from(LONG_UNITS), st.sampled_from(LONG_SIZES)),
        st.text(st.characters(exclude_categories=("Cs",)), max_size=16),
    )


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.sampled_from(NUMBERS), st.integers(),
        st.floats(), texts(),
    )


def keys() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(KNOWN_KEYS), texts(), st.integers(-2, 2), st.none(), st.booleans(),
                     st.sampled_from([0.5, math.inf]))


def values(kind: str) -> st.SearchStrategy[Any]:
    containers = st.recursive(scalars(), lambda kids: st.lists(kids, max_size=3)
                              | st.dictionaries(keys(), kids, max_size=3), max_leaves=6)
    return st.one_of(
        scalars(),
        st.sampled_from([[], {}, [None], {"": None}, [[]], [{}]]).map(copy.deepcopy),
        containers,
        st.sampled_from(SUBTREES[kind]).map(copy.deepcopy),
    )


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value that appears twice is written twice: the loader refuses anchors


@st.composite
def mutated(draw: st.DrawFn, kind: str, base: Any) -> str:
    """``base`` changed in one to three places, as the YAML text of a file."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(MUTATIONS))
        leaf = {"restring": str, "renumber": (int, float)}.get(what)
        paths = [p for p, v in _walk(doc) if leaf is None or (isinstance(v, leaf) and not isinstance(v, bool))]
        path = draw(st.sampled_from(paths or [()]))
        here = _get(doc, path)
        parent = _get(doc, path[:-1]) if path else None
        if what == "delete" and path:
            del parent[path[-1]]
        elif what == "add" and isinstance(here, dict):
            here[draw(keys())] = draw(values(kind))
        elif what == "add" and isinstance(here, list):
            here.insert(draw(st.integers(0, len(here))), draw(values(kind)))
        elif what == "rename" and isinstance(parent, dict):
            parent[draw(keys())] = parent.pop(path[-1])
        elif what == "duplicate" and isinstance(here, list) and here:
            at = draw(st.integers(0, len(here) - 1))
            times = draw(st.sampled_from([1, 2, 50]))
            here[at + 1:at + 1] = [copy.deepcopy(here[at]) for _ in range(times)]
        elif what == "nest":
            value = here
            for _ in range(draw(st.sampled_from(DEPTHS))):
                value = [value] if draw(st.booleans()) else {draw(st.sampled_from(["a", "steps", "pools"])): value}
            doc = _set(doc, path, value)
        elif what == "empty":
            doc = _set(doc, path, draw(st.sampled_from([{}, [], "", None])))
        elif what == "restring" and paths:  # odd text where the file has text
            doc = _set(doc, path, draw(texts()))
        elif what == "renumber" and paths:  # a huge, tiny, negative or not-a-number number where it has one
            doc = _set(doc, path, draw(st.sampled_from(NUMBERS) | st.integers() | st.floats()))
        else:
            doc = _set(doc, path, draw(values(kind)))
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=draw(st.booleans()),
                     default_flow_style=draw(st.sampled_from([False, None, True])),
                     width=draw(st.sampled_from([80, 1 << 30])))
    if draw(st.integers(0, 9)) == 0:  # a file cut short, as an editor saving half of it would
        text = text[:draw(st.integers(0, len(text)))]
    return text


# Only in the child-process batch: a tail appended to the file that costs the reader real time or
# memory if anything in it is unbounded. Sizes stop short of the 4 MiB cap, and one goes past it.
MIB = 1 << 20
HEAVY_TAILS: list[Callable[[int], str]] = [
    lambda n: "zz:\n" + "- 1\n" * n,                                          # many block items
    lambda n: "zz: [" + "1," * n + "1]\n",                                     # many flow items
    lambda n: "zz: {" + "".join(f"k{i}: {i}, " for i in range(min(n, 240_000))) + "}\n",     # many keys
    lambda n: "? " + "k" * min(n, MIB) + "\n: [" + "1," * min(n, 400_000) + "1]\n",  # a long key over many
    lambda n: "".join("  " * d + "k" * 1000 + ":\n" for d in range(60)) + ("  " * 60 + "- 1\n") * min(n, 15_000),
    lambda n: "zz: " + "[" * n + "]" * n + "\n",                                # deep nesting
    lambda n: "zz: " + "x" * (4 * n) + "\n",                                   # one long scalar
    lambda n: "# " + "x" * (4 * n) + "\nzz: 1\n",                             # one long comment
]
HEAVY_COUNTS = [1000, 100_000, (4 * MIB) // 4 - 4096, 4 * MIB // 2 + 1]


@st.composite
def heavy(draw: st.DrawFn, kind: str, base: Any) -> str:
    text = draw(mutated(kind, base))
    tail = draw(st.sampled_from(HEAVY_TAILS))
    return (text if text.endswith("\n") else text + "\n") + tail(draw(st.sampled_from(HEAVY_COUNTS)))


# Shapes found by reading the validators while writing these properties: the random search seldom
# puts a hostile string on the one field that chokes on it, or grows a set to where a quadratic
# check shows. Each was a crash or took from seconds to hours; each runs with the batch, under its
# CPU limit (so a regression fails the batch instead of hanging it).
def _scenario(steps: list[Any], cluster: Any = None, **fields: Any) -> Any:
    return {"apiVersion": "schedgate.io/v1alpha1", "kind": "Scenario", "name": "shape",
            "cluster": str(CLUSTERS[0]) if cluster is None else cluster, **fields, "steps": steps}


BIG = {"apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": "big",
       "pools": [{"name": "big", "count": 1000, "capacity": {"cpu": "1", "memory": "1Gi", "pods": 1}}]}
POD = {"createPods": {"name": "p"}}


def _unschedulable(message: str) -> Any:
    return _scenario([POD, {"expect": {"pods": "p", "unschedulable": {"message": message}}}])


READ_SHAPES = {
    "regex-repeat-too-large": _unschedulable("a{99999999999}"),
    "regex-nested-groups": _unschedulable("(" * 1000 + ")" * 1000),
    "cluster-name-with-nul": _scenario([POD], cluster="a\0b"),
    "pod-glob-repeated": _scenario([{"createPods": {"name": "p", "count": 10_000}},
                                    {"expect": {"pods": ["p-*"] * 2000, "untouched": True}}]),
    "node-pool-repeated": _scenario([POD, {"expect": {"pods": "p", "scheduledOn": ["big"] * 5000}}], cluster=BIG),
    "never-many-steps": _scenario([POD] + [{"expect": {"pods": "p", "scheduledOn": ["big"]}}] * 2000, cluster=BIG),
}


# -- the property ---------------------------------------------------------------------------------
YAML_LEVEL = re.compile(r"line \d+|YAML")
FILE_LEVEL = re.compile(r"\d+ bytes; a .+ file may have at most \d+|more than \d+ bytes; .*|no such .+ file"
                        r"|is a folder, not a .+ file|not UTF-8 text \(byte \d+\)|cannot read: .*")


def _named_files(path: Path, text: str) -> set[str]:
    """Every file a scenario's text names (cluster, scheduler, a started configuration), as the loader finds it."""
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):
        return set()
    out = set()
    for mapping, key in _file_refs(doc):
        p = Path(mapping[key])
        out |= {DefinitionError(name, "", "").path for name in (p, path.parent / p, ROOT / p)}  # as shown
    return out


def judge(kind: str, path: Path, text: str, error: DefinitionError | None) -> None:
    """The property, for one loaded file: no error, or a one-line error naming the file and the field."""
    if error is None:
        return
    message = str(error)
    assert message.splitlines() == [message], f"not one line: {message[:2000]!r}"
    bad = sorted({unicodedata.name(c, hex(ord(c))) for c in message if unicodedata.category(c) == "Cc"})
    assert not bad, f"control characters {bad} in: {message[:2000]!r}"
    assert message.startswith(f"{error.path}: "), message[:2000]
    own = error.path == str(path)
    if not own:
        named = _named_files(path, text) if kind == "scenario" else set()
        assert error.path in named, f"names neither {path} nor a file it names: {message[:2000]!r}"
        return
    assert error.field or FILE_LEVEL.fullmatch(error.problem), f"names no field: {message[:2000]!r}"
    assert message == (f"{error.path}: {error.field}: {error.problem}" if error.field
                       else f"{error.path}: {error.problem}"), message[:2000]
    empty = error.field == "document" and error.problem.endswith("got nothing")  # a file with no line to name
    if kind == "scenario" and error.field and not YAML_LEVEL.fullmatch(error.field) and not empty:
        assert re.search(r" \(line \d+\)$", message), f"no line number: {message[:2000]!r}"


CPU_SECONDS = 1.0  # per example: write and load one file


def load_and_judge(kind: str, path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    started = time.thread_time()
    try:
        LOADERS[kind](path)
    except DefinitionError as e:
        judge(kind, path, text, e)
    used = time.thread_time() - started
    assert used < CPU_SECONDS, f"loading took {used:.2f}s of CPU (at most {CPU_SECONDS}s): {text[:200]!r}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-input")


def _children() -> set[int]:
    """Processes whose parent is this one."""
    me, out = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            out.add(int(stat.parent.name))
    return out


@pytest.fixture(scope="module", autouse=True)
def starts_nothing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The loaders are pure: after the whole file, no new child process and nothing in a private $TMPDIR.

    (The machine's own temp folder is shared with other runs, whose schedgate-run-* folders come and go.)
    """
    private = tmp_path_factory.mktemp("tmpdir")
    saved = tempfile.tempdir
    tempfile.tempdir = str(private)
    children = _children()
    try:
        yield
    finally:
        tempfile.tempdir = saved
    assert _children() <= children, "loading started a process"
    assert not list(private.glob("schedgate-run-*")), "loading made a schedgate-run-* folder"


@pytest.mark.parametrize("kind, source", EXAMPLES, ids=[f"{k}:{p.name}" for k, p in EXAMPLES])
def test_each_example_written_back_unchanged_loads(workdir, kind, source):
    path = workdir / kind / FILE_NAMES[kind]
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.dump(BASES[source], Dumper=_Dumper, sort_keys=False, allow_unicode=True), encoding="utf-8")
    LOADERS[kind](path)


@pytest.mark.parametrize("kind, source", EXAMPLES, ids=[f"{k}:{p.name}" for k, p in EXAMPLES])
def test_a_mutated_example_loads_or_is_refused_in_one_line_naming_file_and_field(workdir, kind, source):
    path = workdir / kind / FILE_NAMES[kind]
    path.parent.mkdir(exist_ok=True)

    @settings(PROFILE, max_examples=BUDGET[kind])
    @given(text=mutated(kind, BASES[source]))
    def prop(text: str) -> None:
        load_and_judge(kind, path, text)

    prop()


def test_every_quantity_a_definition_accepts_is_one_the_providers_can_read():
    quantity = st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,3})?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]|E[0-9])?\Z")

    @settings(PROFILE, max_examples=100)
    @given(cpu=quantity, memory=quantity)
    @example(cpu="1e3", memory="64Gi")
    def prop(cpu: str, memory: str) -> None:
        doc = copy.deepcopy(BASES[CLUSTERS[0]])
        doc["pools"][0]["capacity"].update(cpu=cpu, memory=memory)
        try:
            definition = parse_definition(doc, source="case.yaml")
        except DefinitionError:
            return
        for node in definition.nodes():
            for name, value in node.allocatable.items():
                try:
                    parse_quantity(value)
                except ValueError as e:
                    raise AssertionError(f"{node.name}: {name}: {value!r} validates; parse_quantity refuses it") from e

    prop()


# -- one batch under limits, in a child process ---------------------------------------------------
CHILD = """\
import json, os, sys, time
from pathlib import Path
from schedgate.errors import DefinitionError
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition
from schedgate.spec.schedconfig import load_scheduler_config
loaders = {"cluster": load_definition, "config": load_scheduler_config, "scenario": load_scenario}


def peak_mib():  # this program's own high-water mark (getrusage's would include the forked parent's)
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


out = []
for kind, path in json.loads(Path(sys.argv[1]).read_text()):
    print(f"loading {path}", file=sys.stderr, flush=True)  # the last one named is the one a limit stopped
    t = time.process_time()
    try:
        loaders[kind](path)
        r = {"outcome": "loaded"}
    except DefinitionError as e:
        r = {"outcome": "refused", "message": str(e), "path": e.path, "field": e.field, "problem": e.problem}
    except Exception as e:  # what the property forbids, reported rather than raised
        r = {"outcome": "crashed", "message": f"{type(e).__name__}: {str(e)[:500]}"}
    r["cpu"] = time.process_time() - t
    r["peak_mib"] = peak_mib()  # so far: the file that raised it is the one to blame
    out.append(r)
me = os.getpid()
children = []
for stat in Path("/proc").glob("[0-9]*/stat"):
    try:
        if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == me:
            children.append(stat.parent.name)
    except (OSError, IndexError):
        pass
print(json.dumps({"results": out, "children": children, "peak_mib": peak_mib()}))
"""


def _limits(cpu_seconds: int) -> Callable[[], None]:
    def apply() -> None:  # in the child, before it runs anything
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    return apply


def test_a_batch_with_files_up_to_the_cap_loads_in_bounded_memory_and_starts_nothing(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    cases: list[tuple[str, Path]] = []  # the texts stay on disk: together they may be hundreds of MiB

    @settings(PROFILE, max_examples=BATCH, deadline=None)
    @given(case=st.sampled_from(EXAMPLES).flatmap(
        lambda ex: st.tuples(st.just(ex[0]), heavy(ex[0], BASES[ex[1]]))))
    def generate(case: tuple[str, str]) -> None:
        kind, text = case
        path = batch / f"{len(cases):03d}-{FILE_NAMES[kind]}"
        path.write_text(text, encoding="utf-8")
        cases.append((kind, path))

    generate()
    for name, doc in READ_SHAPES.items():
        text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=1 << 30)
        path = batch / f"shape-{name}.scenario.yaml"
        path.write_text(text, encoding="utf-8")
        cases.append(("scenario", path))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps([(kind, str(path)) for kind, path in cases]))
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    out = subprocess.run([sys.executable, "-c", CHILD, str(manifest)], cwd=ROOT, capture_output=True, text=True,
                         timeout=900, preexec_fn=_limits(60 + 3 * len(cases)),  # 5 s a file is a failure
                         env={**os.environ, "TMPDIR": str(env_tmp)})
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout)
    assert report["children"] == [], f"loading started processes {report['children']}"
    assert not list(env_tmp.iterdir()), "loading wrote into $TMPDIR"
    largest = max(path.stat().st_size for _, path in cases)
    assert largest > MIB, f"no large file generated (largest {largest} bytes)"
    peak = 0
    for (kind, path), r in zip(cases, report["results"], strict=True):
        text = path.read_text(encoding="utf-8")
        what = f"{path} ({path.stat().st_size} bytes: {text[:60]!r}...{text[-60:]!r})"
        assert r["outcome"] != "crashed", f"{what}: {r['message']}"
        assert r["cpu"] < 5, f"{what}: {r['cpu']:.1f} s of CPU"
        assert r["peak_mib"] - peak < 256, f"{what}: the peak grew from {peak} to {r['peak_mib']} MiB"
        peak = max(peak, r["peak_mib"])
        if r["outcome"] == "refused":
            error = DefinitionError(r["path"], r["field"], r["problem"])
            assert str(error) == r["message"]
            judge(kind, path, text, error)
    assert report["peak_mib"] < 512, f"the batch peaked at {report['peak_mib']} MiB"
