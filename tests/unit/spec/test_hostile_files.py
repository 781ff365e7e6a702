"""Every reader of a file somebody else may have made, fed what a hostile user of a shared machine can leave:
devices that never end, FIFOs (one with a writer that never stops), sockets, folders, links that dangle or
loop, files that claim gigabytes, files one byte over the limit, text that is not UTF-8, names with newlines,
NUL and bidi marks, and the contents of a file that is not ours (/etc/shadow's kind). Each reader answers in
one line, at once, in bounded memory, never quoting what it read."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedgate.cli.mutants import header, junit_passed
from schedgate.errors import SchedgateError
from schedgate.kube.journal import Journal
from schedgate.providers.existing.access import check_kubeconfig
from schedgate.runtime.reap import own_file
from schedgate.scenarios.load import load_scenario
from schedgate.spec.cluster import load_definition
from schedgate.spec.schedconfig import load_scheduler_config
from schedgate.spec.yamlfile import MAX_BYTES

ROOT = Path(__file__).resolve().parents[3]
SECRET = "root:$6$SECRET-HASH-never-quoted$:20228:0:99999:7:::"


def _journal(p: Path) -> object:
    return Journal.load(p)


def _own(p: Path) -> object:
    if own_file(p.parent, p.name) is None:  # a run folder's bookkeeping: unreadable is None, never raised
        raise SchedgateError("not read")
    return None


READERS: dict[str, Callable[[Path], object]] = {
    "scenario": load_scenario, "cluster definition": load_definition, "scheduler configuration":
    load_scheduler_config, "kubeconfig": lambda p: check_kubeconfig(p, None), "journal": _journal,
    "run folder file": _own, "mutant": lambda p: header(p, "mutant", ""),
    "baseline JUnit report": lambda p: junit_passed(p, []),
}
NAMES = ["plain.yaml", "line\nbreak.yaml", "bidi\u202egnp.yaml", "tab\tand\x1bescape.yaml", "é" * 45 + ".yaml"]


class Planted:
    """Hostile things in a folder, each made on first use; a FIFO's endless writer stopped at the end."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.n = 0

    def make(self, kind: str, name: str) -> Path:
        self.n += 1
        folder = self.where / f"case-{self.n}"
        folder.mkdir()
        p = folder / name
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "fifo-with-endless-writer":
            os.mkfifo(p)
            self.threads.append(threading.Thread(target=self._write_forever, args=(p,), daemon=True))
            self.threads[-1].start()
        elif kind in ("dev-zero", "dev-urandom"):
            p.symlink_to("/dev/" + kind.removeprefix("dev-"))
        elif kind == "socket":
            s = socket.socket(socket.AF_UNIX)
            here = os.getcwd()
            os.chdir(folder)  # a socket's address is at most 107 bytes: bound by its name, here
            try:
                s.bind(name)
            finally:
                os.chdir(here)
            self.sockets.append(s)
        elif kind == "folder":
            p.mkdir()
        elif kind == "dangling-link":
            p.symlink_to(folder / "nothing-here")
        elif kind == "link-loop":
            p.symlink_to(p)
        elif kind == "claims-8-GiB":
            with open(p, "wb") as f:
                f.truncate(8 << 30)
        elif kind == "one-byte-over":
            p.write_bytes(b"#" * (MAX_BYTES + 1))
        elif kind == "not-utf8":
            p.write_bytes(b"kind: Scenario\nname: \xff\xfe" + SECRET.encode())
        elif kind == "not-ours":
            p.write_text("\n".join([SECRET, "daemon:*:20228:0:99999:7:::", "secret: " + SECRET]) + "\n")
        elif kind == "nul":
            p.write_bytes(b"kind: Scenario\n\0" + SECRET.encode())
        else:
            raise AssertionError(kind)
        return p

    def _write_forever(self, p: Path) -> None:
        try:
            fd = os.open(p, os.O_WRONLY)  # blocks until a reader opens it: a reader that never does leaves it
        except OSError:
            return
        try:
            while not self.stop.is_set():
                os.write(fd, b"a" * 65536)
        except OSError:
            pass
        finally:
            os.close(fd)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:  # a writer still waiting for a reader: open the FIFO once to release it
            if t.is_alive():
                for p in self.where.rglob("*"):
                    if p.is_fifo():
                        with contextlib.suppress(OSError):
                            os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
            t.join(timeout=5)
        for s in self.sockets:
            s.close()


KINDS = ["fifo", "fifo-with-endless-writer", "dev-zero", "dev-urandom", "socket", "folder", "dangling-link",
         "link-loop", "claims-8-GiB", "one-byte-over", "not-utf8", "not-ours", "nul"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planted]:
    p = Planted(tmp_path_factory.mktemp("hostile"))
    yield p
    p.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reader=st.sampled_from(sorted(READERS)), kind=st.sampled_from(KINDS), name=st.sampled_from(NAMES))
def test_every_reader_refuses_a_hostile_file_in_one_line_at_once_in_bounded_memory(planted, reader, kind, name):
    path = planted.make(kind, name)
    tracemalloc.start()
    started = time.monotonic()
    said = ""
    try:
        READERS[reader](path)
    except (SchedgateError, ValueError) as e:
        said = str(e)
    else:  # raw text readers (a mutant's header lines, a run folder's file) take any small UTF-8 file
        assert reader in ("mutant", "run folder file") and kind in ("not-ours", "nul"), \
            f"{reader} read {kind} {path!r} without a word"
    finally:
        took = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert took < 2.0, f"{reader} took {took:.1f}s on {kind}"
    assert peak < 32 << 20, f"{reader} held {peak >> 20} MiB reading {kind}"
    assert "\n" not in said and said.isprintable(), repr(said)
    assert "SECRET" not in said and "daemon:" not in said, f"{reader} quoted the file: {said}"


@pytest.mark.parametrize("field, kind", [("scheduler", "dev-zero"), ("cluster", "fifo-with-endless-writer"),
                                         ("cluster", "not-ours")])
def test_check_answers_a_scenario_naming_a_hostile_file_in_one_line_in_bounded_memory(tmp_path, planted, field,
                                                                                       kind):
    """As a user runs it: ``schedgate check`` in its own process, its peak memory the kernel's high-water mark of
    that process's own memory (``VmHWM``; a child's ``ru_maxrss`` would count this pytest worker's, from the fork)."""
    target = planted.make(kind, "plain.yaml")
    other = ("cluster", f"{ROOT}/clusters/inference.yaml") if field == "scheduler" else ("steps", "[]")
    scenario = tmp_path / "hostile.scenario.yaml"
    scenario.write_text("apiVersion: schedgate.io/v1alpha1\nkind: Scenario\nname: hostile\n"
                        f"{field}: {target}\n{other[0]}: {other[1]}\n"
                        + ("steps: [{createPods: {name: p}}]\n" if field == "scheduler" else ""))
    peak = tmp_path / "peak"
    measured = ("import atexit, re, sys\n"
                f"atexit.register(lambda: open({str(peak)!r}, 'w').write(re.search(r'VmHWM:\\s+(\\d+)', "
                "open('/proc/self/status').read()).group(1)))\n"
                "from schedgate.cli import main\nsys.exit(main())\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", measured, "check", "--no-scheduler", str(scenario)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stdout + done.stderr
    assert str(target) in done.stderr and "SECRET" not in done.stderr and "daemon:" not in done.stderr, done.stderr
    assert int(peak.read_text()) < 200 * 1024, f"{peak.read_text()} KiB"
    assert took < 15, f"{took:.1f}s"  # the process's own start is most of it (docs/benchmarks.md)
