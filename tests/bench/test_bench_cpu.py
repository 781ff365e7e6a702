"""bench/cpu.py: the CPU of every process under a root, grouped by what it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from cpu import CpuSplit  # noqa: E402

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_the_split_counts_a_child_and_a_grandchild_under_their_names():
    code = (f"import subprocess, sys\nsubprocess.run(['sh', '-c', 'exec sleep 0.6'])\n"
            f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.5)!r}])\n{BURN.format(s=0.3)}")
    p = subprocess.Popen([sys.executable, "-c", code])
    split = CpuSplit(p.pid, interval=0.05).start()
    p.wait()
    cpu = split.stop()
    assert set(cpu) == {"python (pytest, workers)", "sleep"}
    # the child's 0.5 s and the root's 0.3 s, less at most one interval of each
    assert 0.6 <= cpu["python (pytest, workers)"] <= 1.2 and cpu["sleep"] < 0.1
    assert len(split.seen) == 3
