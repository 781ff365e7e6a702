"""The Kubernetes pins side by side (go/go.mod, go/pins/), selecting one, and the matrix table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from schedgate.cli.matrix import Run, finish, read_junit, table
from schedgate.errors import SchedgateError
from schedgate.runtime.pins import PIN_ENV, pins, select
from schedgate.runtime.toolchain import _source_key, go_module_dir
from schedgate.scenarios.load import load_scenario
from schedgate.spec.features import FEATURES, minor_of, skip_reason

GO = go_module_dir()


def test_one_pin_per_supported_minor_oldest_first() -> None:
    found = pins(GO)
    assert list(found) == ["1.35", "1.36", "1.37"]
    assert [p.default for p in found.values()] == [False, False, True]
    assert all(p.version.startswith(f"v{m}.") for m, p in found.items())
    assert found["1.35"].go_flags() == ["-modfile=pins/kubernetes-1.35.mod", "-tags=kubernetes1.35"]
    assert found["1.37"].go_flags() == []
    assert all(p.sumfile.is_file() for p in found.values())


def test_each_pin_names_the_etcd_its_release_was_tested_with() -> None:
    """pin-kubernetes.sh copies the etcd server version from k8s.io/kubernetes' own go.mod."""
    etcd = {m: p.etcd_version for m, p in pins(GO).items()}
    assert etcd["1.37"].startswith("3.7.") and etcd["1.36"].startswith("3.6.") and etcd["1.35"].startswith("3.6.")


@pytest.mark.parametrize("wanted", ["1.36", "v1.36", "1.36.3", "v1.36.3"])
def test_a_minor_or_its_exact_version_selects_the_pin(wanted: str) -> None:
    assert select(GO, wanted).version == pins(GO)["1.36"].version


@pytest.mark.parametrize("wanted", ["1.34", "v1.34.2", "1.38"])
def test_a_version_of_no_pinned_minor_is_refused_naming_the_pins(wanted: str) -> None:
    with pytest.raises(SchedgateError, match=rf"--kubernetes-version {wanted}: schedgate builds the minors it pins "
                                             r"\(v1\.35\.\d+, v1\.36\.\d+, v1\.37\.\d+"):
        select(GO, wanted)


def test_another_patch_of_a_pinned_minor_is_a_pin_made_on_demand_in_the_cache(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    monkeypatch.setenv("SCHEDGATE_CACHE", str(tmp_path))
    older, newest = select(GO, "v1.36.0"), select(GO, "1.37.0")
    assert (older.version, older.on_demand, older.modfile) == ("v1.36.0", True, tmp_path / "pins/kubernetes-1.36.0.mod")
    assert older.go_flags() == [f"-modfile={tmp_path}/pins/kubernetes-1.36.0.mod", "-tags=kubernetes1.36"]
    assert newest.go_flags() == [f"-modfile={tmp_path}/pins/kubernetes-1.37.0.mod"]  # go.mod's minor: no tag
    with pytest.raises(SchedgateError, match="not a release version like v1.36"):
        select(GO, "1.36.0-rc.1")


def test_the_environment_selects_when_no_version_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIN_ENV, "1.35")
    assert select(GO).minor == "1.35"
    monkeypatch.delenv(PIN_ENV)
    assert select(GO).default


def test_each_pin_builds_into_its_own_cache_folder() -> None:
    """The cache key covers the pin's modfile and flags: switching pins never reuses another's binaries."""
    keys = {_source_key(GO, "go", p) for p in pins(GO).values()}
    assert len(keys) == 3


def test_tools_pins_lists_every_pin() -> None:
    out = subprocess.run([sys.executable, "-m", "schedgate", "tools", "pins"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert [line.split()[0] for line in out] == [p.version for p in pins(GO).values()]
    assert out[0].endswith("-tags kubernetes1.35") and out[-1].endswith("(default)")


def test_the_matrix_table_has_a_column_per_version_and_says_why(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    junit.write_text("""<testsuites><testsuite>
      <testcase classname="e2e.scenarios.a" name="a"/>
      <testcase classname="e2e.scenarios.b" name="b"><skipped message="needs 1.36: DRA health"/></testcase>
      <testcase classname="e2e.scenarios.c" name="c"><failure message="AssertionError: on n1">tb</failure></testcase>
      <testcase classname="e2e.test_d" name="d"><skipped type="pytest.xfail" message="a known bug"/></testcase>
    </testsuite></testsuites>""")
    old, new = pins(GO)["1.35"], pins(GO)["1.37"]
    runs = [Run(old, 1, 10.0, read_junit(junit)), Run(new, 0, 9.0, {t: ("passed", "") for t in read_junit(junit)})]
    lines = table(runs)
    assert lines[0].split() == ["scenario", old.version, new.version]
    assert lines[1].split() == ["e2e.scenarios.a::a", "pass", "pass"]
    assert lines[2].split() == ["e2e.scenarios.b::b", "skip", "pass"]
    assert lines[3].split() == ["e2e.scenarios.c::c", "FAIL", "pass"]
    assert lines[4].split() == ["e2e.test_d::d", "xfail", "pass"]
    assert f"  {old.version} e2e.scenarios.b::b: skip: needs 1.36: DRA health" in lines
    assert f"  {old.version} e2e.scenarios.c::c: FAIL: AssertionError: on n1" in lines
    assert lines[-2].startswith(f"Kubernetes {old.version} (etcd {old.etcd_version}): "
                                "1 passed, 1 failed, 1 skipped, 1 xfailed")


def test_the_matrix_refuses_a_version_no_pin_has() -> None:
    proc = subprocess.run([sys.executable, "-m", "schedgate", "matrix", "--versions", "1.35,1.30"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("schedgate: --kubernetes-version 1.30: schedgate builds the minors it pins")


def test_a_feature_older_minors_have_off_skips_there_saying_why() -> None:
    needs = {"DRAExtendedResource": "requires[0]", "metrics": "steps[2].expect.metric"}
    assert skip_reason(needs, "v1.36.3", "f.yaml") is None and skip_reason(needs, "v1.37.2", "f.yaml") is None
    assert skip_reason(needs, "v1.35.4", "f.yaml") == (
        "schedgate: f.yaml needs DRAExtendedResource (requires[0]): it lets DRA devices serve an extended "
        "resource such as nvidia.com/gpu (a DeviceClass's extendedResourceName); Kubernetes v1.35.4, this "
        "cluster's, has it off by default (on from 1.36)")
    assert skip_reason({"metrics": "x"}, "v1.35.4", "f.yaml") is None  # a capability is not a version's


def test_every_feature_a_shipped_file_requires_is_known_and_newer_than_the_oldest_pin() -> None:
    oldest = minor_of(next(iter(pins(GO).values())).version)
    assert oldest is not None
    assert all(f.since > oldest for f in FEATURES.values())  # else the entry no longer skips anything
    shipped = {n for p in (GO.parent / "e2e/scenarios").glob("*.scenario.yaml")
               for n in load_scenario(p).needs if n in FEATURES}
    assert shipped == {"DRAConsumableCapacity", "DRAExtendedResource", "DRAPartitionableDevices",
                       "DRAWorkloadResourceClaims", "GenericWorkload", "TopologyAwareWorkloadScheduling"}


@pytest.mark.live
def test_a_ctrl_c_during_the_matrix_reaches_the_running_suite_and_waits_for_it() -> None:
    # The child stands in for pytest: on SIGINT it cleans up and exits 7; killed, it would be -9.
    ready_r, ready_w = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", f"import os, signal, sys\n"
                               f"signal.signal(signal.SIGINT, lambda *_: sys.exit(7))\n"
                               f"os.write({ready_w}, b'x'); os.close({ready_w})\n"
                               f"while True: signal.pause()\n"],
        stdout=subprocess.PIPE, text=True, pass_fds=(ready_w,))
    os.close(ready_w)

    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        os.read(ready_r, 1)  # its handler is in place
        # This process alone, as `kill -INT` would, but to its main thread: a process-wide signal may land
        # on another thread (an xdist worker has several), and the main thread's blocking read of the
        # child's output then never returns to notice it (a CI rehearsal hung here).
        signal.pthread_kill(main, signal.SIGINT)

    # Python keeps SIGINT ignored when it starts with it ignored (a job a non-interactive shell put in the
    # background does): the Ctrl-C this stands for would never arrive. A terminal's Ctrl-C raises here.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            finish(child)
    finally:
        signal.signal(signal.SIGINT, before)
    os.close(ready_r)
    assert child.returncode == 7
