"""Older builds out of the cache: every Go change links a new folder of binaries (1.3 GB for a pin's commands),
and without pruning the cache grows by one on each change until the disk is full (a rehearsal's kind phase ran
out of space so). A folder's last use is the time of its ``.used`` file, touched whenever a run resolves it."""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

USED = ".used"


def mark_used(folder: Path) -> None:
    with contextlib.suppress(OSError):
        (folder / USED).touch()


def last_use(folder: Path) -> float:
    for p in (folder / USED, folder):
        with contextlib.suppress(OSError):
            return p.stat().st_mtime
    return 0.0


def prune_older(root: Path, prefix: str, current: Path, keep: int = 1, idle: float = 3600.0) -> list[Path]:
    """Remove the folders ``root/prefix*`` but ``current`` and the ``keep`` used last, sparing any used in the last
    ``idle`` seconds (a run may still be using it); returns the removed ones."""
    others = sorted((p for p in root.glob(f"{prefix}*") if p.is_dir() and p != current), key=last_use, reverse=True)
    removed = []
    for old in others[keep:]:
        if time.time() - last_use(old) > idle:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed
