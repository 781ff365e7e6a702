"""The local provider: etcd, kube-apiserver, kube-controller-manager and schedulers as processes on loopback."""

from schedgate.providers.local.provider import LocalBackend, LocalProvider

__all__ = ["LocalBackend", "LocalProvider"]
