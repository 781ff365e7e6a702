"""What dead runs left behind, removed: their processes, kind clusters, journaled edits and folders.

A shared machine's temporary folder is everybody's: a folder named ``schedgate-run-*`` may be another
user's, or planted. Only this user's own run folders are read or removed (:func:`foreign`: a real folder,
owned by this user, mode 0700), and nothing a folder holds is run or trusted beyond names: no ``PATH``,
no program, no kubeconfig comes from it. A kind cluster it names is removed with this process's own
``docker``; a journal of edits to somebody's cluster is undone only against the kubeconfig this process
was given (``--kubeconfig``). Its bookkeeping files are read bounded, and never through a link
(:func:`schedgate.spec.files.read_text`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from schedgate.errors import SchedgateError
from schedgate.kube.journal import replay
from schedgate.runtime.procs import RUN_PREFIX, cmdline_of, start_time
from schedgate.spec.files import read_text

log = logging.getLogger("schedgate")


def foreign(run: Path) -> str | None:
    """Why ``run`` is not a run folder of this user's to read or reap (``None`` when it is one): a run folder
    is a real folder (no symbolic link), owned by this process's user, open to nobody else (0700, as
    ``mkdtemp`` makes it). Anything else in a shared temporary folder may have been planted by another user."""
    try:
        st = os.lstat(run)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "not a folder"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o077:
        return f"mode {stat.S_IMODE(st.st_mode):04o}, open to other users (a run folder is 0700)"
    return None


_named: set[Path] = set()


def _name_once(run: Path, why: str) -> None:
    if run not in _named:
        _named.add(run)
        log.warning("%s: %s; left alone", run, why)


def run_dirs(tmp: Path | None = None) -> list[Path]:
    """This user's schedgate run folders on this machine, oldest first. A folder of that name that is not one
    (another user's, a link, one open to others) is named once and left alone."""
    root = tmp or Path(tempfile.gettempdir())
    found = []
    for p in root.glob(f"{RUN_PREFIX}*"):
        why = foreign(p)
        if why is None:
            found.append(p)
        else:
            _name_once(p, why)
    return sorted(found, key=lambda p: p.lstat().st_mtime)


def own_file(run: Path, name: str, limit: int = 64 * 1024) -> str | None:
    """The text of a run folder's bookkeeping file: a regular file (no link) of at most ``limit`` bytes, or
    ``None``."""
    try:
        return read_text(run / name, f"run folder's {name}", limit, follow=False, timeout=2.0)
    except SchedgateError:
        return None


def owner(run: Path) -> tuple[int, str] | None:
    """(pid, start time) of the process that made ``run``, as its ``owner`` file says; ``None`` if unreadable."""
    try:
        pid_s, start = (own_file(run, "owner", 256) or "").split()
        return int(pid_s), start
    except ValueError:
        return None


def owner_alive(run: Path) -> bool:
    """The process that made ``run`` still runs (the same process: its pid and its start time)."""
    who = owner(run)
    return who is not None and who[0] > 0 and start_time(who[0]) == who[1]


def reap_orphans(tmp: Path | None = None, kubeconfig: Path | None = None) -> list[str]:
    """Remove what runs whose owner is gone left behind; returns what was reaped. Only this user's run folders
    (:func:`foreign`) are read. ``kubeconfig``: this process's own cluster (the existing provider's), whose
    journaled edits a dead run left may be undone (:func:`remove_run`)."""
    reaped: list[str] = []
    for run in run_dirs(tmp):
        if owner(run) is None:
            # A folder whose owner never wrote its file is reaped once it is old.
            try:
                if time.time() - run.lstat().st_mtime < 60:
                    continue
            except OSError:
                continue
        elif owner_alive(run):
            continue
        if (run / "keep").exists():
            continue  # kept on purpose (--keep-cluster); `schedgate down DIR` removes it
        reaped += remove_run(run, kubeconfig)
    return reaped


def run_pids(run: Path) -> list[tuple[int, str]]:
    """(pid, component name) of every process a run started, as its ``pids`` file lists them."""
    out = []
    for line in (own_file(run, "pids", 1024 * 1024) or "").splitlines():
        pid, _, name = line.partition(" ")
        if pid.isdigit():
            out.append((int(pid), name.strip()))
    return out


def _is_our_child(pid: int, run: Path) -> bool:
    """``pid`` is a process of this user's whose command line points into ``run``: never a reused pid."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.geteuid():
            return False
    except OSError:
        return False
    return str(run) in cmdline_of(pid)


def remove_run(run: Path, kubeconfig: Path | None = None) -> list[str]:
    """Kill a run's processes (only those still pointing into it), remove its kind cluster and delete its
    folder. Nothing of the folder is run or trusted beyond names: its kind cluster is removed with this
    process's own ``docker``, and a journal of edits to a cluster (an ``existing`` run's) is undone only
    against ``kubeconfig``, this process's own, when the journal names that file; otherwise the folder is
    kept and named, with the command that undoes it."""
    why = foreign(run)
    if why is not None:
        raise SchedgateError(f"{run}: {why}; schedgate reads and removes only its own run folders")
    removed: list[str] = []
    for pid, name in run_pids(run):
        if _is_our_child(pid, run):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            removed.append(f"process {pid} ({name})")
    removed += _remove_kind_cluster(run)
    done, pending = replay(run, kubeconfig)
    removed += done
    if pending:
        log.warning("%s: %s; the folder is kept until then", run, pending)
        return removed
    shutil.rmtree(run, ignore_errors=True)
    removed.append(f"folder {run}")
    return removed


KIND_CLUSTER = re.compile(r"schedgate-[a-z0-9][a-z0-9-]{0,62}")


def _remove_kind_cluster(run: Path) -> list[str]:
    """A run of the kind provider names its cluster in ``kind-cluster``. Its node containers (what ``kind delete
    cluster`` removes) are removed by their kind label with this process's own ``docker``: nothing the folder
    says is run, and only a name schedgate gives a cluster is acted on."""
    name = (own_file(run, "kind-cluster", 4096) or "").partition("\n")[0].strip()
    if not KIND_CLUSTER.fullmatch(name):
        return []
    docker = shutil.which("docker")
    if docker is None:
        return []
    try:
        got = subprocess.run([docker, "ps", "-aq", "--filter", f"label=io.x-k8s.kind.cluster={name}"],
                             capture_output=True, text=True, timeout=60)
        left = got.stdout.split()
        if got.returncode != 0 or not left:
            return []
        subprocess.run([docker, "rm", "-f", "-v", *left], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [f"kind cluster {name}"]
