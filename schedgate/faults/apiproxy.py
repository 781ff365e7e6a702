"""A TCP proxy between a scheduler and the API server that a test slows, stalls or cuts.

The scheduler talks TLS to the API server, end to end through the proxy (its
kubeconfig names the proxy's address and keeps the serving certificate's name
with ``tls-server-name``), so the proxy sees bytes, not requests. What it can
do, switchable at any moment:

    proxy.delay = 0.05          # every chunk read from either side is held 50 ms before it is passed on
    proxy.delay_up = 0.2        # only client -> API server (requests); ``delay_down``: only the answers
    proxy.stall(); proxy.release()   # hold all traffic (nothing is lost) until released
    proxy.drop_connections()    # close every open connection: watches end, the client re-lists and re-watches

"Per-request delay" here is honestly a per-chunk delay: each ``recv`` (at most
64 KiB; in practice one or a few TLS records) waits ``delay`` seconds before
it is forwarded, in order, so a small request or answer is late by ``delay``
in each direction it is delayed in, and a large list answer by a multiple of
it. client-go multiplexes every request and watch of one client over one
HTTP/2 connection, so ``drop_connections`` ends all of the scheduler's
watches (and any request in flight) at once — what a restarting load balancer
or a broken network path does.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

CHUNK = 64 * 1024


@dataclass(eq=False)  # hashed by identity: kept in a set
class _Link:
    """One client connection and its upstream connection."""

    client: socket.socket
    upstream: socket.socket
    closed: bool = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for s in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()


@dataclass
class ApiProxy:
    """Listens on ``host`` (a free port) and forwards each connection to ``upstream``."""

    upstream: tuple[str, int]
    host: str = "127.0.0.1"
    delay_up: float = 0.0
    delay_down: float = 0.0
    port: int = 0
    accepted: int = 0
    dropped: int = 0
    _links: set[_Link] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _flowing: threading.Event = field(default_factory=threading.Event)
    _closing: threading.Event = field(default_factory=threading.Event)
    _listener: socket.socket | None = None
    _thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"ApiProxy({self.host}:{self.port} -> {self.upstream[0]}:{self.upstream[1]})"

    # -- faults ---------------------------------------------------------------
    @property
    def delay(self) -> float:
        return max(self.delay_up, self.delay_down)

    @delay.setter
    def delay(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"delay must be >= 0, got {seconds}")
        self.delay_up = self.delay_down = seconds

    def stall(self) -> None:
        """Hold every byte in both directions (connections stay open) until :meth:`release`."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    @property
    def stalled(self) -> bool:
        return not self._flowing.is_set()

    def drop_connections(self) -> int:
        """Close every open connection on both sides; returns how many were closed."""
        with self._lock:
            links = list(self._links)
            self._links.clear()
        for link in links:
            link.close()
        self.dropped += len(links)
        return len(links)

    def clear(self) -> None:
        """No delay, no stall (open connections are kept)."""
        self.delay = 0.0
        self.release()

    # -- lifecycle --------------------------------------------------------------
    @property
    def address(self) -> str:
        return f"https://{self.host}:{self.port}"

    def start(self) -> ApiProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self._listener = listener
        self.port = int(listener.getsockname()[1])
        self._closing.clear()
        self._flowing.set()
        self._thread = threading.Thread(target=self._accept, name=f"schedgate-apiproxy-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._flowing.set()  # wake stalled pumps so they see the close
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        self.drop_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ApiProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- forwarding ---------------------------------------------------------------
    def _accept(self) -> None:
        assert self._listener is not None
        listener = self._listener
        while not self._closing.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()  # the API server is down: the client sees the connection close
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(client, upstream)
            with self._lock:
                self._links.add(link)
                self.accepted += 1
            for src, dst, up in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(link, src, dst, up), daemon=True,
                                 name=f"schedgate-apiproxy-{'up' if up else 'down'}").start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket, up: bool) -> None:
        try:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                delay = self.delay_up if up else self.delay_down
                if delay and self._closing.wait(delay):
                    break
                while not self._flowing.wait(0.5):
                    if link.closed or self._closing.is_set():
                        return
                if link.closed:
                    return
                dst.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._links.discard(link)
        link.close()
