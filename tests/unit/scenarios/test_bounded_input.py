"""Half-written and hostile files are refused at once, in one line, in bounded time and memory.

Each case runs in a child process with a CPU-time and address-space limit, so a
hang or an expansion that grows without bound fails the test instead of the
machine; the same files go through ``schedgate check`` and pytest collection.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "clusters" / "inference.yaml"
HEAD = f"apiVersion: schedgate.io/v1alpha1\nkind: Scenario\nname: half-written\ncluster: {CLUSTER}\n"
STEPS = "steps:\n  - createPods: {name: p, gpus: 1}\n"

# A few lines whose aliases expand to 9**9 nodes if anything walks them.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True))

SHAPES = {
    "empty": ("", r"document: must be a mapping, got nothing"),
    "only-a-comment": ("# nothing yet\n", r"document: must be a mapping, got nothing"),
    "a-list": ("- createPods: {name: p}\n", r"document: must be a mapping, got list \(line 1\)"),
    "a-scalar": ("steps\n", r"document: must be a mapping, got str \(line 1\)"),
    "no-steps": (HEAD, r"steps: required field is missing \(line 1\)"),
    "no-cluster": (HEAD.replace(f"cluster: {CLUSTER}\n", "") + STEPS, r"cluster: required field is missing"),
    "steps-null": (HEAD + "steps:\n", r"steps: required field is missing \(line 5\)"),
    "steps-a-mapping": (HEAD + "steps: {createPods: {name: p}}\n", r"steps: must be a non-empty list of steps"),
    "alias-bomb": (HEAD + STEPS + BOMB, r"line 7: not valid YAML: anchors \(&a\) are not supported"),
    "merge-key": (HEAD + "templates:\n  base: &b {gpus: 1}\n  infer: {<<: *b}\n" + STEPS,
                  r"line 6: not valid YAML: anchors \(&b\) are not supported"),
    "deep-nesting": (HEAD + "templates: " + "[" * 5000 + "]" * 5000 + "\n" + STEPS,
                     r"line 5: not valid YAML: nested deeper than 64 levels"),
    "huge-integer": (HEAD + "steps:\n  - createPods: {name: p, count: " + "9" * 6000 + "}\n",
                     r"YAML: not valid YAML: Exceeds the limit"),
    "huge-count": (HEAD + "steps:\n  - createPods: {name: p, count: 100000000000}\n",
                   r"steps\[0\]\.createPods\.count: must be a whole number from 1 to 10000, got 100000000000"),
    "many-pods": (HEAD + "steps:\n" + "".join(f"  - createPods: {{name: p{i}, count: 9000}}\n" for i in range(2)),
                  r"steps\[1\]\.createPods\.count: a scenario creates at most 10000 pods"),
    "huge-timeout": (HEAD + "steps:\n  - createPods: {name: p}\n  - wait: {pods: p, until: scheduled, "
                     "timeout: 1e300}\n", r"steps\[1\]\.wait\.timeout: must be a number from 0.1 to 3600"),
    "not-utf8": (b"name: \xff\xfe\n", r"not UTF-8 text \(byte 6\)"),
    "two-documents": (HEAD + STEPS + "---\n" + HEAD + STEPS, r"not valid YAML: but found another document"),
}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """A Python child with at most 20 s of CPU and 1 GiB of address space."""
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          preexec_fn=_limits)


def write(tmp_path: Path, name: str, body: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(body, bytes):
        p.write_bytes(body)
    else:
        p.write_text(body)
    return p


LOAD = """\
import sys, time
from schedgate.errors import DefinitionError
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition
load = load_scenario if sys.argv[1].endswith('.scenario.yaml') else load_definition
t = time.process_time()
try:
    load(sys.argv[1])
    print('loaded')
except DefinitionError as e:
    print(e)
took = time.process_time() - t
# This process's own high-water mark (VmHWM starts anew at exec; ru_maxrss keeps the forking parent's).
peak = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')) // 1024
print(f'cpu {took:.3f} s, peak {peak} MiB', file=sys.stderr)
"""


@pytest.mark.parametrize("shape", SHAPES)
def test_a_half_written_or_hostile_scenario_is_refused_in_one_line_at_once(tmp_path, shape):
    body, problem = SHAPES[shape]
    path = write(tmp_path, "case.scenario.yaml", body)
    out = run("-c", LOAD, str(path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: "), out.stdout
    assert re.search(problem, lines[0]), lines[0]
    took, peak = re.search(r"cpu ([\d.]+) s, peak (\d+) MiB", out.stderr).groups()  # type: ignore[union-attr]
    assert float(took) < 1.0, f"{shape}: loading took {took} s of CPU"
    assert int(peak) < 300, f"{shape}: loading peaked at {peak} MiB"


def test_the_alias_bomb_as_a_cluster_definition_is_refused_by_pytest_before_anything_starts(tmp_path):
    path = write(tmp_path, "bomb.yaml", "apiVersion: schedgate.io/v1alpha1\nkind: Cluster\n" + BOMB)
    out = run("-m", "pytest", "-p", "no:cacheprovider", "-q", "e2e/test_hard_constraint.py", "--cluster", str(path))
    assert out.returncode == 4, out.stdout + out.stderr
    assert re.search(rf"^ERROR: {re.escape(str(path))}: line 3: not valid YAML: anchors \(&a\) are not supported",
                     out.stderr, re.M), out.stderr
    assert "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize("shape", ["empty", "a-list", "no-steps", "no-cluster", "alias-bomb"])
def test_check_and_collection_answer_in_one_line(tmp_path, shape):
    body, problem = SHAPES[shape]
    path = write(tmp_path, "case.scenario.yaml", body)
    check = run("-m", "schedgate", "check", str(path))
    assert check.returncode == 2, check.stdout + check.stderr
    assert re.fullmatch(rf"schedgate: {re.escape(str(path))}: .*{problem}.*\n", check.stderr), check.stderr
    collect = run("-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only", str(tmp_path))
    assert collect.returncode == 2, collect.stdout + collect.stderr
    assert re.search(rf"^{re.escape(str(path))}: .*{problem}", collect.stdout, re.M), collect.stdout


def test_a_file_over_the_size_cap_is_refused_without_being_read(tmp_path):
    path = tmp_path / "big.scenario.yaml"
    with path.open("wb") as f:
        f.truncate(64 * 1024 * 1024)
    out = run("-c", LOAD, str(path))
    assert re.fullmatch(rf"{re.escape(str(path))}: {64 * 1024 * 1024} bytes; a scenario file may have at most "
                        r"4194304\n", out.stdout), out.stdout
