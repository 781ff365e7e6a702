"""Headless chromium screenshots and a PNG reader, for checking the placement picture as a browser shows it."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: `make browser` (or `make test`) installs Debian's chromium",
                    pytrace=False)
    return exe


def screenshot(page: Path, out: Path, size: tuple[int, int] = (1400, 1000)) -> Path:
    """Render ``page`` in headless chromium and write a PNG of the viewport."""
    profile = out.parent / "chromium-profile"
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
           f"--screenshot={out}", page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and out.is_file(), f"chromium failed ({done.returncode}): {done.stderr[-800:]}"
    shutil.rmtree(profile, ignore_errors=True)
    return out


def pixels(png: Path) -> Counter[str]:
    """How many pixels of each colour (``#rrggbb``) an 8-bit RGB/RGBA, non-interlaced PNG has."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and ctype in (2, 6) and interlace == 0, f"unsupported PNG: depth {depth}, type {ctype}"
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    counts: Counter[str] = Counter()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        counts.update(f"#{line[i]:02x}{line[i + 1]:02x}{line[i + 2]:02x}" for i in range(0, stride, bpp))
        prev = line
    return counts
