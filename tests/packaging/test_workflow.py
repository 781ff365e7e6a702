"""The ready-to-copy GitHub Actions workflow cannot run here, so it is linted: actionlint, built from Go modules."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from schedgate.runtime.pins import cache_root

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github-actions" / "schedgate-kind.yml"
DEVTOOLS = ROOT / "go" / "devtools"


@pytest.fixture(scope="module")
def actionlint() -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH; actionlint is built from go/devtools", pytrace=False)
    key = hashlib.sha256((DEVTOOLS / "go.mod").read_bytes() + (DEVTOOLS / "go.sum").read_bytes()).hexdigest()[:12]
    exe = cache_root() / "devtools" / f"actionlint-{key}"
    if not exe.exists():
        exe.parent.mkdir(parents=True, exist_ok=True)
        built = subprocess.run([go, "build", "-trimpath", "-o", str(exe), "github.com/rhysd/actionlint/cmd/actionlint"],
                               cwd=DEVTOOLS, capture_output=True, text=True, timeout=600)
        assert built.returncode == 0, built.stderr[-2000:]
    return exe


def lint(actionlint: Path, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(actionlint), "-no-color", str(path)], capture_output=True, text=True, timeout=120)


def test_the_example_workflow_passes_actionlint(actionlint):
    out = lint(actionlint, WORKFLOW)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("old, new, complaint", [
    ("    runs-on: ubuntu-24.04", "    run-on: ubuntu-24.04", 'unexpected key "run-on"'),
    ("        if: always()", "        if: always(", "unexpected end of input"),
    ("uses: actions/upload-artifact@v4", "uses: actions/upload-artifact", "ref"),
])
def test_actionlint_catches_a_broken_copy(actionlint, tmp_path, old, new, complaint):
    text = WORKFLOW.read_text()
    assert old in text
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace(old, new, 1))
    out = lint(actionlint, broken)
    assert out.returncode == 1, out.stdout
    assert complaint in out.stdout, out.stdout


def test_the_workflow_schedgate_init_writes_passes_actionlint(actionlint, tmp_path):
    from schedgate.cli.init import files

    path = tmp_path / "scheduler-scenarios.yml"
    path.write_text(files()[".github/workflows/scheduler-scenarios.yml"])
    out = lint(actionlint, path)
    assert out.returncode == 0, out.stdout + out.stderr
