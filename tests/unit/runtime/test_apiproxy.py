"""The API proxy forwards bytes, delays them, holds them while stalled, and cuts connections."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from schedgate.faults.apiproxy import ApiProxy


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """A TCP server that sends back what it reads, one thread per connection."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield srv.getsockname()[:2]
    srv.close()


@pytest.fixture
def proxy(echo: tuple[str, int]) -> Iterator[ApiProxy]:
    with ApiProxy(upstream=echo) as p:
        yield p


def roundtrip(p: ApiProxy, payload: bytes = b"ping", timeout: float = 5.0) -> tuple[bytes, float]:
    with socket.create_connection(("127.0.0.1", p.port), timeout=timeout) as c:
        t0 = time.monotonic()
        c.sendall(payload)
        return c.recv(4096), time.monotonic() - t0


def test_bytes_pass_through_unchanged(proxy: ApiProxy) -> None:
    assert roundtrip(proxy)[0] == b"ping"
    assert proxy.accepted == 1


def test_a_delay_is_added_in_each_direction(proxy: ApiProxy) -> None:
    proxy.delay = 0.2
    data, took = roundtrip(proxy)
    assert data == b"ping"
    assert took >= 0.4  # 0.2 s up, 0.2 s down
    proxy.delay_up, proxy.delay_down = 0.0, 0.2
    assert 0.2 <= roundtrip(proxy)[1] < 0.4


def test_a_stall_holds_traffic_until_released_and_loses_nothing(proxy: ApiProxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as c:
        assert roundtrip(proxy)[0] == b"ping"
        proxy.stall()
        c.sendall(b"held")
        c.settimeout(0.3)
        with pytest.raises(TimeoutError):
            c.recv(4096)
        proxy.release()
        c.settimeout(5)
        assert c.recv(4096) == b"held"


def test_dropping_connections_closes_them_and_new_ones_still_work(proxy: ApiProxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as c:
        c.sendall(b"x")
        assert c.recv(16) == b"x"
        assert proxy.drop_connections() == 1
        assert c.recv(16) == b""  # the client sees the connection end
    assert roundtrip(proxy)[0] == b"ping"
    assert proxy.dropped == 1


def test_a_negative_delay_is_refused(proxy: ApiProxy) -> None:
    with pytest.raises(ValueError, match="delay must be >= 0"):
        proxy.delay = -1
