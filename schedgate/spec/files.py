"""Reading a file somebody else may have made: a regular file, a hard byte limit, nothing that blocks.

    raw = read_bounded(path, "scenario", MAX_BYTES)            # bytes, at most MAX_BYTES of them
    text = read_text(run / "owner", "run folder's owner file", 64, follow=False)

Every file schedgate reads that it did not write in this process goes through here: scenario files,
cluster definitions, scheduler configurations, kubeconfigs, mutant files, and a run folder's own
bookkeeping (owner, pids, journal). What it guarantees:

* **only a regular file is read.** A device (``/dev/zero``), a FIFO, a socket or a folder is one line
  naming what it is, before a byte is read. The file is opened with ``O_NONBLOCK`` (a FIFO with no
  writer would otherwise block the open) and checked again on the open descriptor, so swapping the
  file between the check and the read changes nothing.
* **at most ``limit`` bytes are ever held.** The read stops at ``limit + 1`` bytes, whatever size the
  file claims (a file may grow while it is read, and ``/proc`` files claim 0).
* **a deadline.** A read that takes longer than ``timeout`` seconds in all (a stalled network file
  system) is given up with one line.
* **no symlink where none belongs** (``follow=False``): a run folder's files are the run's own, never
  a link planted to make a reaper read or write elsewhere.

An error names the file and what is wrong with it, never a line of its contents.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from schedgate.errors import DefinitionError, SchedgateError

CHUNK = 64 * 1024
TIMEOUT = 10.0


def _what_it_is(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bounded(path: str | Path, what: str, limit: int, *, follow: bool = True,
                 timeout: float = TIMEOUT) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; anything else raises DefinitionError
    naming ``path`` and saying why in one line (``what`` says which kind of file was expected)."""
    p = Path(path)
    try:
        st = os.stat(p, follow_symlinks=follow)
    except FileNotFoundError:
        raise DefinitionError(p, "", f"no such {what} file") from None
    except ValueError:  # a name holding NUL, which a YAML string may ("\0")
        raise DefinitionError(p, "", "cannot read: a file name cannot hold a NUL character") from None
    except OSError as e:
        raise DefinitionError(p, "", f"cannot read: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise DefinitionError(p, "", f"is a symbolic link, not a {what} file")
    if not stat.S_ISREG(st.st_mode):
        raise DefinitionError(p, "", f"is {_what_it_is(st.st_mode)}, not a {what} file")
    if st.st_size > limit:
        raise DefinitionError(p, "", f"{st.st_size} bytes; a {what} file may have at most {limit}")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(p, flags)
    except OSError as e:
        raise DefinitionError(p, "", f"cannot read: {e.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped since the stat above
            raise DefinitionError(p, "", f"is {_what_it_is(mode)}, not a {what} file")
        deadline = time.monotonic() + timeout
        parts: list[bytes] = []
        held = 0
        while held <= limit:
            try:
                chunk = os.read(fd, min(CHUNK, limit + 1 - held))
            except OSError as e:
                raise DefinitionError(p, "", f"cannot read: {e.strerror}") from None
            if not chunk:
                break
            parts.append(chunk)
            held += len(chunk)
            if time.monotonic() > deadline:
                raise DefinitionError(p, "", f"reading it took more than {timeout:.0f}s; given up")
        if held > limit:  # it grew while it was read
            raise DefinitionError(p, "", f"more than {limit} bytes; a {what} file may have at most that")
        return b"".join(parts)
    finally:
        os.close(fd)


def read_text(path: str | Path, what: str, limit: int, *, follow: bool = True, timeout: float = TIMEOUT) -> str:
    """:func:`read_bounded`, decoded as UTF-8; a file that is not is one line saying at which byte."""
    raw = read_bounded(path, what, limit, follow=follow, timeout=timeout)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DefinitionError(path, "", f"not UTF-8 text (byte {e.start})") from None


def check_executable(path: str | Path, option: str) -> Path:
    """``path`` as an option names a program to run: a regular file this user may execute, else one line."""
    p = Path(path)
    try:
        st = os.stat(p)
    except (OSError, ValueError):
        raise SchedgateError(f"{option} {p}: no such file") from None
    if not stat.S_ISREG(st.st_mode):
        raise SchedgateError(f"{option} {p}: is {_what_it_is(st.st_mode)}, not a program")
    if not os.access(p, os.X_OK) or not st.st_mode & 0o111:
        raise SchedgateError(f"{option} {p}: not executable (chmod +x it)")
    try:
        with open(p, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise SchedgateError(f"{option} {p}: cannot read: {e.strerror}") from None
    if magic != b"\x7fELF" and not magic.startswith(b"#!"):
        raise SchedgateError(f"{option} {p}: not a program (neither an ELF binary nor a script with #!)")
    return p
