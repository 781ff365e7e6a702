"""A scenario file whose control plane would be the session's runs on the session's cluster with its own
nodes, and the test after it gets the session's nodes back, seen by every scheduler before it begins:
nothing of the file is seen by the next test, and no extra cluster is started for it."""

from __future__ import annotations

import re

import pytest
from support import pytest_child

RACKS = "e2e/scenarios/spread-racks-hard.scenario.yaml"  # clusters/racks.yaml, the session's configuration

AFTER = '''
def test_the_session_nodes_are_back(cluster):
    listed = {n.metadata.name for n in cluster.core.list_node().items}
    defined = {n.name for n in cluster.definition.nodes()}
    print("NODES", sorted(listed), "DEFINITION", cluster.definition.name)
    assert cluster.definition.name == "inference", cluster.definition.name
    assert defined <= listed, sorted(defined - listed)
    assert not {n for n in listed if n.startswith("rack-")}, sorted(listed)
    assert not cluster.schedulers["gpu-packing-scheduler"].is_down()
    # every scheduler has seen the nodes put back before the test begins: a scheduler the test starts (one
    # behind a stalled API proxy) is not waited for by a cache barrier on the first pod
    assert not cluster.nodes.unseen
'''


@pytest.mark.live
def test_a_file_of_the_sessions_plane_runs_on_its_cluster_and_the_next_test_sees_the_sessions_nodes(tmp_path):
    after = tmp_path / "test_after.py"
    after.write_text(AFTER)
    r = pytest_child(tmp_path, RACKS, str(after), "--provider", "local", "-s",
                     "--log-cli-level=INFO")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 passed" in r.stdout, r.stdout[-2000:]
    started = re.findall(r"cluster '([^']+)' in ", r.stdout + r.stderr)
    assert started == ["inference"], f"one cluster, the session's, not {started}"
    assert "step 2: nodes used              rack-" in r.stdout, "the file ran on its own nodes"
