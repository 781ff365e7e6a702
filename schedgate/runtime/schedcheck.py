"""A scheduler configuration judged by the scheduler that will run it, before anything starts.

schedgate's own checks of a KubeSchedulerConfiguration are its shape; what kube-scheduler accepts is
kube-scheduler's to say (``podInitialBackoffSeconds: 0``, an unknown plugin, a plugin's arguments out
of range). So ``schedgate check`` runs the pinned kube-scheduler (schedgate's build, with its own
plugins, or the binary given) on the configuration exactly as schedgate would start it, with
``--write-config-to``: it validates the configuration and builds every profile's framework, then writes
the result and exits, before it serves or contacts the API server (its kubeconfig names a server
nobody listens on). A refusal is one line: the file, the version, and the scheduler's own words. A plugin
that reads the API server while its framework is built (one backed by custom resources, e.g. a quota's) fails
there only because nobody listens: the configuration is valid as far as anything can tell without a
cluster, and the verdict says so.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import yaml

from schedgate.errors import DefinitionError
from schedgate.spec.schedconfig import SchedulerConfig

# kube-scheduler's last word when it refuses: E... run.go:72] "command failed" err="..."
_FAILED = re.compile(r'"command failed" err="(.*)"\s*$')
NOWHERE_SERVER = "127.0.0.1:1"
_NOWHERE = {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "none", "cluster": {"server": f"https://{NOWHERE_SERVER}"}}],
            "users": [{"name": "none", "user": {"token": "none"}}],
            "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
            "current-context": "none"}


ACCEPTS = "accepts"
NEEDS_SERVER = "accepts as far as it can without a cluster (a plugin reads the API server as it is built)"


def check_with_scheduler(config: SchedulerConfig, binary: Path, version: str) -> str:
    """Fail in one line naming ``config``'s file if ``binary`` (kube-scheduler ``version``) refuses it; else
    :data:`ACCEPTS`, or :data:`NEEDS_SERVER` where a plugin stopped only at the API server nobody serves. A
    black box's configuration is its own program's business: nothing is run for it ("")."""
    if config.black_box is not None:
        return ""
    with tempfile.TemporaryDirectory(prefix="schedgate-check-") as d:
        kubeconfig = Path(d) / "none.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_NOWHERE))
        path = config.effective(kubeconfig=str(kubeconfig)).write(Path(d) / "config.yaml")
        try:
            out = subprocess.run([str(binary), f"--config={path}", f"--write-config-to={Path(d) / 'out.yaml'}",
                                  "--secure-port=0"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DefinitionError(config.source, "", f"could not run {binary} to check it: {e}") from None
    if out.returncode == 0:
        return ACCEPTS
    lines = (out.stderr + out.stdout).strip().splitlines()
    said = next((m.group(1) for line in reversed(lines) if (m := _FAILED.search(line))), lines[-1] if lines else "")
    said = said.replace('\\"', '"').replace("\\n", "; ")
    if NOWHERE_SERVER in said:
        return NEEDS_SERVER
    raise DefinitionError(config.source, "", f"kube-scheduler {version} refuses it: {said}")
