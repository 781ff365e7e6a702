"""Where the files schedgate ships with are: default cluster definitions, profiles, mutants, the
scenario examples, the Go module its binaries are built from, the kind node image's files, its scripts.

Every path to a shipped file goes through :func:`shipped`, so there is one place that knows where
they live.
"""

from __future__ import annotations

from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent.parent
_WHEEL = Path(__file__).resolve().parent.parent / "_shipped"
# A checkout has clusters/ beside the package; an installed wheel carries the same tree in schedgate/_shipped.
ROOT = _CHECKOUT if (_CHECKOUT / "clusters" / "inference.yaml").is_file() else _WHEEL


def shipped(relative: str | Path) -> Path:
    """A shipped file, by its path relative to schedgate's project folder (``clusters/inference.yaml``)."""
    return ROOT / relative


def resolve_user_path(value: str | Path, base: Path) -> Path:
    """A file a user names: absolute as given; else beside ``base`` if it exists there, else shipped."""
    p = Path(value)
    if p.is_absolute():
        return p
    beside = base / p
    try:
        return beside if beside.exists() or not shipped(p).exists() else shipped(p)
    except (OSError, ValueError):  # a name too long, or holding NUL: reading it says so, in one line
        return beside
