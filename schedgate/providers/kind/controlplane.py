"""kind's control-plane container as schedgate's schedulers see it: files written into it, its pods'
containers and logs through ``crictl`` and its files, each a ``docker exec``."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from dataclasses import dataclass
from typing import Any

from schedgate.errors import ComponentError
from schedgate.providers.kind.host import Host
from schedgate.runtime.commands import run_group


@dataclass
class ControlPlane:
    """kind's control-plane container: its name (the kubelet's node name too) and its address."""

    host: Host
    container: str
    address: str

    def write(self, path: str, text: str) -> None:
        """Write ``path`` in the container, through a hidden file moved into place (the kubelet reads a
        manifest whole, and skips names starting with a dot)."""
        self.write_all([(path, text)])

    def write_all(self, files: list[tuple[str, str]]) -> None:
        """Write each file in the container, in one ``docker exec`` (a tar of hidden files, each then moved
        into place in the order given: a manifest last, once what it mounts is there)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path, text in files:
                data = text.encode()
                folder, _, name = path.rpartition("/")
                info = tarfile.TarInfo(f"{folder.lstrip('/')}/.{name}")
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        moves = " && ".join(f'mv "{p.rpartition("/")[0]}/.{p.rpartition("/")[2]}" "{p}"' for p, _ in files)
        self.host.run("docker", "exec", "-i", self.container, "sh", "-c", f"tar -x -C / && {moves}",
                      stdin=buf.getvalue(), what=f"write {', '.join(p for p, _ in files)} in {self.container}")

    def remove(self, *paths: str) -> None:
        self.host.run("docker", "exec", self.container, "rm", "-rf", *paths, what=f"rm in {self.container}")

    def read(self, path: str, start: int = 0) -> bytes:
        """A file in the container from byte ``start`` on; empty when it is not there."""
        try:
            out = run_group(["docker", "exec", self.container, "tail", "-c", f"+{start + 1}", path], self.host.env,
                            30)
        except subprocess.TimeoutExpired:
            raise ComponentError(f"tail {path} in {self.container}: no answer after 30s") from None
        return out.stdout if out.returncode == 0 else b""

    def containers(self, pod: str) -> list[dict[str, Any]]:
        """The pod's containers on the node, newest first (``crictl ps -a``)."""
        out = self.host.run("docker", "exec", self.container, "crictl", "ps", "-a", "-o", "json", "--label",
                            f"io.kubernetes.pod.name={pod}", check=False, timeout=30, what="crictl ps")
        if out.returncode != 0:
            return []
        items: list[dict[str, Any]] = json.loads(out.stdout or "{}").get("containers") or []
        return sorted(items, key=lambda c: int(c.get("createdAt") or 0), reverse=True)

    def log(self, container_id: str) -> str:
        out = self.host.run("docker", "exec", self.container, "crictl", "logs", container_id, check=False,
                            timeout=30, what="crictl logs")
        return out.stdout + out.stderr
