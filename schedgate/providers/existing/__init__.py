"""The existing provider: a cluster somebody else runs, reached through a kubeconfig."""

from schedgate.providers.existing.provider import EDITABLE_LABEL, ExistingProvider

__all__ = ["EDITABLE_LABEL", "ExistingProvider"]
