"""A scheduler extender on loopback whose failures a test switches on and off.

It speaks the kube-scheduler extender HTTP API (filter and prioritize, JSON
with the Go field names of ``k8s.io/kube-scheduler/extender/v1``) and enforces
a network-slot rule from its own data: a pod that requests the managed
resource (``schedgate.io/network-slot``) fits only on a node with that many
free slots. Faults, switchable at any moment:

    ext.faults.latency = 3.0        # answer after 3 s (past a 2 s httpTimeout)
    ext.faults.status = 503         # answer with an HTTP error
    ext.faults.malformed = True     # answer with bytes that are not JSON
    ext.faults.drop = {"gpu-net-2"} # leave nodes out of the answer without failing them
    ext.down(); ext.up()            # connection refused, then back on the same port
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NETWORK_SLOT = "schedgate.io/network-slot"
MAX_PRIORITY = 10  # extender/v1 MaxExtenderPriority


@dataclass
class Faults:
    latency: float = 0.0
    status: int | None = None
    malformed: bool = False
    drop: set[str] = field(default_factory=set)

    def clear(self) -> None:
        self.latency, self.status, self.malformed, self.drop = 0.0, None, False, set()


@dataclass
class Call:
    verb: str
    pod: str
    nodes: list[str]
    passed: list[str]
    fault: str


class Extender:
    """The extender server; ``slots`` maps node name to free network slots."""

    def __init__(self, slots: dict[str, int] | None = None, resource: str = NETWORK_SLOT,
                 host: str = "127.0.0.1") -> None:
        self.host = host  # where the scheduler reaches it: loopback, or the kind network's gateway
        self.slots: dict[str, int] = dict(slots or {})
        self.resource = resource
        self.faults = Faults()
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def up(self) -> Extender:
        """Start serving (on the same port as before, if it ran before)."""
        if self._server is not None:
            return self
        ext = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                ext._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        class Server(ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server((self.host, self.port), Handler)
        self.port = self._server.server_address[1]
        self._stopping.clear()
        self._thread = threading.Thread(target=self._server.serve_forever, name="schedgate-extender", daemon=True)
        self._thread.start()
        return self

    def down(self) -> None:
        """Stop listening: the scheduler now gets connection refused."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # cut short any injected latency
        server.shutdown()
        server.server_close()
        if self._thread:
            self._thread.join(timeout=10)

    stop = down

    def __enter__(self) -> Extender:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- the protocol ------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        verb = h.path.rstrip("/").rsplit("/", 1)[-1]
        length = int(h.headers.get("Content-Length") or 0)
        try:
            args = json.loads(h.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._reply(h, 400, b'{"Error":"request is not JSON"}')
            return
        pod = args.get("Pod") or {}
        meta = pod.get("metadata") or {}
        pod_name = f"{meta.get('namespace')}/{meta.get('name')}"
        nodes = args.get("NodeNames")
        if nodes is None:
            nodes = [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or []]
        f = self.faults
        fault = ("latency" if f.latency else "") or ("status" if f.status else "") or \
            ("malformed" if f.malformed else "") or ("drop" if f.drop else "")
        if f.latency and self._stopping.wait(f.latency):
            return  # shutting down: the scheduler sees the connection close
        want = self._request(pod)
        passed = [n for n in nodes if self.slots.get(n, 0) >= want]
        with self._lock:
            self.calls.append(Call(verb, pod_name, list(nodes), passed, fault))
        if f.status:
            self._reply(h, f.status, b"injected failure")
            return
        if f.malformed:
            self._reply(h, 200, b'{"NodeNames": [oops')
            return
        if verb == "filter":
            failed = {n: f"node has {self.slots.get(n, 0)} free network slots, pod needs {want}"
                      for n in nodes if n not in passed}
            shown = [n for n in passed if n not in f.drop]
            body: Any = {"NodeNames": shown, "FailedNodes": failed, "FailedAndUnresolvableNodes": {}, "Error": ""}
        elif verb == "prioritize":
            top = max([self.slots.get(n, 0) for n in nodes] or [1]) or 1
            body = [{"Host": n, "Score": MAX_PRIORITY * self.slots.get(n, 0) // top} for n in nodes]
        else:
            self._reply(h, 404, f"unknown verb {verb}".encode())
            return
        self._reply(h, 200, json.dumps(body).encode())

    def _request(self, pod: dict[str, Any]) -> int:
        total = 0
        for c in (pod.get("spec") or {}).get("containers") or []:
            total += int(((c.get("resources") or {}).get("requests") or {}).get(self.resource, 0))
        return total

    @staticmethod
    def _reply(h: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            pass  # the scheduler gave up first (its httpTimeout): exactly the fault under test
