"""The run folder's copy of a log on kind's control plane, brought up to date by what it gained."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class LogCopy:
    """A log of the node (a scheduler launch's file, or a container's log kept by the runtime) copied to
    ``path`` on this machine: what the log gained since the last update is appended.

    The log of another source (a new launch, another container) starts a new file, a new inode: written over
    the last source's text in place, it was followed (``schedlog.read_logs``, by inode and offset) from that
    text's length on, and a test on kind counted one of its scheduler's three attempts."""

    path: Path
    source: str = ""  # what the copy holds the log of
    have: int = 0  # bytes of it copied

    def update(self, source: str, read: Callable[[int], bytes]) -> Path:
        """Bring the copy up to ``source``'s log; ``read(start)`` gives that log from byte ``start`` on. Until
        a new source has written anything, the last one's copy stays."""
        fresh = source != self.source or not self.path.exists()
        new = read(0 if fresh else self.have)
        if not new:
            return self.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            staged = self.path.with_name(f".{self.path.name}.new")
            staged.write_bytes(new)
            os.replace(staged, self.path)
            self.source, self.have = source, len(new)
        else:
            with self.path.open("ab") as f:
                f.write(new)
            self.have += len(new)
        return self.path

    def text(self) -> str:
        return self.path.read_text(errors="replace") if self.path.exists() else ""
