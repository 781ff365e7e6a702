"""A kind scheduler's log as the harness reads it: the run folder's copy of each launch's file on the node,
followed by inode and offset (``schedlog.read_logs``). No Docker needed: the node's files are a dict."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from schedgate.objects.schedlog import read_logs
from schedgate.providers.kind.logcopy import LogCopy
from schedgate.providers.kind.scheduler import PodScheduler
from schedgate.spec.schedconfig import default_scheduler_config


@dataclass
class Node:
    files: dict[str, bytes] = field(default_factory=dict)
    reads: list[int] = field(default_factory=list)  # each read's start

    def read(self, path: str, start: int = 0) -> bytes:
        self.reads.append(start)
        return self.files.get(path, b"")[start:]


def attempt(pod: str, second: int, padding: int = 0) -> bytes:
    return (f'I1207 10:00:{second:02d}.000000       1 schedule_one.go:97] "Attempting to schedule pod" '
            f'pod="ns/{pod}"{" x=" + "y" * padding if padding else ""}\n').encode()


def test_a_new_launchs_log_longer_than_the_last_ones_is_read_from_its_start(tmp_path: Path) -> None:
    """The bug this guards: a conformance file on kind counted 1 and 0 attempts of a pod the saved log showed
    3 times, because the next launch's log was written over the last one's copy in place and read from the last
    one's length on."""
    node = Node()
    s = PodScheduler(name="conformance", config=default_scheduler_config(), effective=None,
                     config_path=Path("x"), image="i", node=node, run_dir=tmp_path)  # type: ignore[arg-type]
    s.launch_number = 1
    node.files[s.log_file] = attempt("first", 1)
    assert len(read_logs([s.log_path])["ns/first"].attempts) == 1
    s.launch_number = 2  # the next test's launch: nothing written yet, the last copy stays
    assert s.log_path is not None and s.log_path.read_bytes() == attempt("first", 1)
    node.files[s.log_file] = attempt("p", 2, padding=200) + attempt("p", 3) + attempt("p", 4)
    pods = read_logs([s.log_path])
    assert len(pods["ns/p"].attempts) == 3
    assert "ns/first" not in pods, "the last launch's lines are not read again"
    node.files[s.log_file] += attempt("p", 5)
    assert len(read_logs([s.log_path])["ns/p"].attempts) == 4
    assert node.reads[-1] == len(node.files[s.log_file]) - len(attempt("p", 5)), "only what it gained is read"


def test_a_copy_appends_what_its_source_gained_and_starts_a_new_file_for_another_source(tmp_path: Path) -> None:
    copy = LogCopy(tmp_path / "s.log")
    logs = {"a": b"one\n"}
    assert copy.update("a", lambda start: logs["a"][start:]).read_bytes() == b"one\n"
    inode = copy.path.stat().st_ino
    logs["a"] += b"two\npart"
    copy.update("a", lambda start: logs["a"][start:])
    assert copy.path.read_bytes() == b"one\ntwo\npart" and copy.path.stat().st_ino == inode
    assert copy.update("b", lambda start: b"") == copy.path and copy.text() == "one\ntwo\npart", \
        "until b writes, a's copy stays"
    copy.update("b", lambda start: b"bee\n"[start:])
    assert copy.text() == "bee\n" and copy.path.stat().st_ino != inode
    assert [p.name for p in tmp_path.iterdir()] == ["s.log"], "nothing staged is left"
