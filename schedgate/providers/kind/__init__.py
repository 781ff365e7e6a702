"""The kind provider: real kubelets in Docker, one worker per defined node, nothing pulled."""

from schedgate.providers.kind.backend import KindBackend
from schedgate.providers.kind.provider import KindProvider

__all__ = ["KindBackend", "KindProvider"]
